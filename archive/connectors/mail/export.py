"""Mail: an mbox file, a Maildir folder, a single .eml message, or a folder of .eml files.

Reading
- An mbox is streamed. A splitter reads the binary file line by line and cuts it at "From "
  lines that (1) follow a blank line or start the file (after an optional UTF-8 BOM),
  (2) look like a separator: "From - …" (Thunderbird), "From 1844…@xxx …" (Gmail Takeout,
  with or without a date) or "From <sender> <a date with a month, a time and a year>"
  (classic), and (3) are followed by a header line. Unescaped "From " lines in bodies
  therefore stay in their message. mboxrd escapes (">From ", ">>From ") lose one ">".
  Only one message is held in memory at a time; attachments larger than `_INLINE_LIMIT` are
  not kept either: their opener reads the message again from the file when they are stored.
- Maildir: the messages in cur/ and new/ of the folder and of its Maildir++ subfolders
  (tmp/ holds deliveries in progress and is left alone). A folder of .eml files: every file at
  its top level. Any single file is an mbox when it starts with a separator, else one message.
- Each message's bytes are parsed by `BytesParser(policy=email.policy.default)`. Headers are
  decoded here from their raw values, never through the header classes (which raise on some
  malformed input): addresses are split before encoded words are decoded, so an encoded comma
  stays inside its display name; adjacent encoded words are joined before decoding (a
  character split across them survives); raw 8-bit headers are read as UTF-8, else in the
  body's charset, else Windows-1252. Bodies are decoded in their declared charset (GB2312 as
  GB18030, Shift_JIS as CP932, ISO-8859-1 as Windows-1252, …), then UTF-8, and never fail.
- Text: the inline text/plain parts; when there are none (or they are empty), the text/html
  ones converted to text (tags dropped, script/style skipped; nothing is executed or fetched).
  Every other leaf part (attachments, non-text parts such as a base64 text/calendar, forwarded
  messages) becomes an attachment with the external id "part-<n>" (n counts leaf parts).

Identity of messages and threads
- A message's external id is its Message-ID without the angle brackets (a folded header is
  unfolded). Without a usable Message-ID it is "synthetic-" + SHA-256 of its Date, From and
  Subject header values and the first 4 KiB of its raw body, so it is the same in every import.
- A message's chat is its thread, a "thread" chat whose external id is the thread's root:
  the first References entry, else the In-Reply-To, else the message's own id. The parent
  (`reply_to_external_id`) is the In-Reply-To, else the last References entry; a message never
  replies to itself. Both depend on the message alone, so the same thread lands in the same
  chat whatever the order or the export; the sink links replies whose parent comes later.
  The chat's title is the subject without reply/forward prefixes (Re:, Fwd:, AW:, R:, I:, …).

Owner
- `--account NAME` names the account; when it is an address it is also the owner's address.
  Otherwise the owner's address is read from the first `_OWNER_SAMPLE` messages: the
  Delivered-To/X-Original-To address found in at least half of them, else the address
  taking part (From, To or Cc) in the most messages, at least half of them (ties go to the
  one seen more often as a recipient). The account's external id is that address, else
  "mail-export". Messages From the owner's address are "out".

Bad input
- Per message (the import goes on, the reason is counted in `stream.skipped`): no usable date
  (Date header, else the mbox From-line date, else the newest Received date), no mail headers
  at all, larger than `_MAX_MESSAGE`, or the last message of a file cut short (a multipart
  without its closing boundary, or broken base64). A single .eml file cut short fails the
  import with a FormatError naming the file and the byte. Read errors are FormatErrors
  naming the file and the byte offset.
"""

from __future__ import annotations

import binascii
import codecs
import functools
import hashlib
import io
import json
import logging
import mimetypes
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from email import errors as email_errors
from email import policy
from email.message import Message
from email.parser import BytesParser
from email.utils import getaddresses, parsedate_to_datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

from archive.connectors.base import ExportStream, FormatError, ImportItem, ReadOptions, read_head
from archive.store.domain import (
    AccountRecord,
    AttachmentRecord,
    ChatRecord,
    IdentityRecord,
    MessageRecord,
)

log = logging.getLogger(__name__)

PROVIDER = "mail"
_BOM = b"\xef\xbb\xbf"
_LINE_CHUNK = 1 << 20  # a line longer than this is read in pieces
_MAX_MESSAGE = 256 << 20  # a bigger message is skipped, not held in memory
_INLINE_LIMIT = 256 << 10  # attachments up to this size keep their bytes; bigger ones re-read
_OWNER_SAMPLE = 200  # messages read ahead to find the mailbox owner
_DETECT_FILES = 50  # files of a plain folder checked by `detect`
_HEAD = 64 << 10
_SYNTHETIC_BODY = 4096
_MAX_DEPTH = 40  # nested multiparts deeper than this are not followed
_ID_LIMIT = 255

SKIP_NO_DATE = "no usable date"
SKIP_NOT_MAIL = "not a mail message (no mail headers)"
SKIP_TOO_LARGE = "message larger than 256 MiB"
SKIP_TRUNCATED = "truncated message at the end of a file"
SKIP_UNREADABLE = "unreadable message"
SKIP_UNREADABLE_FILE = "message file could not be read"

_PARSER = BytesParser(policy=policy.default)

# -- lines and separators -------------------------------------------------------------------

_HEADER_LINE = re.compile(rb"^[\x21-\x39\x3b-\x7e]+[ \t]*:")
_ESCAPED_FROM = re.compile(rb"^>+From ")
_MONTH = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.I)
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b")
_YEAR = re.compile(r"\b(?:19|2\d)\d{2}\b")
_TAKEOUT = re.compile(r"^\d+@xxx(?:\s|$)")
_MAIL_FIELDS = frozenset(
    b"from to cc date subject message-id received return-path delivered-to mime-version "
    b"in-reply-to references content-type sender reply-to x-mailer".split()
)
_KEY_FIELDS = frozenset({b"from", b"date", b"message-id", b"received"})


def _is_separator(line: bytes) -> bool:
    """Whether an mbox line looks like a message separator (the blank line before it and the
    header line after it are checked by the caller)."""
    text = line.decode("latin-1").rstrip("\r\n")
    if not text.startswith("From "):
        return False
    rest = text[5:].strip()
    if rest == "-" or rest.startswith("- "):
        return True
    if _TAKEOUT.match(rest):
        return True
    sender, _, tail = rest.partition(" ")
    return bool(
        sender and tail and _MONTH.search(tail) and _CLOCK.search(tail) and _YEAR.search(tail)
    )


def _head_lines(head: bytes) -> list[bytes]:
    lines = head.removeprefix(_BOM).splitlines()
    if len(head) >= _HEAD and lines:
        lines.pop()  # possibly cut in the middle
    return lines


def _starts_as_mbox(head: bytes) -> bool:
    lines = _head_lines(head)
    first = 0
    while first < len(lines) and not lines[first].strip():
        first += 1
    return (
        first + 1 < len(lines)
        and _is_separator(lines[first])
        and bool(_HEADER_LINE.match(lines[first + 1]))
    )


def _looks_like_message(head: bytes) -> bool:
    """Whether `head` starts with an RFC 5322 header block of a mail message."""
    names: set[bytes] = set()
    for number, line in enumerate(_head_lines(head)):
        if not line.strip():
            break
        if line[:1] in (b" ", b"\t"):
            if number == 0:
                return False
            continue
        if b"\x00" in line:
            return False
        match = _HEADER_LINE.match(line)
        if match is None:
            return False
        names.add(match.group(0).rstrip(b": \t").lower())
    return bool(names & _KEY_FIELDS) and len(names & _MAIL_FIELDS) >= 2


def _looks_like_mail_file(path: Path) -> bool:
    head = read_head(path, _HEAD)
    return _starts_as_mbox(head) or _looks_like_message(head)


# -- raw messages ---------------------------------------------------------------------------


@dataclass
class _Raw:
    """One message's bytes and where they are."""

    path: Path
    index: int  # 1-based number of the message in its file
    offset: int  # byte offset of the message (its From line, in an mbox) in its file
    data: bytes
    envelope: str = ""  # the mbox "From " line
    mbox: bool = False
    last: bool = False  # the last message of its file
    oversized: bool = False
    in_memory: bool = False  # from a server, not a file: attachments keep their bytes

    @property
    def position(self) -> str:
        return f"message {self.index} at byte {self.offset}"


class _Lines:
    """The lines of a binary file with their offsets, one line of look-ahead."""

    def __init__(self, handle: BinaryIO, path: Path, offset: int) -> None:
        self._handle = handle
        self._path = path
        self.offset = offset
        self._at_start = True
        self._pending: tuple[int, bytes, bool] | None = None

    def next(self) -> tuple[int, bytes, bool] | None:
        """(offset, line, whether it starts a line) or None at the end."""
        if self._pending is not None:
            item, self._pending = self._pending, None
            return item
        try:
            line = self._handle.readline(_LINE_CHUNK)
        except OSError as exc:
            raise FormatError(self._path, f"byte {self.offset}", f"read failed: {exc}") from exc
        if not line:
            return None
        item = (self.offset, line, self._at_start)
        self.offset += len(line)
        self._at_start = line.endswith(b"\n")
        return item

    def peek(self) -> tuple[int, bytes, bool] | None:
        if self._pending is None:
            self._pending = self.next()
        return self._pending


def _mbox_messages(
    path: Path, start: int = 0, first_index: int = 1, limit: int | None = None
) -> Iterator[_Raw]:
    """The messages of an mbox, read line by line from byte `start`."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise FormatError(path, f"byte {start}", f"cannot be read: {exc}") from exc
    with handle:
        handle.seek(start)
        lines = _Lines(handle, path, start)
        chunks: list[bytes] | None = None
        size = 0
        begin = start
        envelope = ""
        index = first_index - 1
        produced = 0
        previous_blank = True
        while (item := lines.next()) is not None:
            offset, line, line_start = item
            if offset == 0:
                line = line.removeprefix(_BOM)
            if line_start and previous_blank and line.startswith(b"From ") and _is_separator(line):
                following = lines.peek()
                if following is not None and _HEADER_LINE.match(following[1]):
                    if chunks is not None:
                        yield _mbox_raw(path, index, begin, chunks, size, envelope, last=False)
                        produced += 1
                        if limit is not None and produced >= limit:
                            return
                    chunks, size, begin = [], 0, offset
                    envelope = line.decode("latin-1").rstrip("\r\n")
                    index += 1
                    previous_blank = False
                    continue
            blank = line_start and line in (b"\n", b"\r\n")
            if chunks is None:
                if line.strip():
                    raise FormatError(
                        path, f"byte {offset}", 'not an mbox: no "From " separator line here'
                    )
                previous_blank = True
                continue
            if line_start and _ESCAPED_FROM.match(line):
                line = line[1:]
            size += len(line)
            if size <= _MAX_MESSAGE:
                chunks.append(line)
            previous_blank = blank
        if chunks is not None:
            yield _mbox_raw(path, index, begin, chunks, size, envelope, last=True)


def _mbox_raw(
    path: Path, index: int, begin: int, chunks: list[bytes], size: int, envelope: str, last: bool
) -> _Raw:
    if size > _MAX_MESSAGE:
        return _Raw(path, index, begin, b"", envelope, mbox=True, last=last, oversized=True)
    data = b"".join(chunks)
    # The blank line before the next separator belongs to the mbox, not to the message.
    if data.endswith(b"\r\n\r\n"):
        data = data[:-2]
    elif data.endswith(b"\n\n"):
        data = data[:-1]
    return _Raw(path, index, begin, data, envelope, mbox=True, last=last)


def _file_messages(path: Path) -> Iterator[_Raw]:
    """The messages of one file: an mbox, or a single message. OSError when unreadable."""
    if _starts_as_mbox(read_head(path, _HEAD)):
        yield from _mbox_messages(path)
        return
    if path.stat().st_size > _MAX_MESSAGE:
        yield _Raw(path, 1, 0, b"", last=True, oversized=True)
        return
    yield _Raw(path, 1, 0, path.read_bytes().removeprefix(_BOM), last=True)


def _reread(path: Path, offset: int, mbox: bool) -> bytes:
    """The bytes of the message read earlier at `offset`, for a large attachment."""
    if not mbox:
        return path.read_bytes().removeprefix(_BOM)
    try:
        found = next(_mbox_messages(path, start=offset, limit=1), None)
    except FormatError as exc:
        raise OSError(str(exc)) from exc
    if found is None or found.oversized:
        raise OSError(f"{path.name}: no message at byte {offset} any more")
    return found.data


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


def _clean(text: str) -> str:
    return " ".join(text.replace("\x00", "").split())


class _Headers:
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
        return _clean(_decode_words(value, self.hint)) if value else ""

    def texts(self, name: str) -> list[str]:
        return [
            _clean(_decode_words(_unfold(value, self.hint), self.hint))
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
                found.append((_clean(_decode_words(name, self.hint)).strip("\"' "), address))
        with_domain = [pair for pair in found if "@" in pair[1]]
        return with_domain or found


def _message_id(value: str) -> str | None:
    """The id inside a Message-ID value (unfolded, brackets and whitespace dropped)."""
    for inner in re.findall(r"<([^<>]*)>", value):
        cleaned = "".join(inner.split())
        if cleaned:
            return _bounded_id(cleaned)
    token = value.strip()
    if token and not any(ch.isspace() for ch in token) and "@" in token:
        return _bounded_id(token.strip("<>"))
    return None


def _id_list(value: str) -> list[str]:
    ids = ["".join(inner.split()) for inner in re.findall(r"<([^<>]*)>", value)]
    if not any(ids):
        ids = [token.strip("<>,;") for token in value.split() if "@" in token]
    seen: dict[str, None] = {}
    for found in ids:
        if found:
            seen.setdefault(_bounded_id(found), None)
    return list(seen)


def _bounded_id(value: str) -> str:
    if len(value) <= _ID_LIMIT:
        return value
    return "long-id-sha256-" + hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()


def _parse_date(value: str) -> datetime | None:
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


def _envelope_date(envelope: str) -> datetime | None:
    rest = envelope[5:].strip()
    tail = rest[1:] if rest.startswith("-") else rest.partition(" ")[2]
    return _parse_date(tail) if tail.strip() else None


_REPLY_PREFIX = re.compile(
    r"^\s*(?:(?:re|fwd?|aw|wg|sv|vs|tr|rif|antw|odp|ynt|enc|res|r|i)\s*(?:\[\d+\]|\(\d+\))?"
    r"\s*[:\uff1a]|(?:回复|回覆|答复|答覆|转发|轉寄|转寄|返信|転送)\s*[:\uff1a])\s*",
    re.IGNORECASE,
)


def _thread_title(subject: str) -> str:
    title = subject.strip()
    while True:
        shorter = _REPLY_PREFIX.sub("", title, count=1)
        if shorter == title:
            break
        title = shorter
    return _clean(title)[:500]


# -- bodies -----------------------------------------------------------------------------------


_BLOCK_TAGS = (
    "address article aside blockquote br dd div dl dt figcaption figure footer form h1 h2 h3 h4 "
    "h5 h6 header hr li main nav ol p pre section table tr ul"
)


class _HtmlText(HTMLParser):
    """Readable text of an HTML body. Parses only: nothing is run or fetched."""

    _SKIP = frozenset({"script", "style", "title", "noscript", "template", "xml", "svg"})
    _BLOCK = frozenset(_BLOCK_TAGS.split())

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._parts: list[str] = []
        self._skip = 0
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skip += 1
        elif tag in self._BLOCK:
            self._parts.append("\n")
            if tag == "pre":
                self._pre += 1
        elif tag in ("td", "th"):
            self._parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in self._BLOCK:
            self._parts.append("\n")
            if tag == "pre":
                self._pre = max(0, self._pre - 1)

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        self._parts.append(data if self._pre else re.sub(r"\s+", " ", data))

    def text(self) -> str:
        return _tidy_lines("".join(self._parts))


def _tidy_lines(text: str) -> str:
    lines = [line.strip() for line in text.replace("\xa0", " ").split("\n")]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def _html_to_text(html: str) -> str:
    parser = _HtmlText()
    try:
        parser.feed(html)
        parser.close()
        return parser.text()
    except Exception:  # a malformed page: fall back to dropping tags
        stripped = re.sub(r"(?is)<(script|style)\b.*?</\1\s*>", " ", html)
        stripped = re.sub(r"(?i)<br\s*/?>|</p\s*>|</div\s*>", "\n", stripped)
        return _tidy_lines(re.sub(r"<[^>]*>", " ", stripped))


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
    return _clean(_decode_words(str(name), hint)) if name else ""


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
        message = _PARSER.parsebytes(_reread(self.path, self.offset, self.mbox))
        leaves = _leaves(message)
        data = _payload(leaves[self.index]) if self.index < len(leaves) else b""
        if len(data) != self.size:
            raise OSError(f"{self.path.name}: the message at byte {self.offset} changed")
        return io.BytesIO(data)


@dataclass
class _Body:
    text: str
    attachments: tuple[AttachmentRecord, ...]


def _body(raw: _Raw, message: Message, hint: str | None) -> _Body:
    plain: list[str] = []
    html: list[str] = []
    attachments: list[AttachmentRecord] = []
    for index, part in enumerate(_leaves(message)):
        mime_type = _content_type(part)
        name = _file_name(part, hint)
        disposition = _disposition(part)
        data = _payload(part)
        main = mime_type.split("/")[0]
        if disposition != "attachment" and not name:
            if mime_type == "text/plain" or main == "multipart":
                plain.append(_decode_bytes(data, _charset(part)))
                continue
            if mime_type == "text/html":
                html.append(_html_to_text(_decode_bytes(data, _charset(part))))
                continue
        if not name and mime_type == "message/rfc822":
            inner = _PARSER.parsebytes(data, headersonly=True)
            name = _Headers(inner, hint).text("subject")[:150] + ".eml"
        metadata: dict[str, Any] = {"disposition": disposition or "inline"}
        content_id = _Headers(part, hint).text("content-id")
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
    return _Body(text="\n\n".join(texts).rstrip(), attachments=tuple(attachments))


def _normalise_newlines(text: str) -> str:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def _truncated(message: Message) -> bool:
    cut = (
        email_errors.CloseBoundaryNotFoundDefect,
        email_errors.InvalidBase64PaddingDefect,
        email_errors.InvalidBase64LengthDefect,
    )
    return any(isinstance(d, cut) for part in message.walk() for d in part.defects)


def _charset_hint(message: Message) -> str | None:
    for part in message.walk():
        charset = _charset(part)
        if charset:
            return charset
    return None


# -- messages -------------------------------------------------------------------------------

_RAW_HEADERS = (
    "from",
    "sender",
    "reply-to",
    "to",
    "cc",
    "bcc",
    "date",
    "subject",
    "message-id",
    "in-reply-to",
    "references",
    "list-id",
    "delivered-to",
    "x-original-to",
    "return-path",
    "content-type",
    "x-gmail-labels",
    "x-gm-thrid",
    "x-mailer",
    "user-agent",
)


def _body_bytes(data: bytes) -> bytes:
    ends = [i for i in (data.find(b"\n\n"), data.find(b"\r\n\r\n")) if i >= 0]
    body = data[min(ends) :] if ends else b""
    return body.replace(b"\r\n", b"\n").strip()[:_SYNTHETIC_BODY]


def _synthetic_id(headers: _Headers, data: bytes) -> str:
    digest = hashlib.sha256()
    for name in ("date", "from", "subject"):
        digest.update(_clean(headers.raw(name)).encode("utf-8", "surrogateescape"))
        digest.update(b"\x00")
    digest.update(_body_bytes(data))
    return "synthetic-" + digest.hexdigest()


def _received_date(headers: _Headers) -> datetime | None:
    for value in headers.texts("received"):
        if ";" in value:
            found = _parse_date(value.rsplit(";", 1)[1])
            if found is not None:
                return found
    return None


def _people(pairs: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"name": name, "email": address} for name, address in pairs]


def _convert(raw: _Raw, owner: str) -> ImportItem | str:
    """An ImportItem, or the reason the message is skipped."""
    if raw.oversized:
        return SKIP_TOO_LARGE
    message = _PARSER.parsebytes(raw.data)
    hint = _charset_hint(message)
    headers = _Headers(message, hint)
    if not headers.names() & {"from", "date", "message-id", "subject", "received", "to"}:
        return SKIP_NOT_MAIL
    body = _body(raw, message, hint)
    if raw.last and _truncated(message):
        return SKIP_TRUNCATED
    sent_at = (
        _parse_date(headers.text("date"))
        or (_envelope_date(raw.envelope) if raw.envelope else None)
        or _received_date(headers)
    )
    if sent_at is None:
        return SKIP_NO_DATE

    own = _message_id(headers.raw("message-id"))
    synthetic = own is None
    if own is None:
        own = _synthetic_id(headers, raw.data)
    in_reply_to = _id_list(headers.raw("in-reply-to"))
    references = _id_list(headers.raw("references"))
    ancestors = [ref for ref in references if ref != own]
    parent = next((ref for ref in in_reply_to if ref != own), "") or (
        ancestors[-1] if ancestors else ""
    )
    root = ancestors[0] if ancestors else (parent or own)

    subject = headers.text("subject")
    senders = headers.addresses("from") or headers.addresses("sender")
    sender_name, sender_address = senders[0] if senders else ("", "")
    recipients = {
        name: headers.addresses(name) for name in ("to", "cc", "bcc") if headers.has(name)
    }
    identities: dict[str, IdentityRecord] = {}
    for name, address in [pair for pairs in recipients.values() for pair in pairs]:
        identities[address.lower()[:_ID_LIMIT]] = IdentityRecord(
            external_id=address.lower()[:_ID_LIMIT], display_name=name, email=address
        )
    sender_id = sender_address.lower()[:_ID_LIMIT] or None
    if sender_id:
        identities[sender_id] = IdentityRecord(
            external_id=sender_id, display_name=sender_name, email=sender_address
        )

    metadata: dict[str, Any] = {
        "subject": subject,
        "from": {"name": sender_name, "email": sender_address},
        **{name: _people(pairs) for name, pairs in recipients.items()},
        "message_id": "" if synthetic else own,
        "in_reply_to": in_reply_to,
        "references": references,
        "list_id": headers.text("list-id"),
    }
    if synthetic:
        metadata["synthetic_id"] = True
    important: dict[str, Any] = {}
    for name in _RAW_HEADERS:
        values = headers.texts(name)
        if values:
            important[name] = values[0] if len(values) == 1 else values
    raw_json = json.dumps(
        {"headers": important, **({"envelope": raw.envelope} if raw.envelope else {})},
        ensure_ascii=False,
        sort_keys=True,
    )
    chat = ChatRecord(
        external_id=root,
        kind="thread",
        title=_thread_title(subject),
        metadata={"root_message_id": root},
    )
    record = MessageRecord(
        chat_external_id=root,
        external_id=own,
        sent_at=sent_at,
        text=body.text,
        sender_external_id=sender_id,
        direction="out" if owner and sender_address.lower() == owner else "in",
        reply_to_external_id=parent,
        raw_json=raw_json,
        metadata=metadata,
        attachments=body.attachments,
    )
    return ImportItem(chat=chat, message=record, identities=tuple(identities.values()))


# -- the owner --------------------------------------------------------------------------------

_DELIVERY_HEADERS = ("delivered-to", "x-original-to", "x-delivered-to", "envelope-to")


def _detect_owner(files: list[Path]) -> tuple[str, str]:
    """(address, display name) of the mailbox owner, ("", "") when it cannot be told."""
    delivered: Counter[str] = Counter()
    taking_part: Counter[str] = Counter()
    receiving: Counter[str] = Counter()
    names: dict[str, str] = {}
    sampled = 0
    for raw in _sample(files):
        headers = _Headers(_PARSER.parsebytes(raw.data, headersonly=True), None)
        if not headers.names() & {"from", "to", "delivered-to", "x-original-to"}:
            continue
        sampled += 1
        delivered.update({a.lower() for _, a in headers.addresses(*_DELIVERY_HEADERS)})
        senders = headers.addresses("from")
        recipients = headers.addresses("to", "cc")
        taking_part.update({a.lower() for _, a in senders + recipients})
        receiving.update({a.lower() for _, a in recipients})
        for name, address in senders + recipients:
            if name:
                names.setdefault(address.lower(), name)
    if not sampled:
        return "", ""
    for counter, tie in ((delivered, delivered), (taking_part, receiving)):
        ranked = sorted(counter, key=lambda address: (-counter[address], -tie[address], address))
        if ranked and counter[ranked[0]] * 2 >= sampled:
            return ranked[0], names.get(ranked[0], "")
    return "", ""


def _sample(files: list[Path]) -> Iterator[_Raw]:
    count = 0
    for path in files:
        try:
            for raw in _file_messages(path):
                if raw.oversized:
                    continue
                yield raw
                count += 1
                if count >= _OWNER_SAMPLE:
                    return
        except (OSError, FormatError):
            continue


# -- sources ----------------------------------------------------------------------------------


def _is_maildir(path: Path) -> bool:
    return (path / "cur").is_dir() and (path / "new").is_dir()


def _maildir_files(root: Path) -> list[Path]:
    """Messages in cur/ and new/ of `root` and of its subfolders that are Maildirs, in a
    stable order (by the unique part of the name, which survives new/ → cur/ moves)."""
    found: list[tuple[str, str, str, Path]] = []
    for folder, subfolders, _files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in ("cur", "new", "tmp"))
        here = Path(folder)
        if not _is_maildir(here):
            continue
        relative = str(here.relative_to(root))
        for box in ("cur", "new"):
            with os.scandir(here / box) as entries:
                for entry in entries:
                    if entry.name.startswith(".") or not entry.is_file(follow_symlinks=False):
                        continue
                    unique = entry.name.split(":", 1)[0]
                    found.append((relative, unique, entry.name, Path(entry.path)))
    return [item[3] for item in sorted(found)]


def _folder_files(root: Path) -> list[Path]:
    return sorted(
        entry
        for entry in root.iterdir()
        if not entry.name.startswith(".") and entry.is_file() and not entry.is_symlink()
    )


class MailReader:
    format: ClassVar[str] = "mail"
    label: ClassVar[str] = "Mail (mbox, Maildir, .eml)"

    def detect(self, path: Path) -> bool:
        if path.is_dir():
            if _is_maildir(path):
                return True
            files = _folder_files(path)[:_DETECT_FILES]
            return bool(files) and all(_looks_like_mail_file(f) for f in files)
        return path.is_file() and _looks_like_mail_file(path)

    def open(self, path: Path, options: ReadOptions) -> ExportStream:
        single = path.is_file()
        if single:
            head = read_head(path, _HEAD)
            mbox = _starts_as_mbox(head)
            if not mbox and not _looks_like_message(head):
                raise FormatError(
                    path, "byte 0", "neither an mbox nor a mail message (no header block)"
                )
            files = [path]
            total = None if mbox else 1
        elif path.is_dir():
            if _is_maildir(path):
                files = _maildir_files(path)
                total = len(files)
            else:
                files = _folder_files(path)
                mboxes = any(_starts_as_mbox(read_head(f, 4096)) for f in files)
                total = None if mboxes else len(files)
        else:
            raise FormatError(path, "byte 0", "no such file or folder")

        owner, owner_name = _detect_owner(files)
        account_name = (options.account_name or "").strip()
        if account_name and "@" in account_name:
            address = account_name.lower()
            owner_name = owner_name if owner == address else ""
            owner = address
        external_id = account_name or owner or "mail-export"
        account = AccountRecord(
            provider=PROVIDER,
            external_id=external_id,
            name=owner or external_id,
            owner=(
                IdentityRecord(external_id=owner, display_name=owner_name, email=owner)
                if owner
                else None
            ),
        )
        stream = ExportStream(format=self.format, account=account, items=iter(()), total=total)
        stream.items = self._items(stream, files, owner, single)
        return stream

    def _items(
        self, stream: ExportStream, files: list[Path], owner: str, single: bool
    ) -> Iterator[ImportItem]:
        for path in files:
            messages = _file_messages(path)
            while True:
                try:
                    raw = next(messages, None)
                except OSError as exc:
                    if single:
                        raise FormatError(path, "byte 0", f"cannot be read: {exc}") from exc
                    log.warning("%s: cannot be read: %s", path, exc)
                    stream.skipped[SKIP_UNREADABLE_FILE] += 1
                    break
                if raw is None:
                    break
                try:
                    outcome = _convert(raw, owner)
                except Exception as exc:  # one odd message must not stop the rest
                    log.warning("%s, %s: unreadable: %r", path.name, raw.position, exc)
                    outcome = SKIP_UNREADABLE
                if isinstance(outcome, ImportItem):
                    yield outcome
                    continue
                if outcome == SKIP_TRUNCATED and single and not raw.mbox:
                    raise FormatError(
                        path,
                        f"byte {len(raw.data)}",
                        "the message is cut short (a part ends without its closing boundary "
                        "or its base64 is broken)",
                    )
                if outcome != SKIP_NO_DATE:
                    log.warning("%s, %s: skipped: %s", path.name, raw.position, outcome)
                stream.skipped[outcome] += 1


READER = MailReader()


def mail_item(data: bytes, *, source: str, number: int, owner: str) -> ImportItem | str:
    """One message's RFC 5322 bytes from elsewhere than a file (an IMAP server): the same
    translation as an import's, or the reason it is skipped. `source` and `number` name
    where it came from in errors."""
    raw = _Raw(
        path=Path(source),
        index=number,
        offset=0,
        data=data,
        oversized=len(data) > _MAX_MESSAGE,
        in_memory=True,
    )
    return _convert(raw, owner.lower())
