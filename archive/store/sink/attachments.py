"""Attachment rows of a message: one per file the provider lists, never twice (a
re-delivery that lists a file again adds nothing). A calendar file among them (an
invitation) is announced after commit (`CALENDAR_STORED`), so the meetings read it."""

from __future__ import annotations

from collections.abc import Iterable

from archive.store.domain import AttachmentRecord
from archive.store.models import Attachment
from archive.store.sink.cleaning import normalize_text

# What a calendar file (an invitation in a mail) is stored as: by its type, or its name.
CALENDAR_TYPES = frozenset({"text/calendar", "application/ics", "text/x-vcalendar"})


def is_calendar(attachment: Attachment) -> bool:
    """True for a stored calendar file: its bytes are kept and its type or name says so."""
    if not attachment.path:
        return False
    mime_type = attachment.mime_type.split(";")[0].strip().lower()
    return mime_type in CALENDAR_TYPES or attachment.file_name.lower().endswith(".ics")


def _attachment_key(record: AttachmentRecord, index: int) -> str:
    return record.external_id or (f"sha256:{record.sha256}" if record.sha256 else f"#{index}")


def new_attachments(
    message_id: int, records: Iterable[AttachmentRecord], have: set[str]
) -> list[Attachment]:
    """Rows for the files of `records` whose key is not in `have` (which learns them)."""
    rows = []
    for index, record in enumerate(records):
        key = _attachment_key(record, index)
        if key in have:
            continue
        have.add(key)
        rows.append(
            Attachment(
                message_id=message_id,
                external_id=key,
                file_name=normalize_text(record.file_name)[:500],
                mime_type=record.mime_type[:255],
                size=record.size,
                sha256=record.sha256,
                path=record.blob_path,
                provider_metadata=record.metadata,
            )
        )
    return rows
