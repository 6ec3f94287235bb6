"""Attachment rows of a message: one per file the provider lists, never twice (a
re-delivery that lists a file again adds nothing). A calendar file among them (an
invitation) is announced after commit (`CALENDAR_STORED`), so the meetings read it."""

from __future__ import annotations

from collections.abc import Iterable

from archive.store.domain import AttachmentRecord, MessageRecord
from archive.store.models import Attachment
from archive.store.sink.cleaning import normalize_text
from archive.store.sink.public_ids import public_ids_given

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
        # An exported id is only proposed here: `attachment_ids_settle` checks it.
        given = {"public_id": record.public_id} if record.public_id else {}
        rows.append(
            Attachment(
                **given,
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


def attachment_ids_settle(rows: list[Attachment], records: Iterable[MessageRecord]) -> None:
    """New rows whose record brought an exported id keep it when it is well-formed and
    free, else get a new one: one probe for the batch, none when no record brought one."""
    given = {a.public_id for record in records for a in record.attachments if a.public_id}
    if not given:
        return
    offered = [row for row in rows if row.public_id in given]
    settled = public_ids_given("att", [row.public_id for row in offered])
    for row, public_id in zip(offered, settled, strict=True):
        row.public_id = public_id
