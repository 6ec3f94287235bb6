"""MIME: a parsed message's headers, charsets and parts, decoded without ever failing.

Each message's bytes are parsed by `BytesParser(policy=email.policy.default)` (`PARSER`).
Headers are decoded here from their raw values, never through the header classes (which
raise on some malformed input): addresses are split before encoded words are decoded, so an
encoded comma stays inside its display name; adjacent encoded words are joined before
decoding (a character split across them survives); raw 8-bit headers are read as UTF-8, else
in the body's charset, else Windows-1252. Bodies are decoded in their declared charset
(GB2312 as GB18030, Shift_JIS as CP932, ISO-8859-1 as Windows-1252, …), then UTF-8, and never
fail.

The text is the inline text/plain parts; when there are none (or they are empty), the
text/html ones converted to text (html_text.py). Every other leaf part (attachments, non-text
parts such as a base64 text/calendar, forwarded messages) becomes an attachment with the
external id "part-<n>" (n counts leaf parts). Attachments larger than `_INLINE_LIMIT` are not
kept in memory: their opener reads the message again from the file when they are stored. A
large message arrives as its skeleton (large.py): a part whose body is a marker is read from
the file when stored, and a text part of that kind gives the text its first part.
"""

from __future__ import annotations

import binascii
import codecs
import functools
import hashlib
import io
import logging
import mimetypes
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email import errors as email_errors
from email import policy
from email.message import Message
from email.parser import BytesParser
from email.utils import getaddresses, parsedate_to_datetime
from pathlib import Path
from typing import Any, BinaryIO

from archive.connectors.mail.html_text import html_to_text
from archive.connectors.mail.large import PartRange, marker_of
from archive.connectors.mail.mbox import Raw, reread
from archive.store.domain import AttachmentRecord

log = logging.getLogger(__name__)

_INLINE_LIMIT = 256 << 10  # attachments up to this size keep their bytes; bigger ones re-read
_TEXT_HEAD = 256 << 10  # what a text part left in the file gives the text (it is attached)
_MAX_DEPTH = 40  # nested multiparts deeper than this are not followed
ID_LIMIT = 255

PARSER = BytesParser(policy=policy.default)

# -- charsets and headers -------------------------------------------------------------------

_CHARSET_CODECS: dict[str, tuple[str, ...]] = {
    "us-ascii": (),  # declared ASCII with 8-bit bytes: guess like an undeclared charset
    "ascii": (),
    "ansi_x3.4-1968": (),
    "unknown-8bit": (),
    "x-unknown": (),
    "x-user-defined": (),
    "default": (),
    "iso-8859-1": ("cp1252", "latin-1"),
    "iso8859-1": ("cp1252", "latin-1"),
    "latin1": ("cp1252", "latin-1"),
    "latin-1": ("cp1252", "latin-1"),
    "gb2312": ("gb18030",),
    "gbk": ("gb18030",),
    "x-gbk": ("gb18030",),
    "cp936": ("gb18030",),
    "euc-cn": ("gb18030",),
    "x-euc-cn": ("gb18030",),
    "cn-gb": ("gb18030",),
    "big5": ("big5hkscs", "cp950"),
    "shift_jis": ("cp932",),
    "shift-jis": ("cp932",),
    "x-sjis": ("cp932",),
    "sjis": ("cp932",),
    "windows-31j": ("cp932",),
    "iso-2022-jp": ("iso2022_jp", "iso2022_jp_ext", "iso2022_jp_2"),
    "ks_c_5601-1987": ("cp949",),
    "ks_c_5601": ("cp949",),
    "euc-kr": ("cp949",),
    "iso-8859-8-i": ("iso-8859-8",),
    "windows-874": ("cp874",),
    "unicode-1-1-utf-7": ("utf-7",),
}


def _codecs_for(charset: str | None) -> tuple[str, ...]:
    if not charset:
        return ()
    name = charset.strip().strip("\"'").lower().split("*", 1)[0]
    if name in _CHARSET_CODECS:
        return _CHARSET_CODECS[name]
    try:
        return (codecs.lookup(name).name,)
    except (LookupError, ValueError):
        return ()


def _decode_bytes(data: bytes, charset: str | None, hint: str | None = None) -> str:
    """`data` as text: the declared charset, else UTF-8, else the hint; never fails."""
    declared = _codecs_for(charset)
    for name in (*declared, "utf-8", *_codecs_for(hint)):
        try:
            return data.decode(name)
        except (UnicodeError, LookupError):
            continue
    if declared:
        try:
            return data.decode(declared[0], "replace")
        except LookupError:
            pass
    try:
        return data.decode("cp1252")
    except UnicodeError:
        return data.decode("latin-1")


_ENCODED_WORD = re.compile(r"=\?([^?\s]+)\?([QqBb])\?([^?]*)\?=")
_SURROGATE = re.compile("[\udc80-\udcff]")


def _word_bytes(encoding: str, payload: str) -> bytes | None:
    if not payload.isascii():
        return None
    try:
        if encoding in "Qq":
            return binascii.a2b_qp(payload.encode("ascii"), header=True)
        cleaned = "".join(payload.split())
        return binascii.a2b_base64((cleaned + "=" * (-len(cleaned) % 4)).encode("ascii"))
    except (binascii.Error, ValueError):
        return None


def _decode_words(text: str, hint: str | None = None) -> str:
    """Decode RFC 2047 encoded words. Adjacent words of one charset are joined first, so a
    character split across two words survives; whitespace between encoded words goes."""
    out: list[str] = []
    run = bytearray()
    run_charset = ""
    after_word = False
    position = 0

    def flush() -> None:
        nonlocal run_charset
        if run:
            out.append(_decode_bytes(bytes(run), run_charset, hint))
            run.clear()
        run_charset = ""

    for match in _ENCODED_WORD.finditer(text):
        between = text[position : match.start()]
        if not (after_word and not between.strip()):
            flush()
            out.append(between)
        position = match.end()
        charset = match.group(1).split("*", 1)[0].lower()
        data = _word_bytes(match.group(2), match.group(3))
        if data is None:
            flush()
            out.append(match.group(0))
            after_word = False
            continue
        if run and charset != run_charset:
            flush()
        run_charset = charset
        run.extend(data)
        after_word = True
    flush()
    out.append(text[position:])
    return "".join(out)


def _unfold(value: str, hint: str | None = None) -> str:
    """A raw header value on one line, its raw 8-bit bytes decoded."""
    value = re.sub(r"\r?\n(?=[ \t])", "", value).replace("\r", "").replace("\n", " ")
    if _SURROGATE.search(value):
        data = value.encode("utf-8", "surrogateescape")
        try:
            value = data.decode("utf-8")
        except UnicodeDecodeError:
            value = _decode_bytes(data, hint)
    return value


_ADDRESS = re.compile(r"[^\s<>,;\"']+@[^\s<>,;\"']+")


def clean(text: str) -> str:
    return " ".join(text.replace("\x00", "").split())


class Headers:
    """A message's headers from their raw values; nothing here raises on malformed input."""

    def __init__(self, message: Message, hint: str | None) -> None:
        self.hint = hint
        self._raw: dict[str, list[str]] = {}
        for name, value in message.raw_items():
            self._raw.setdefault(str(name).strip().lower(), []).append(str(value))

    def has(self, name: str) -> bool:
        return name in self._raw

    def names(self) -> set[str]:
        return set(self._raw)

    def raw(self, name: str) -> str:
        """The first value, unfolded, encoded words left as they are."""
        values = self._raw.get(name)
        return _unfold(values[0], self.hint) if values else ""

    def text(self, name: str) -> str:
        value = self.raw(name)
        return clean(_decode_words(value, self.hint)) if value else ""

    def texts(self, name: str) -> list[str]:
        return [
            clean(_decode_words(_unfold(value, self.hint), self.hint))
            for value in self._raw.get(name, [])
        ]

    def addresses(self, *names: str) -> list[tuple[str, str]]:
        """(display name, address) pairs. Split before decoding: an encoded comma stays."""
        values = [_unfold(v, self.hint) for name in names for v in self._raw.get(name, [])]
        if not values:
            return []
        try:
            pairs = getaddresses(values)
        except Exception:  # a malformed header must not stop the import
            pairs = [("", token) for token in _ADDRESS.findall(" ".join(values))]
        found: list[tuple[str, str]] = []
        for name, address in pairs:
            address = "".join(address.split()).strip("<>")
            if address:
                found.append((clean(_decode_words(name, self.hint)).strip("\"' "), address))
        with_domain = [pair for pair in found if "@" in pair[1]]
        return with_domain or found


def message_id(value: str) -> str | None:
    """The id inside a Message-ID value (unfolded, brackets and whitespace dropped)."""
    for inner in re.findall(r"<([^<>]*)>", value):
        cleaned = "".join(inner.split())
        if cleaned:
            return _bounded_id(cleaned)
    token = value.strip()
    if token and not any(ch.isspace() for ch in token) and "@" in token:
        return _bounded_id(token.strip("<>"))
    return None


def id_list(value: str) -> list[str]:
    ids = ["".join(inner.split()) for inner in re.findall(r"<([^<>]*)>", value)]
    if not any(ids):
        ids = [token.strip("<>,;") for token in value.split() if "@" in token]
    seen: dict[str, None] = {}
    for found in ids:
        if found:
            seen.setdefault(_bounded_id(found), None)
    return list(seen)


def _bounded_id(value: str) -> str:
    if len(value) <= ID_LIMIT:
        return value
    return "long-id-sha256-" + hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()


def parse_date(value: str) -> datetime | None:
    value = value.strip()
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        return None


# -- parts ----------------------------------------------------------------------------------


def _leaves(message: Message) -> list[Message]:
    """The message's leaf parts in order; a message/* part is one leaf. (A loop, not a
    recursive closure: that would be a reference cycle keeping every parsed message alive
    until the garbage collector happens to run.)"""
    found: list[Message] = []
    pending: list[tuple[Message, int]] = [(message, 0)]
    while pending:
        part, depth = pending.pop()
        payload = part.get_payload()
        if (
            isinstance(payload, list)
            and depth < _MAX_DEPTH
            and _content_type(part).split("/")[0] != "message"
        ):
            children = [child for child in payload if isinstance(child, Message)]
            pending.extend((child, depth + 1) for child in reversed(children))
            continue
        found.append(part)
    return found


def _content_type(part: Message) -> str:
    try:
        return str(part.get_content_type()).lower()
    except Exception:  # a malformed Content-Type reads as octet-stream
        return "application/octet-stream"


def _charset(part: Message) -> str | None:
    try:
        charset = part.get_content_charset()
    except Exception:
        return None
    return str(charset) if charset else None


def _disposition(part: Message) -> str:
    try:
        return str(part.get_content_disposition() or "")
    except Exception:
        return ""


def _file_name(part: Message, hint: str | None) -> str:
    try:
        name = part.get_filename()
    except Exception:
        name = None
    return clean(_decode_words(str(name), hint)) if name else ""


def _payload(part: Message) -> bytes:
    """A leaf part's decoded bytes (a message/* part serialised)."""
    inner = part.get_payload()
    if isinstance(inner, list):
        out = []
        for sub in inner:
            if isinstance(sub, Message):
                try:
                    out.append(sub.as_bytes())
                except Exception as exc:  # keep what serialises
                    log.info("a message part does not serialise: %r", exc)
        return b"".join(out)
    try:
        data = part.get_payload(decode=True)
    except Exception:  # undecodable transfer encoding: the raw text
        data = None
    if isinstance(data, bytes):
        return data
    if isinstance(inner, str):
        return inner.encode("utf-8", "surrogateescape")
    return b""


_UNSAFE_NAME = re.compile(r'[\x00-\x1f\x7f<>:"|?*]')


def _safe_file_name(name: str, index: int, mime_type: str) -> str:
    """A display name only: the last path component, no control or reserved characters."""
    name = unicodedata.normalize("NFC", name).replace("\\", "/").rsplit("/", 1)[-1]
    name = _UNSAFE_NAME.sub("_", name).strip().strip(".").strip()
    if len(name) > 200:
        stem, dot, ext = name.rpartition(".")
        name = (stem[: 200 - len(ext) - 1] + dot + ext) if dot and len(ext) <= 16 else name[:200]
    if not name:
        guessed = ".eml" if mime_type == "message/rfc822" else mimetypes.guess_extension(mime_type)
        name = f"part-{index}{guessed or '.bin'}"
    return name


@dataclass(frozen=True)
class _PartOpener:
    """Opens a large attachment by reading its message again from the export."""

    path: Path
    offset: int
    mbox: bool
    index: int
    size: int

    def __call__(self) -> BinaryIO:
        message = PARSER.parsebytes(reread(self.path, self.offset, self.mbox))
        leaves = _leaves(message)
        data = _payload(leaves[self.index]) if self.index < len(leaves) else b""
        if len(data) != self.size:
            raise OSError(f"{self.path.name}: the message at byte {self.offset} changed")
        return io.BytesIO(data)


@dataclass
class Body:
    """A message's text and its attachments."""

    text: str
    attachments: tuple[AttachmentRecord, ...]


def message_body(raw: Raw, message: Message, hint: str | None) -> Body:
    """The text of `message` (its plain parts, else its HTML ones) and every other leaf part
    as an attachment; `raw` says where to read a large attachment again."""
    plain: list[str] = []
    html: list[str] = []
    attachments: list[AttachmentRecord] = []
    for index, part in enumerate(_leaves(message)):
        mime_type = _content_type(part)
        name = _file_name(part, hint)
        disposition = _disposition(part)
        kept = raw.parts.get(marker_of(part) or "") if raw.parts else None
        if kept is not None:
            if disposition != "attachment" and not name and mime_type == "text/plain":
                plain.append(_decode_bytes(kept.head(_TEXT_HEAD), _charset(part)))
            elif disposition != "attachment" and not name and mime_type == "text/html":
                html.append(html_to_text(_decode_bytes(kept.head(_TEXT_HEAD), _charset(part))))
            attachments.append(_left_in_file(part, kept, index, name, disposition, hint))
            continue
        data = _payload(part)
        main = mime_type.split("/")[0]
        if disposition != "attachment" and not name:
            if mime_type == "text/plain" or main == "multipart":
                plain.append(_decode_bytes(data, _charset(part)))
                continue
            if mime_type == "text/html":
                html.append(html_to_text(_decode_bytes(data, _charset(part))))
                continue
        if not name and mime_type == "message/rfc822":
            inner = PARSER.parsebytes(data, headersonly=True)
            name = Headers(inner, hint).text("subject")[:150] + ".eml"
        metadata: dict[str, Any] = {"disposition": disposition or "inline"}
        content_id = Headers(part, hint).text("content-id")
        if content_id:
            metadata["content_id"] = content_id.strip("<>")
        safe = _safe_file_name(name, index, mime_type)
        if name and safe != name:
            metadata["file_name_given"] = name[:500]
        opener: Callable[[], BinaryIO]
        if len(data) <= _INLINE_LIMIT or raw.in_memory:
            opener = functools.partial(io.BytesIO, data)
        else:
            opener = _PartOpener(raw.path, raw.offset, raw.mbox, index, len(data))
        attachments.append(
            AttachmentRecord(
                external_id=f"part-{index}",
                file_name=safe,
                mime_type=mime_type,
                size=len(data),
                metadata=metadata,
                content=opener,
            )
        )
    texts = [t for t in (_normalise_newlines(t) for t in plain) if t.strip()]
    if not texts:
        texts = [t for t in html if t.strip()]
    return Body(text="\n\n".join(texts).rstrip(), attachments=tuple(attachments))


def _left_in_file(
    part: Message, kept: PartRange, index: int, name: str, disposition: str, hint: str | None
) -> AttachmentRecord:
    """A part of a large message, its bytes read from the file when stored."""
    mime_type = _content_type(part)
    metadata: dict[str, Any] = {"disposition": disposition or "inline", "read_from_file": True}
    content_id = Headers(part, hint).text("content-id")
    if content_id:
        metadata["content_id"] = content_id.strip("<>")
    safe = _safe_file_name(name, index, mime_type)
    if name and safe != name:
        metadata["file_name_given"] = name[:500]
    return AttachmentRecord(
        external_id=f"part-{index}",
        file_name=safe,
        mime_type=mime_type,
        metadata=metadata,
        content=kept,
    )


def _normalise_newlines(text: str) -> str:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def truncated(message: Message) -> bool:
    """Whether the message is cut short: a part without its closing boundary, or broken base64."""
    cut = (
        email_errors.CloseBoundaryNotFoundDefect,
        email_errors.InvalidBase64PaddingDefect,
        email_errors.InvalidBase64LengthDefect,
    )
    return any(isinstance(d, cut) for part in message.walk() for d in part.defects)


def charset_hint(message: Message) -> str | None:
    """The first charset a part declares: how to read raw 8-bit headers."""
    for part in message.walk():
        charset = _charset(part)
        if charset:
            return charset
    return None
