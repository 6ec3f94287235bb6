"""Messages already stored: found by (chat, provider id), brought up to what the batch says
— an edit keeps the earlier text as a revision, a deletion is a tombstone, never an erase —
and written back together. What the batch does not know yet is left for the insert."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from django.db import connection

from archive.store.domain import DATE_ESTIMATED_FROM, BatchResult, DeletionRecord, MessageRecord
from archive.store.models import Attachment, Message, MessageRevision
from archive.store.sink.attachments import new_attachments
from archive.store.sink.cleaning import normalize_text
from archive.store.sink.upserts import Context

# A message's key in a batch: (chat external id, message external id).
Key = tuple[str, str]


@dataclass
class Pending:
    """What one batch will write, gathered before anything is written."""

    fresh: dict[Key, MessageRecord] = field(default_factory=dict)  # to insert
    fresh_deleted: dict[Key, datetime] = field(default_factory=dict)  # added, then deleted
    changed: list[Message] = field(default_factory=list)  # stored rows to update
    edited: list[int] = field(default_factory=list)  # ids whose text changed
    tombstoned: list[int] = field(default_factory=list)  # ids deleted now
    revisions: list[MessageRevision] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    redated: list[Message] = field(default_factory=list)  # stored rows whose time changed


# CROSS JOIN keeps the ids outermost: each one is an indexed probe. Left to itself the
# planner walks every message of the chat and scans the ids for each.
STORED_IDS_SQL = (
    "SELECT message.id FROM json_each(%s) AS wanted CROSS JOIN archive_message AS message"
    " ON message.account_id = %s AND message.chat_id = %s"
    " AND message.external_id = wanted.value"
)


def _stored_ids(account_id: int, by_chat: dict[int, list[str]]) -> list[int]:
    """Row ids of the messages already stored among `by_chat` (chat id -> external ids),
    the ids passed as one JSON array (a fresh import finds none, and builds no model)."""
    found: list[int] = []
    with connection.cursor() as cursor:
        for chat_id, external_ids in by_chat.items():
            cursor.execute(STORED_IDS_SQL, [json.dumps(external_ids), account_id, chat_id])
            found.extend(row[0] for row in cursor.fetchall())
    return found


def stored_messages(
    ctx: Context, records: dict[Key, MessageRecord], deletions: tuple[DeletionRecord, ...]
) -> dict[Key, Message]:
    """The stored rows of the messages the batch records or deletes, by key."""
    by_chat: dict[str, list[str]] = {}
    for chat_ext, msg_ext in records:
        by_chat.setdefault(chat_ext, []).append(msg_ext)
    for deletion in deletions:
        by_chat.setdefault(deletion.chat_external_id, []).append(deletion.external_id)
    known = _stored_ids(
        ctx.account.pk, {ctx.chats[chat_ext].pk: ids for chat_ext, ids in by_chat.items()}
    )
    if not known:
        return {}
    chat_ext_by_id = {chat.pk: ext for ext, chat in ctx.chats.items()}
    return {
        (chat_ext_by_id[message.chat_id], message.external_id): message
        for message in Message.objects.filter(pk__in=known)
    }


class _Update(NamedTuple):
    changed: bool  # anything but the tombstone changed
    edited: bool  # the text changed
    tombstoned: bool  # deleted by this record
    redated: bool = False  # an estimated time replaced


def _redate(existing: Message, record: MessageRecord) -> tuple[bool, dict[str, object]]:
    """(whether the stored time changed, the metadata to keep). A stored estimate gives way
    to a real date only: another estimate (the same file with a new modification time, a
    neighbour that moved) changes nothing, so importing again stays quiet; and a real
    stored date is never replaced, an estimate arriving for it being no news."""
    if existing.date_estimated:
        if not record.date_estimated:
            existing.sent_at = record.sent_at
            existing.date_estimated = False
            return True, record.metadata
        stored = (existing.provider_metadata or {}).get(DATE_ESTIMATED_FROM)
        if stored is not None and record.metadata.get(DATE_ESTIMATED_FROM) != stored:
            return False, {**record.metadata, DATE_ESTIMATED_FROM: stored}
    elif record.date_estimated and DATE_ESTIMATED_FROM in record.metadata:
        return False, {k: v for k, v in record.metadata.items() if k != DATE_ESTIMATED_FROM}
    return False, record.metadata


def _apply_update(
    existing: Message,
    record: MessageRecord,
    ctx: Context,
    revisions: list[MessageRevision],
    now: datetime,
) -> _Update:
    """Bring `existing` up to `record`."""
    changed = edited = False
    text = normalize_text(record.text)
    if text != existing.text:
        stale = (
            record.edited_at is not None
            and existing.edited_at is not None
            and record.edited_at < existing.edited_at
        ) or existing.revisions.filter(text=text).exists()
        if not stale:
            revisions.append(
                MessageRevision(
                    message=existing, text=existing.text, edited_at=record.edited_at or now
                )
            )
            existing.text = text
            existing.edited_at = record.edited_at or now
            changed = edited = True
    elif (
        record.edited_at
        and existing.edited_at != record.edited_at
        and (existing.edited_at is None or record.edited_at > existing.edited_at)
    ):
        existing.edited_at = record.edited_at
        changed = True
    sender = ctx.identities.get(record.sender_external_id) if record.sender_external_id else None
    redated, metadata = _redate(existing, record)
    changed = changed or redated
    simple = {
        "kind": record.kind,
        "direction": record.direction,
        "reply_to_external_id": record.reply_to_external_id,
        "provider_metadata": metadata,
    }
    for name, value in simple.items():
        if getattr(existing, name) != value:
            setattr(existing, name, value)
            changed = True
    if sender is not None and existing.sender_id != sender.pk:
        existing.sender = sender
        changed = True
    if record.raw_json and record.raw_json != existing.raw_json and changed:
        existing.raw_json = record.raw_json
    tombstoned = False
    if record.deleted_at is not None and existing.deleted_at is None:
        existing.deleted_at = record.deleted_at
        tombstoned = True
    return _Update(changed, edited, tombstoned, redated)


def updates_plan(
    ctx: Context,
    records: dict[Key, MessageRecord],
    stored: dict[Key, Message],
    result: BatchResult,
    now: datetime,
) -> Pending:
    """Sort the batch's messages into new ones and updates of stored ones (applied to the
    rows in memory, with their revisions and new attachments), counting each outcome."""
    pending = Pending()
    attachment_keys: dict[int, set[str]] = {}
    for message_id, att_key in Attachment.objects.filter(
        message_id__in=[m.pk for m in stored.values()]
    ).values_list("message_id", "external_id"):
        attachment_keys.setdefault(message_id, set()).add(att_key)
    for key, record in records.items():
        message = stored.get(key)
        if message is None:
            pending.fresh[key] = record
            continue
        update = _apply_update(message, record, ctx, pending.revisions, now)
        have = attachment_keys.setdefault(message.pk, set())
        extra = new_attachments(message.pk, record.attachments, have)
        pending.attachments.extend(extra)
        if update.changed or update.tombstoned:
            message.updated_at = now
            pending.changed.append(message)
        if update.edited:
            pending.edited.append(message.pk)
        if update.redated:
            pending.redated.append(message)
        if update.tombstoned:
            pending.tombstoned.append(message.pk)
            result.tombstoned += 1
        if update.changed or extra:
            result.updated += 1
        elif not update.tombstoned:
            result.unchanged += 1
    return pending


def deletions_plan(
    deletions: tuple[DeletionRecord, ...],
    stored: dict[Key, Message],
    pending: Pending,
    result: BatchResult,
    now: datetime,
) -> None:
    """Tombstone what the batch deletes: a stored message in memory, a new one of the same
    batch when it is inserted."""
    for deletion in deletions:
        key = (deletion.chat_external_id, deletion.external_id)
        fresh = pending.fresh.get(key)
        if fresh is not None:  # added and deleted within one batch
            if fresh.deleted_at is None and key not in pending.fresh_deleted:
                pending.fresh_deleted[key] = deletion.deleted_at
                result.tombstoned += 1
            continue
        gone = stored.get(key)
        if gone is not None and gone.deleted_at is None:
            gone.deleted_at = deletion.deleted_at
            gone.updated_at = now
            if gone not in pending.changed:
                pending.changed.append(gone)
            pending.tombstoned.append(gone.pk)
            result.tombstoned += 1


_UPDATED_FIELDS = [
    "sent_at",
    "date_estimated",
    "text",
    "edited_at",
    "deleted_at",
    "kind",
    "direction",
    "sender",
    "reply_to_external_id",
    "provider_metadata",
    "raw_json",
    "updated_at",
]


def updates_write(pending: Pending) -> None:
    """Write the updated rows, the revisions and the attachments (new messages' too)."""
    if pending.changed:
        Message.objects.bulk_update(pending.changed, _UPDATED_FIELDS)
    if pending.revisions:
        MessageRevision.objects.bulk_create(pending.revisions)
    if pending.attachments:
        Attachment.objects.bulk_create(pending.attachments)
