"""Mail: an mbox file, a Maildir folder, a single .eml message, or a folder of .eml files.

The reader: what the export is, which files hold its messages, and how each message
becomes a message of a thread. Its parts: mbox.py splits an mbox and tells mail files from
others, mime.py decodes headers, charsets, parts and attachments, html_text.py turns an HTML
body into text.

Reading
- Maildir: the messages in cur/ and new/ of the folder and of its Maildir++ subfolders
  (tmp/ holds deliveries in progress and is left alone). A folder of .eml files: every file at
  its top level. Any single file is an mbox when it starts with a separator, else one message.
- A message's text and attachments are its MIME parts decoded (mime.py); messages are read
  from a file one at a time (mbox.py).

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

Dates
- A message's time is its Date header. Without a usable one (missing, unreadable, or without
  a year, as Outlook writes some invitations: `Thu Jan 01 00:00:10 +0000`) the message is
  kept, marked `date_estimated`, with the best evidence there is, in this order: the mbox
  `From ` line's date, the newest Received header's date, a calendar invitation's DTSTAMP
  (when it was made), the message before it in the same mbox file, the message after it,
  and the file's modification time (for a single .eml or Maildir file, its own time comes
  straight after its headers: it has no neighbours). A message read from a server (IMAP)
  with no evidence at all takes the time it was fetched. (archive/connectors/estimates.py)

Bad input
- Per message (the import goes on, the reason is counted in `stream.skipped`): no mail
  headers at all, larger than `MAX_MESSAGE` when read from a server (in a file, a message
  over 8 MiB is read as a skeleton, its big parts streamed from the file: large.py), or the
  last message of a file cut short (a multipart without its closing boundary, or broken
  base64). A single .eml file cut short
  fails the import with a FormatError naming the file and the byte. Read errors are
  FormatErrors naming the file and the byte offset.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from archive.connectors.base import ExportStream, FormatError, ImportItem, ReadOptions, read_head
from archive.connectors.estimates import FROM_FILE_TIME, file_time, neighbours_dated
from archive.connectors.mail.mbox import (
    HEAD_BYTES,
    MAX_MESSAGE,
    Raw,
    file_messages,
    looks_like_mail_file,
    looks_like_message,
    starts_as_mbox,
)
from archive.connectors.mail.mime import (
    ID_LIMIT,
    PARSER,
    Body,
    Headers,
    charset_hint,
    clean,
    id_list,
    message_body,
    message_id,
    parse_date,
    truncated,
)
from archive.store.domain import (
    DATE_ESTIMATED_FROM,
    AccountRecord,
    ChatRecord,
    IdentityRecord,
    MessageRecord,
)

log = logging.getLogger(__name__)

PROVIDER = "mail"
_OWNER_SAMPLE = 200  # messages read ahead to find the mailbox owner
_DETECT_FILES = 50  # files of a plain folder checked by `detect`
_SYNTHETIC_BODY = 4096

SKIP_NOT_MAIL = "not a mail message (no mail headers)"
SKIP_TOO_LARGE = "message larger than 256 MiB"
SKIP_TRUNCATED = "truncated message at the end of a file"
SKIP_UNREADABLE = "unreadable message"
SKIP_UNREADABLE_FILE = "message file could not be read"

# -- threads and dates ------------------------------------------------------------------------

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
    return clean(title)[:500]


def _envelope_date(envelope: str) -> datetime | None:
    rest = envelope[5:].strip()
    tail = rest[1:] if rest.startswith("-") else rest.partition(" ")[2]
    return parse_date(tail) if tail.strip() else None


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


def _synthetic_id(headers: Headers, data: bytes) -> str:
    digest = hashlib.sha256()
    for name in ("date", "from", "subject"):
        digest.update(clean(headers.raw(name)).encode("utf-8", "surrogateescape"))
        digest.update(b"\x00")
    digest.update(_body_bytes(data))
    return "synthetic-" + digest.hexdigest()


def _received_date(headers: Headers) -> datetime | None:
    for value in headers.texts("received"):
        if ";" in value:
            found = parse_date(value.rsplit(";", 1)[1])
            if found is not None:
                return found
    return None


# RFC 5545: DTSTAMP is UTC, when the invitation was made.
_DTSTAMP = re.compile(rb"^DTSTAMP(?:;[^:\r\n]*)?:(\d{8}T\d{6})Z?\r?$", re.IGNORECASE | re.MULTILINE)
_CALENDAR_READ = 64 << 10

FROM_ENVELOPE = "the mbox From line"
FROM_RECEIVED = "the newest Received header"
FROM_CALENDAR = "the invitation's DTSTAMP (when it was made)"
FROM_FETCHED = "the time it was fetched"


def _calendar_stamp(body: Body) -> datetime | None:
    """The DTSTAMP of a small text/calendar part (an invitation): when it was made."""
    for part in body.attachments:
        if part.mime_type != "text/calendar" or part.content is None:
            continue
        if part.size is None or part.size > _CALENDAR_READ:
            continue
        try:
            with part.content() as handle:
                match = _DTSTAMP.search(handle.read(_CALENDAR_READ))
        except OSError:
            continue
        if match is not None:
            try:
                return datetime.strptime(match[1].decode(), "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
            except ValueError:
                continue
    return None


def _estimated_date(raw: Raw, headers: Headers, body: Body) -> tuple[datetime, str]:
    """The best evidence of when a message without a usable Date was sent, and what it is.
    The file's time is provisional: in an mbox, a neighbour's date replaces it."""
    evidence = (
        ((_envelope_date(raw.envelope) if raw.envelope else None), FROM_ENVELOPE),
        (_received_date(headers), FROM_RECEIVED),
        (_calendar_stamp(body), FROM_CALENDAR),
    )
    for found, name in evidence:
        if found is not None:
            return found, name
    if raw.in_memory:
        return datetime.now(UTC), FROM_FETCHED
    return file_time(raw.path), FROM_FILE_TIME


def _people(pairs: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"name": name, "email": address} for name, address in pairs]


def _convert(raw: Raw, owner: str) -> ImportItem | str:
    """An ImportItem, or the reason the message is skipped."""
    if raw.oversized:
        return SKIP_TOO_LARGE
    message = PARSER.parsebytes(raw.data)
    hint = charset_hint(message)
    headers = Headers(message, hint)
    if not headers.names() & {"from", "date", "message-id", "subject", "received", "to"}:
        return SKIP_NOT_MAIL
    body = message_body(raw, message, hint)
    if raw.last and truncated(message):
        return SKIP_TRUNCATED
    sent_at = parse_date(headers.text("date"))
    estimated_from = ""
    if sent_at is None:
        sent_at, estimated_from = _estimated_date(raw, headers, body)

    own = message_id(headers.raw("message-id"))
    synthetic = own is None
    if own is None:
        own = _synthetic_id(headers, raw.data)
    in_reply_to = id_list(headers.raw("in-reply-to"))
    references = id_list(headers.raw("references"))
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
        identities[address.lower()[:ID_LIMIT]] = IdentityRecord(
            external_id=address.lower()[:ID_LIMIT], display_name=name, email=address
        )
    sender_id = sender_address.lower()[:ID_LIMIT] or None
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
    if estimated_from:
        metadata[DATE_ESTIMATED_FROM] = estimated_from
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
        date_estimated=bool(estimated_from),
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
        headers = Headers(PARSER.parsebytes(raw.data, headersonly=True), None)
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


def _sample(files: list[Path]) -> Iterator[Raw]:
    count = 0
    for path in files:
        try:
            for raw in file_messages(path):
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
            return bool(files) and all(looks_like_mail_file(f) for f in files)
        return path.is_file() and looks_like_mail_file(path)

    def open(self, path: Path, options: ReadOptions) -> ExportStream:
        single = path.is_file()
        if single:
            head = read_head(path, HEAD_BYTES)
            mbox = starts_as_mbox(head)
            if not mbox and not looks_like_message(head):
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
                mboxes = any(starts_as_mbox(read_head(f, 4096)) for f in files)
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
            # An undated message's neighbours are those of its own file.
            yield from neighbours_dated(
                self._file_items(stream, path, owner, single), scope=_same_file
            )

    def _file_items(
        self, stream: ExportStream, path: Path, owner: str, single: bool
    ) -> Iterator[ImportItem]:
        messages = file_messages(path)
        while True:
            try:
                raw = next(messages, None)
            except OSError as exc:
                if single:
                    raise FormatError(path, "byte 0", f"cannot be read: {exc}") from exc
                log.warning("%s: cannot be read: %s", path, exc)
                stream.skipped[SKIP_UNREADABLE_FILE] += 1
                return
            if raw is None:
                return
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
            log.warning("%s, %s: skipped: %s", path.name, raw.position, outcome)
            stream.skipped[outcome] += 1


def _same_file(item: ImportItem) -> None:
    """`neighbours_dated`'s scope when called for one file: all of it."""
    return None


READER = MailReader()


def mail_item(data: bytes, *, source: str, number: int, owner: str) -> ImportItem | str:
    """One message's RFC 5322 bytes from elsewhere than a file (an IMAP server): the same
    translation as an import's, or the reason it is skipped. `source` and `number` name
    where it came from in errors."""
    raw = Raw(
        path=Path(source),
        index=number,
        offset=0,
        data=data,
        oversized=len(data) > MAX_MESSAGE,
        in_memory=True,
    )
    return _convert(raw, owner.lower())
