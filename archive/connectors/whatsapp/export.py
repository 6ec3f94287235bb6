"""WhatsApp chat export: the text WhatsApp writes with "Export chat", alone (`.txt`), in the
`.zip` that carries it with the media (`_chat.txt` from iOS, `WhatsApp Chat with X.txt`
from Android), or in the folder such a zip was unpacked into.

What the file looks like
    Android  `12/31/21, 9:05 PM - Name: text`, `31.12.21, 21:05 - Name: text`,
             `2021-12-31 21:05 - Name: text`
    iOS      `[12/31/21, 9:05:01 PM] Name: text`, `[31.12.21, 21:05:01] Name: text`,
             `[31-12-21 21:05:01] Name: text`, `[01/20/19 11:25] Name: text`
Dates are D/M/Y or M/D/Y (two- or four-digit years, separated by `/`, `.` or `-`) or Y-M-D;
AM/PM is written `AM`, `am`, `a. m.`, `p.m.`, …, after a space, a narrow or non-breaking
space, nothing, or `_` (a mangled narrow space seen in a real export). Direction marks
(U+200E, U+200F and the other bidi controls) can stand anywhere and are removed; a UTF-8
BOM, CRLF line ends and lines without a timestamp (the rest of a multi-line message) are
read. Not read: layouts whose AM/PM word is not Latin (午後, 오후, م) or that put it before
the time, and two-digit-year-first dates (`21-12-31`, read as 21 December 2031).

Decisions the format forces (the export holds no ids and no time zone)
- Times are local times of the exporting phone, without a zone. They are stored as if
  they were UTC, and every message says so with `metadata["time_zone_unknown"] = True`.
- Day/month order is inferred from the whole file in a first pass over its dates: a first
  field above 12 votes day-first, a second field above 12 votes month-first. When nothing
  votes, the default is month-first when every date uses `/` and the clock is 12-hour (the
  US layout), else day-first (the layout of most other locales); the chat then carries
  `metadata["date_order_guessed"] = True`. Votes both ways (a file pieced together from
  two phones) make each unambiguous date decide for itself and the majority the rest,
  with `metadata["date_order_conflict"] = True`.
- Message ids: `<YYYYmmddTHHMMSS>-<author digest>-<n>`, where n counts the earlier
  messages of the file with the same timestamp and author. Line numbers are never part of
  it, so importing the same file again adds nothing and a later export of the same chat
  that overlaps an earlier one gives the shared messages the same ids. (A later export
  that starts inside a run of same-minute messages of one author shifts the ordinals of
  that run only.)
- The chat id is `title:<chat title>`, the title taken from the chat text's name
  (`WhatsApp Chat with X.txt` → X), else the zip's or folder's name (`WhatsApp Chat - X`
  → X, a trailing download counter ` (1)` dropped), else the name iOS writes before its
  encryption notice, else the bare file name. Re-imports of the same export (and the
  zip and its unpacked `.txt`) land in the same chat.
- A chat is a group when it has more than two authors or group system lines.
- Identities are the author names as written (names are what the exporting phone called
  people); authors that are phone numbers are normalised (spaces, dashes, brackets and
  marks removed) and also fill `phone`. System lines have no sender.
- The owner is unknown unless `--account NAME` names an author of the file: then NAME's
  messages are outbound and NAME is the account's own identity.

Content
- System lines (no `Name:`, or a `Name:` that is really a sentence such as `X changed the
  subject from "a: b"`, or iOS's `<chat name>: \u200e<system text>`) are service messages
  without a sender. Their phrases are recognised in English only (a German system line is
  still a service message, but does not mark the chat a group).
- `<Media omitted>` (any case, a few locales) and iOS's `image omitted` become an
  attachment row without bytes (`metadata["omitted"] = True`) and no text.
- `<attached: NAME>` (iOS) and `NAME (file attached)` (Android) take the bytes from the zip
  member NAME (beside the chat text, or at the zip's root) or from the file NAME beside an
  unpacked `.txt`; names with `..` or an absolute path are refused unread, names not in
  the export are kept as rows marked `file_missing`. Text after the name is the caption.
- `This message was deleted` sets `deleted_at` (to the sent time: the export does not
  say when) and keeps the text; a `<This message was edited>` suffix is removed from the
  text and sets `metadata["edited"] = True`.
- A zip or folder holding several chat texts (and no `_chat.txt`) is refused, naming
  them, rather than one imported silently.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import mimetypes
import re
import unicodedata
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any, BinaryIO, ClassVar, cast

from archive.connectors.base import (
    ZIP_ERRORS,
    ExportStream,
    FormatError,
    ImportItem,
    ReadOptions,
    file_opener,
    read_head,
    safe_member,
    safe_zip_member,
    zip_opener,
)
from archive.store.domain import (
    AccountRecord,
    AttachmentRecord,
    ChatRecord,
    IdentityRecord,
    MessageRecord,
)

PROVIDER = "whatsapp"
DEFAULT_ACCOUNT = "whatsapp-export"
HEAD_BYTES = 4096
MAX_CANDIDATES = 50  # chat-text candidates looked at inside one zip or folder

_MARKS = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff"
_MARK_RE = re.compile(f"[{_MARKS}]")
_M = f"[{_MARKS}]*"  # marks tolerated between the parts of a timestamp

_HEADER = re.compile(
    rf"^{_M}\s*(?P<open>\[)?{_M}\s*"
    r"(?P<a>\d{1,4})(?P<sep>[./-])(?P<b>\d{1,2})(?P=sep)(?P<c>\d{2,4})"
    rf"{_M}(?:,\s*|\s+){_M}"
    r"(?P<hour>\d{1,2})[:.](?P<minute>\d{2})(?:[:.](?P<second>\d{2}))?"
    rf"(?:[\s_]*{_M}(?P<ampm>[aApP]\.?\s?[mM]\.?))?{_M}"
    r"(?(open)\s*\]\s?|\s*[-\u2013](?:\s|$))"
)

_QUOTES = set('"“”«»„')
# Words in the part before a colon that make a line a system line, not "Name: text".
_SYSTEM_IN_AUTHOR = re.compile(
    r"\b(?:changed (?:the|this|their|his|her|your)|created|added|removed|joined using|deleted"
    r"|pinned|turned (?:on|off)|reset this group)\b",
    re.IGNORECASE,
)
# iOS writes system lines as "<chat name>: \u200e<text>"; these phrases tell them apart
# from the other marked lines (attachments, omitted media, deletions).
_SYSTEM_TEXT = re.compile(
    r"end-to-end encrypted|created group|\badded\b|\bremoved\b|\bleft$|joined using"
    r"|changed the subject|changed this group|changed the group|changed their phone number"
    r"|security code|disappearing messages|now an admin|no longer an admin"
    r"|deleted this group|business account",
    re.IGNORECASE,
)
_GROUP_TEXT = re.compile(
    r"\bgroup\b|\badded\b|\bremoved\b|\bleft\b|\bjoined\b|\badmin\b|\bsubject\b",
    re.IGNORECASE,
)
_NOTICE = re.compile(r"end-to-end|Ende-zu-Ende|extremo a extremo|ponta a ponta|bout en bout")

_EDITED = re.compile(r"\s*<This message was edited>\s*$", re.IGNORECASE)
_DELETED = re.compile(
    r"^(?:This message was deleted|You deleted this message|Diese Nachricht wurde gelöscht"
    r"|Du hast diese Nachricht gelöscht|Se eliminó este mensaje|Eliminaste este mensaje)\.?$",
    re.IGNORECASE,
)
_MEDIA_OMITTED = re.compile(
    r"^<(?:media omitted|medien ausgeschlossen|multimedia omitido|mídia oculta|médias omis"
    r"|media weggelaten|media omessi)>$",
    re.IGNORECASE,
)
_IOS_OMITTED = re.compile(
    r"^(?P<before>.*?)\s*(?P<kind>image|video|audio|sticker|GIF|document|Contact card)"
    r" omitted$",
    re.IGNORECASE,
)
_ATTACHED = re.compile(
    r"^<(?:attached|anhang|adjunto|anexo|pièce jointe|allegato):\s*(?P<name>[^<>]+?)\s*>"
    r"\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_FILE_ATTACHED = re.compile(
    r"^(?P<name>\S.*?)\s+\((?:file attached|datei angehängt|archivo adjunto"
    r"|arquivo anexado|fichier joint|file allegato|bestand bijgevoegd)\)\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_PHONE = re.compile(r"^\+?\d[\d\s\-().]{4,}\d$")
_TITLE = re.compile(
    r"^(?:whats\s*app[\s_-]*chat(?:\s+(?:with|mit|met|con|com|avec))?"
    r"|chat\s+(?:de\s+)?whats\s*app\s+con|conversa\s+do\s+whats\s*app\s+com"
    r"|discussion\s+whats\s*app\s+avec)(?:\s*[-\u2013]\s*|\s+)(?P<title>\S.*)$",
    re.IGNORECASE,
)
_DOWNLOAD_COUNTER = re.compile(r"\s*\(\d{1,3}\)$")


def _strip_marks(text: str) -> str:
    return _MARK_RE.sub("", text)


def _clean_name(text: str) -> str:
    return unicodedata.normalize("NFC", " ".join(_strip_marks(text).split()))


def _identity_key(name: str) -> tuple[str, str]:
    """(external id, phone) of an author as written: phone numbers without spaces."""
    if _PHONE.match(name) and sum(ch.isdigit() for ch in name) >= 6:
        phone = re.sub(r"[\s\-().]", "", name)
        return phone, phone
    return name, ""


# ---------------------------------------------------------------------------------------
# One line


@dataclass(frozen=True)
class _Head:
    """A line that starts a message: its timestamp fields, author and first line of text."""

    a: int  # year for Y-M-D dates, else the day or month
    b: int  # month for Y-M-D dates, else the month or day
    c: int  # day for Y-M-D dates, else the year
    iso: bool
    sep: str
    twelve_hour: bool
    hour: int
    minute: int
    second: int
    author: str | None  # None: a system line
    text: str
    marked: bool  # the text began with U+200E (iOS marks attachments and system lines)

    @property
    def service(self) -> bool:
        return self.author is None or (
            self.marked
            and _SYSTEM_TEXT.search(self.text) is not None
            and not _media_line(self.text)
        )


def _media_line(text: str) -> bool:
    """An attachment, omitted-media or deletion line (iOS marks those as it marks system lines)."""
    first = text.strip()
    return bool(
        _ATTACHED.match(first)
        or _FILE_ATTACHED.match(first)
        or _MEDIA_OMITTED.match(first)
        or _IOS_OMITTED.match(first.strip("<>"))
        or _DELETED.match(first)
    )


def _plausible_author(name: str) -> bool:
    return (
        0 < len(name) <= 100
        and not _QUOTES.intersection(name)
        and _SYSTEM_IN_AUTHOR.search(name) is None
    )


def _parse_line(line: str) -> _Head | None:
    """The message a line starts, or None for a continuation line."""
    match = _HEADER.match(line)
    if match is None:
        return None
    a, b, c = int(match["a"]), int(match["b"]), int(match["c"])
    iso = len(match["a"]) == 4
    if iso:
        if not (1 <= b <= 12 and 1 <= c <= 31):
            return None
    elif (
        len(match["a"]) > 2
        or len(match["c"]) == 3
        or not (1 <= a <= 31 and 1 <= b <= 31 and min(a, b) <= 12)
    ):
        return None
    hour, minute = int(match["hour"]), int(match["minute"])
    second = int(match["second"] or 0)
    ampm = match["ampm"]
    if ampm:
        if hour > 12:
            return None
        hour = hour % 12 + (12 if ampm[0] in "pP" else 0)
    if hour > 23 or minute > 59 or second > 59:
        return None

    body = line[match.end() :]
    author: str | None = None
    text = body
    colon = body.find(":")
    if colon > 0:
        candidate = _clean_name(body[:colon])
        if _plausible_author(candidate):
            author = candidate
            text = body[colon + 1 :]
            text = text.removeprefix(" ")
    marked = text.lstrip(" ").startswith("\u200e")
    text = _strip_marks(text)
    if author is None:
        text = text.strip()
    return _Head(
        a=a,
        b=b,
        c=c,
        iso=iso,
        sep=match["sep"],
        twelve_hour=bool(ampm),
        hour=hour,
        minute=minute,
        second=second,
        author=author,
        text=text,
        marked=marked,
    )


def _looks_like_chat(head: bytes) -> bool:
    text = head.decode("utf-8", errors="replace").removeprefix("\ufeff")
    for line in text.split("\n"):
        if _strip_marks(line).strip():
            return _parse_line(line.rstrip("\r")) is not None
    return False


# ---------------------------------------------------------------------------------------
# Where the chat text is


def _unsafe_name(name: str) -> bool:
    cleaned = name.replace("\\", "/").strip()
    return (
        not cleaned
        or cleaned.startswith("/")
        or re.match(r"^[A-Za-z]:", cleaned) is not None
        or ".." in PurePosixPath(cleaned).parts
    )


def _ranked(names: Iterable[str]) -> list[str]:
    """Chat-text candidates, the likeliest first: `_chat.txt`, then `WhatsApp Chat…`."""

    def rank(name: str) -> tuple[bool, bool, int, str]:
        base = PurePosixPath(name).name.lower()
        return (base != "_chat.txt", not base.startswith("whatsapp"), name.count("/"), name)

    return sorted(names, key=rank)


@dataclass(frozen=True)
class _Source:
    given: Path  # what the owner pointed at: the .txt, the .zip or the folder
    text_name: str  # the chat text's own file name
    member: str | None = None  # the chat text inside the zip
    text_file: Path | None = None  # the chat text on disk

    def open_text(self) -> IO[bytes]:
        if self.member is not None:
            return cast(IO[bytes], zip_opener(self.given, self.member)())
        assert self.text_file is not None
        return self.text_file.open("rb")

    def error(self, line: int, problem: str) -> FormatError:
        if self.member is not None:
            return FormatError(self.given, f"{self.member}, line {line}", problem)
        return FormatError(self.text_file or self.given, f"line {line}", problem)

    @property
    def container_name(self) -> str:
        """The zip's or folder's name, which iOS exports name after the chat."""
        if self.member is not None:
            return self.given.stem
        if self.text_file is not None and self.text_file != self.given:
            return self.given.name
        return self.given.parent.name


class _SeveralChats(Exception):
    def __init__(self, names: list[str]) -> None:
        super().__init__(", ".join(names))
        self.names = names


def _one_chat(matches: list[str]) -> str | None:
    """The chat text among the texts that look like one: `_chat.txt`, else the only one.
    Several chats in one zip or folder are refused rather than one picked silently."""
    if not matches:
        return None
    if PurePosixPath(matches[0]).name.lower() == "_chat.txt" or len(matches) == 1:
        return matches[0]
    raise _SeveralChats(matches)


def _locate(path: Path) -> _Source | None:
    """The chat text of the export at `path`, or None when it holds none."""
    if path.is_dir():
        found: dict[str, Path] = {}
        names = [p.name for p in path.iterdir() if p.suffix.lower() == ".txt"]
        for name in _ranked(names)[:MAX_CANDIDATES]:
            inside = safe_member(path, name)  # a regular file, no symlink out of the folder
            if inside is not None and _looks_like_chat(read_head(inside, HEAD_BYTES)):
                found[name] = inside
        chosen = _one_chat(list(found))
        if chosen is None:
            return None
        return _Source(given=path, text_name=chosen, text_file=found[chosen])
    if not path.is_file():
        return None
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            names = [
                info.filename
                for info in archive.infolist()
                if info.filename.lower().endswith(".txt")
                and not info.filename.startswith("__MACOSX/")
                and not _unsafe_name(info.filename)
                and safe_zip_member(archive, info.filename) is not None
            ]
            matches = []
            for name in _ranked(names)[:MAX_CANDIDATES]:
                with archive.open(name) as stream:
                    head = stream.read(HEAD_BYTES)
                if _looks_like_chat(head):
                    matches.append(name)
        member = _one_chat(matches)
        if member is None:
            return None
        return _Source(given=path, text_name=PurePosixPath(member).name, member=member)
    if _looks_like_chat(read_head(path, HEAD_BYTES)):
        return _Source(given=path, text_name=path.name, text_file=path)
    return None


def _read_lines(source: _Source) -> Iterator[tuple[int, str]]:
    """(line number, text) of the chat text, decoded strictly, without line ends."""
    number = 0
    try:
        with source.open_text() as handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise source.error(
                        number,
                        f"not UTF-8 text (byte {exc.start + 1} of the line is "
                        f"0x{raw[exc.start]:02x})",
                    ) from None
                if number == 1:
                    line = line.removeprefix("\ufeff")
                yield number, line.rstrip("\r\n")
    except ZIP_ERRORS as exc:
        raise source.error(number + 1, f"the zip cannot be read: {exc}") from None


class _GuardedStream(io.RawIOBase):
    """A zip member stream whose read errors (bad CRC, truncated data) become OSError,
    which the import service records as a missing attachment instead of crashing."""

    def __init__(self, inner: IO[bytes]) -> None:
        super().__init__()
        self._inner = inner

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        try:
            return self._inner.read(size)
        except ZIP_ERRORS as exc:
            raise OSError(f"attachment unreadable: {exc}") from exc

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
        super().close()


@dataclass(frozen=True)
class _Guarded:
    """An opener whose stream turns a corrupt zip member into an OSError."""

    opener: Callable[[], IO[bytes]]

    def __call__(self) -> BinaryIO:
        try:
            return cast(BinaryIO, _GuardedStream(self.opener()))
        except ZIP_ERRORS as exc:
            raise OSError(f"attachment unreadable: {exc}") from exc


def _guarded(opener: Callable[[], IO[bytes]]) -> Callable[[], BinaryIO]:
    return _Guarded(opener)


# ---------------------------------------------------------------------------------------
# The first pass: what only the whole file tells


@dataclass
class _Survey:
    messages: int = 0
    day_first_votes: int = 0
    month_first_votes: int = 0
    slashes_only: bool = True
    twelve_hour: bool = False
    authors: dict[str, str] = field(default_factory=dict)  # identity id -> name as written
    group_lines: bool = False
    notice_author: str | None = None

    def add(self, head: _Head) -> None:
        self.messages += 1
        if not head.iso:
            self.day_first_votes += head.a > 12
            self.month_first_votes += head.b > 12
            self.slashes_only = self.slashes_only and head.sep == "/"
        self.twelve_hour = self.twelve_hour or head.twelve_hour
        if head.service:
            self.group_lines = self.group_lines or _GROUP_TEXT.search(head.text) is not None
            if self.notice_author is None and head.author and _NOTICE.search(head.text):
                self.notice_author = head.author
        elif head.author is not None:
            self.authors.setdefault(_identity_key(head.author)[0], head.author)

    @property
    def day_first(self) -> bool:
        if self.day_first_votes or self.month_first_votes:
            return self.day_first_votes >= self.month_first_votes
        return not (self.slashes_only and self.twelve_hour)

    @property
    def guessed(self) -> bool:
        return not (self.day_first_votes or self.month_first_votes)

    @property
    def conflict(self) -> bool:
        return bool(self.day_first_votes and self.month_first_votes)


def _title_from(name: str) -> str | None:
    match = _TITLE.match(_clean_name(name))
    if match is None:
        return None
    return _DOWNLOAD_COUNTER.sub("", match["title"]).strip() or None


def _chat_title(source: _Source, survey: _Survey) -> str:
    stem = PurePosixPath(source.text_name).stem
    own = stem if stem.lower() != "_chat" else ""
    return (
        (own and _title_from(own))
        or _title_from(source.container_name)
        or survey.notice_author
        or _clean_name(_DOWNLOAD_COUNTER.sub("", own or source.container_name or stem))
        or "WhatsApp chat"
    )


def _chat_id(title: str) -> str:
    key = f"title:{title}"
    if len(key) <= 200:
        return key
    return f"title-sha256:{hashlib.sha256(title.encode()).hexdigest()}"


# ---------------------------------------------------------------------------------------
# The second pass: the messages


@dataclass
class _Context:
    source: _Source
    chat: ChatRecord
    day_first: bool
    owner_key: str | None
    skipped: Counter[str]
    archive: zipfile.ZipFile | None = None
    ordinals: Counter[tuple[datetime, str]] = field(default_factory=Counter)


def _timestamp(head: _Head, day_first: bool) -> datetime:
    """The line's time, as UTC. `day_first` (the file's order) decides only dates whose
    day and month are both 12 or less, and those are valid in either order: so a first
    pass with any order finds every impossible date. Raises ValueError."""
    if head.iso:
        year, month, day = head.a, head.b, head.c
    else:
        year = head.c + 2000 if head.c < 100 else head.c
        if head.a > 12:
            day_first = True
        elif head.b > 12:
            day_first = False
        day, month = (head.a, head.b) if day_first else (head.b, head.a)
    return datetime(year, month, day, head.hour, head.minute, head.second, tzinfo=UTC)


def _media(ctx: _Context, name: str) -> AttachmentRecord:
    """An attachment the text names, its bytes from the zip or beside the chat text."""
    cleaned = name.strip().replace("\\", "/")
    file_name = PurePosixPath(cleaned).name if cleaned else ""
    record = AttachmentRecord(
        external_id=cleaned[:255],
        file_name=file_name,
        mime_type=mimetypes.guess_type(file_name)[0] or "",
    )
    if _unsafe_name(cleaned):
        ctx.skipped["attachment path outside the export refused"] += 1
        return dataclasses.replace(record, metadata={"refused": "path outside the export"})
    source = ctx.source
    if ctx.archive is not None and source.member is not None:
        folder = str(PurePosixPath(source.member).parent)
        for candidate in ([f"{folder}/{cleaned}"] if folder != "." else []) + [cleaned]:
            info = safe_zip_member(ctx.archive, candidate)
            if info is not None:
                return dataclasses.replace(
                    record, content=_guarded(zip_opener(source.given, info.filename))
                )
    elif source.text_file is not None:
        found = safe_member(source.text_file.parent, cleaned)
        if found is not None:
            return dataclasses.replace(record, content=file_opener(found))
    ctx.skipped["attachment file missing from the export"] += 1
    return dataclasses.replace(record, metadata={"file_missing": True})


def _content(
    ctx: _Context, head: _Head, text: str
) -> tuple[str, tuple[AttachmentRecord, ...], bool]:
    """(text, attachments, deleted) of a message by an author."""
    first, _, rest = text.partition("\n")
    first_clean = first.strip()
    if _DELETED.match(first_clean) and not rest.strip():
        return text, (), True
    if _MEDIA_OMITTED.match(first_clean):
        omitted = AttachmentRecord(metadata={"omitted": True})
        return rest.strip("\n"), (omitted,), False
    inner = first_clean
    bracketed = inner.startswith("<") and inner.endswith(">")
    if bracketed:
        inner = inner[1:-1].strip()
    omitted_ios = _IOS_OMITTED.match(inner)
    if omitted_ios and (head.marked or bracketed):
        named = omitted_ios["before"].split("\u2022")[0].strip()
        metadata: dict[str, Any] = {"omitted": True, "media_type": omitted_ios["kind"].lower()}
        attachment = AttachmentRecord(
            file_name=named, mime_type=mimetypes.guess_type(named)[0] or "", metadata=metadata
        )
        return rest.strip("\n"), (attachment,), False
    attached = _ATTACHED.match(first_clean) or _FILE_ATTACHED.match(first_clean)
    if attached:
        caption = "\n".join(part for part in (attached["rest"].strip(), rest) if part)
        return caption.strip("\n"), (_media(ctx, attached["name"]),), False
    return text, (), False


def _item(ctx: _Context, head: _Head, number: int, lines: list[str]) -> ImportItem:
    try:
        sent_at = _timestamp(head, ctx.day_first)
    except ValueError as exc:  # the first pass already refused these
        raise ctx.source.error(number, f"impossible date ({exc})") from None
    text = "\n".join(lines).rstrip()
    metadata: dict[str, Any] = {"time_zone_unknown": True}
    if head.service:
        sender_key = ""
        identities: tuple[IdentityRecord, ...] = ()
        kind, direction = "service", "in"
        attachments: tuple[AttachmentRecord, ...] = ()
        deleted = False
    else:
        assert head.author is not None
        sender_key, phone = _identity_key(head.author)
        identities = (
            IdentityRecord(external_id=sender_key, display_name=head.author, phone=phone),
        )
        kind = "text"
        owner = ctx.owner_key is not None and sender_key.casefold() == ctx.owner_key
        direction = "out" if owner else "in"
        edited = _EDITED.search(text)
        if edited:
            text = text[: edited.start()]
            metadata["edited"] = True
        text, attachments, deleted = _content(ctx, head, text)
    ordinal = ctx.ordinals[(sent_at, sender_key)]
    ctx.ordinals[(sent_at, sender_key)] += 1
    digest = hashlib.sha256(sender_key.encode()).hexdigest()[:12] if sender_key else "system"
    message = MessageRecord(
        chat_external_id=ctx.chat.external_id,
        external_id=f"{sent_at:%Y%m%dT%H%M%S}-{digest}-{ordinal}",
        sent_at=sent_at,
        text=text,
        sender_external_id=sender_key or None,
        direction=direction,
        kind=kind,
        deleted_at=sent_at if deleted else None,
        metadata=metadata,
        attachments=attachments,
    )
    return ImportItem(chat=ctx.chat, message=message, identities=identities)


def _messages(ctx: _Context) -> Iterator[ImportItem]:
    archive = zipfile.ZipFile(ctx.source.given) if ctx.source.member is not None else None
    ctx.archive = archive
    try:
        pending: tuple[_Head, int] | None = None
        lines: list[str] = []
        for number, line in _read_lines(ctx.source):
            head = _parse_line(line)
            if head is None:
                if pending is not None:  # the first line always has a timestamp
                    lines.append(_strip_marks(line))
                continue
            if pending is not None:
                yield _item(ctx, pending[0], pending[1], lines)
            pending = (head, number)
            lines = [head.text]
        if pending is not None:
            yield _item(ctx, pending[0], pending[1], lines)
    finally:
        ctx.archive = None
        if archive is not None:
            archive.close()


# ---------------------------------------------------------------------------------------


_DETECT_ERRORS: tuple[type[BaseException], ...] = (OSError, ValueError, _SeveralChats, *ZIP_ERRORS)


class WhatsAppReader:
    format: ClassVar[str] = "whatsapp"
    label: ClassVar[str] = "WhatsApp chat export (.txt or .zip)"

    def detect(self, path: Path) -> bool:
        try:
            return _locate(path) is not None
        except _DETECT_ERRORS:
            return False

    def open(self, path: Path, options: ReadOptions) -> ExportStream:
        try:
            source = _locate(path)
        except ZIP_ERRORS as exc:
            raise FormatError(path, "archive", f"the zip cannot be read: {exc}") from None
        except _SeveralChats as several:
            problem = f"holds several chats ({several}); import them one by one"
            raise FormatError(path, "contents", problem) from None
        if source is None:
            if path.is_file() and zipfile.is_zipfile(path):
                problem = "no WhatsApp chat text (_chat.txt or 'WhatsApp Chat with ….txt') in it"
                raise FormatError(path, "archive", problem)
            raise FormatError(path, "line 1", "not a WhatsApp chat export (no timestamp)")

        survey = _Survey()
        for number, line in _read_lines(source):
            head = _parse_line(line)
            if head is not None:
                try:
                    _timestamp(head, day_first=True)
                except ValueError as exc:
                    raise source.error(number, f"impossible date ({exc})") from None
                survey.add(head)

        title = _chat_title(source, survey)
        group = len(survey.authors) > 2 or survey.group_lines
        chat_metadata: dict[str, Any] = {
            "date_order": "day_first" if survey.day_first else "month_first",
            "time_zone_unknown": True,
        }
        if survey.guessed:
            chat_metadata["date_order_guessed"] = True
        if survey.conflict:
            chat_metadata["date_order_conflict"] = True
        chat = ChatRecord(
            external_id=_chat_id(title),
            kind="group" if group else "dm",
            title=title,
            metadata=chat_metadata,
        )

        owner_key: str | None = None
        owner: IdentityRecord | None = None
        if options.account_name:
            name = _clean_name(options.account_name)
            key, phone = _identity_key(name)
            owner_key = key.casefold()
            for author, written in survey.authors.items():
                if author.casefold() == owner_key:
                    owner = IdentityRecord(external_id=author, display_name=written, phone=phone)
                    break
        account = AccountRecord(
            provider=PROVIDER,
            external_id=options.account_name or DEFAULT_ACCOUNT,
            name=options.account_name or "WhatsApp export",
            owner=owner,
        )
        skipped: Counter[str] = Counter()
        ctx = _Context(
            source=source,
            chat=chat,
            day_first=survey.day_first,
            owner_key=owner_key,
            skipped=skipped,
        )
        return ExportStream(
            format=self.format,
            account=account,
            items=_messages(ctx),
            total=survey.messages,
            skipped=skipped,
        )


READER = WhatsAppReader()
