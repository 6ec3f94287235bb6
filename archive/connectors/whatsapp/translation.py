"""How one message of a WhatsApp chat text becomes records.

- Message ids: `<YYYYmmddTHHMMSS>-<author digest>-<n>`, where n counts the earlier
  messages of the file with the same timestamp and author. Line numbers are never part of
  it, so importing the same file again adds nothing and a later export of the same chat
  that overlaps an earlier one gives the shared messages the same ids. (A later export
  that starts inside a run of same-minute messages of one author shifts the ordinals of
  that run only.)
- Identities are the author names as written (names are what the exporting phone called
  people); authors that are phone numbers are normalised (spaces, dashes, brackets and
  marks removed) and also fill `phone`. System lines have no sender.
- Times are local times of the exporting phone, without a zone. They are stored as if
  they were UTC, and every message says so with `metadata["time_zone_unknown"] = True`.
  A date that cannot be (`30/02/21`) does not cost the message: it is kept with the time of
  the message before it (else after it, else the chat text's file time), marked estimated
  (archive/connectors/estimates.py), and its id keeps the date as written.
- `<Media omitted>` (any case, a few locales) and iOS's `image omitted` become an
  attachment row without bytes (`metadata["omitted"] = True`) and no text.
- `<attached: NAME>` (iOS) and `NAME (file attached)` (Android) take the bytes from the zip
  member NAME (beside the chat text, or at the zip's root) or from the file NAME beside an
  unpacked `.txt`; names with `..` or an absolute path are refused unread, names not in
  the export are kept as rows marked `file_missing`. Text after the name is the caption.
- `This message was deleted` sets `deleted_at` (to the sent time: the export does not
  say when) and keeps the text; a `<This message was edited>` suffix is removed from the
  text and sets `metadata["edited"] = True`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import mimetypes
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from archive.connectors.base import (
    ImportItem,
    file_opener,
    safe_member,
    safe_zip_member,
    zip_opener,
)
from archive.connectors.estimates import FROM_FILE_TIME, estimate_note, file_time, member_time
from archive.connectors.whatsapp.chat_text import Source, guarded, unsafe_name
from archive.connectors.whatsapp.grammar import (
    ATTACHED,
    DELETED,
    EDITED,
    FILE_ATTACHED,
    IOS_OMITTED,
    MEDIA_OMITTED,
    Head,
    identity_key,
    timestamp,
)
from archive.store.domain import AttachmentRecord, ChatRecord, IdentityRecord, MessageRecord


@dataclass
class Context:
    """What translating a message needs from the reader: the chat text, its chat, the date
    order the first pass found, the owner, the skips to count, and the ids given so far."""

    source: Source
    chat: ChatRecord
    day_first: bool
    owner_key: str | None
    skipped: Counter[str]
    archive: zipfile.ZipFile | None = None
    ordinals: Counter[tuple[datetime | str, str]] = field(default_factory=Counter)
    _file_time: datetime | None = None

    def file_time(self) -> datetime:
        """The chat text's own time: an impossible date's provisional one."""
        if self._file_time is None:
            source = self.source
            if self.archive is not None and source.member is not None:
                self._file_time = member_time(self.archive.getinfo(source.member))
            else:
                self._file_time = file_time(source.text_file or source.given)
        return self._file_time


def _media(ctx: Context, name: str) -> AttachmentRecord:
    """An attachment the text names, its bytes from the zip or beside the chat text."""
    cleaned = name.strip().replace("\\", "/")
    file_name = PurePosixPath(cleaned).name if cleaned else ""
    record = AttachmentRecord(
        external_id=cleaned[:255],
        file_name=file_name,
        mime_type=mimetypes.guess_type(file_name)[0] or "",
    )
    if unsafe_name(cleaned):
        ctx.skipped["attachment path outside the export refused"] += 1
        return dataclasses.replace(record, metadata={"refused": "path outside the export"})
    source = ctx.source
    if ctx.archive is not None and source.member is not None:
        folder = str(PurePosixPath(source.member).parent)
        for candidate in ([f"{folder}/{cleaned}"] if folder != "." else []) + [cleaned]:
            info = safe_zip_member(ctx.archive, candidate)
            if info is not None:
                return dataclasses.replace(
                    record, content=guarded(zip_opener(source.given, info.filename))
                )
    elif source.text_file is not None:
        found = safe_member(source.text_file.parent, cleaned)
        if found is not None:
            return dataclasses.replace(record, content=file_opener(found))
    ctx.skipped["attachment file missing from the export"] += 1
    return dataclasses.replace(record, metadata={"file_missing": True})


def _content(ctx: Context, head: Head, text: str) -> tuple[str, tuple[AttachmentRecord, ...], bool]:
    """(text, attachments, deleted) of a message by an author."""
    first, _, rest = text.partition("\n")
    first_clean = first.strip()
    if DELETED.match(first_clean) and not rest.strip():
        return text, (), True
    if MEDIA_OMITTED.match(first_clean):
        omitted = AttachmentRecord(metadata={"omitted": True})
        return rest.strip("\n"), (omitted,), False
    inner = first_clean
    bracketed = inner.startswith("<") and inner.endswith(">")
    if bracketed:
        inner = inner[1:-1].strip()
    omitted_ios = IOS_OMITTED.match(inner)
    if omitted_ios and (head.marked or bracketed):
        named = omitted_ios["before"].split("\u2022")[0].strip()
        metadata: dict[str, Any] = {"omitted": True, "media_type": omitted_ios["kind"].lower()}
        attachment = AttachmentRecord(
            file_name=named, mime_type=mimetypes.guess_type(named)[0] or "", metadata=metadata
        )
        return rest.strip("\n"), (attachment,), False
    attached = ATTACHED.match(first_clean) or FILE_ATTACHED.match(first_clean)
    if attached:
        caption = "\n".join(part for part in (attached["rest"].strip(), rest) if part)
        return caption.strip("\n"), (_media(ctx, attached["name"]),), False
    return text, (), False


def message_item(ctx: Context, head: Head, number: int, lines: list[str]) -> ImportItem:
    """The message whose first line (line `number`) is `head`, its text `lines`."""
    metadata: dict[str, Any] = {"time_zone_unknown": True}
    stamp: datetime | str
    try:
        sent_at = stamp = timestamp(head, ctx.day_first)
        estimated = False
    except ValueError:  # a date that cannot be: kept, its time estimated
        sent_at, estimated = ctx.file_time(), True
        day = f"{head.a}{head.sep}{head.b}{head.sep}{head.c}"
        metadata["impossible_date"] = f"{day} {head.hour:02}:{head.minute:02}:{head.second:02}"
        stamp = f"{day}T{head.hour:02}{head.minute:02}{head.second:02}"  # its id's part
        estimate_note(metadata, FROM_FILE_TIME)
    text = "\n".join(lines).rstrip()
    if head.service:
        sender_key = ""
        identities: tuple[IdentityRecord, ...] = ()
        kind, direction = "service", "in"
        attachments: tuple[AttachmentRecord, ...] = ()
        deleted = False
    else:
        assert head.author is not None
        sender_key, phone = identity_key(head.author)
        identities = (
            IdentityRecord(external_id=sender_key, display_name=head.author, phone=phone),
        )
        kind = "text"
        owner = ctx.owner_key is not None and sender_key.casefold() == ctx.owner_key
        direction = "out" if owner else "in"
        edited = EDITED.search(text)
        if edited:
            text = text[: edited.start()]
            metadata["edited"] = True
        text, attachments, deleted = _content(ctx, head, text)
    ordinal = ctx.ordinals[(stamp, sender_key)]
    ctx.ordinals[(stamp, sender_key)] += 1
    digest = hashlib.sha256(sender_key.encode()).hexdigest()[:12] if sender_key else "system"
    written = stamp if isinstance(stamp, str) else f"{stamp:%Y%m%dT%H%M%S}"
    message = MessageRecord(
        chat_external_id=ctx.chat.external_id,
        external_id=f"{written}-{digest}-{ordinal}",
        sent_at=sent_at,
        text=text,
        sender_external_id=sender_key or None,
        direction=direction,
        kind=kind,
        deleted_at=sent_at if deleted else None,
        metadata=metadata,
        attachments=attachments,
        date_estimated=estimated,
    )
    return ImportItem(chat=ctx.chat, message=message, identities=identities)
