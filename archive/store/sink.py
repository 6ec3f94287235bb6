"""THE write path for messages.

Every message, and everything that comes with it (chat and identity upserts, attachments,
edits as revisions, deletions as tombstones, the connector cursor), is recorded here, one
bounded batch per transaction, all or nothing. Re-delivering a message (same account, chat
and provider id) with the same content changes nothing. Nothing else writes Message rows:
the models refuse it, and a test scans the code for it.
"""

from __future__ import annotations

import contextvars
import json
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Max, Q
from django.utils import timezone

from archive.store.domain import (
    CHAT_KINDS,
    DIRECTIONS,
    MAX_BATCH_MESSAGES,
    MESSAGE_KINDS,
    AccountRecord,
    AttachmentRecord,
    Batch,
    BatchResult,
    ChatRecord,
    IdentityRecord,
    MessageRecord,
)
from archive.store.ids import new_public_ids
from archive.store.models import (
    Account,
    Attachment,
    Chat,
    ConnectorState,
    Identity,
    Message,
    MessageRevision,
    sink_writes,
)
from wirecat.db.values import db_time, without_surrogates
from wirecat.errors import Invalid


def normalize_text(text: str) -> str:
    """NFC-normalise and drop NUL characters (SQLite functions stop at them)."""
    return unicodedata.normalize("NFC", text.replace("\x00", ""))


def _validate(batch: Batch) -> None:
    where = f"batch for {batch.account.provider}:{batch.account.external_id}"
    if not batch.account.provider or not batch.account.external_id:
        raise Invalid(f"{where}: the account needs a provider and an external id")
    if len(batch.messages) + len(batch.deletions) > MAX_BATCH_MESSAGES:
        raise Invalid(
            f"{where}: {len(batch.messages) + len(batch.deletions)} records; "
            f"a batch holds at most {MAX_BATCH_MESSAGES}"
        )
    for chat in batch.chats:
        if not chat.external_id:
            raise Invalid(f"{where}: a chat has no external id")
        if chat.kind not in CHAT_KINDS:
            raise Invalid(f"{where}: chat {chat.external_id!r} has unknown kind {chat.kind!r}")
    for index, msg in enumerate(batch.messages):
        problem = _message_problem(msg)
        if problem:
            raise Invalid(f"{where}, message #{index} ({msg.external_id!r}): {problem}")
    for deletion in batch.deletions:
        if deletion.deleted_at.tzinfo is None:
            raise Invalid(f"{where}: deletion of {deletion.external_id!r} needs an aware time")


def _clean_message(msg: MessageRecord) -> MessageRecord:
    """The record with every lone surrogate in its text fields replaced by U+FFFD: Python
    strings can hold one (an export that cut an emoji in two), SQLite text cannot."""
    try:  # one C-speed check for the whole record; it fails only on a lone surrogate
        "".join(
            (
                msg.chat_external_id,
                msg.external_id,
                msg.text,
                msg.sender_external_id or "",
                msg.reply_to_external_id,
                msg.raw_json,
            )
        ).encode()
    except UnicodeEncodeError:
        return replace(
            msg,
            chat_external_id=without_surrogates(msg.chat_external_id),
            external_id=without_surrogates(msg.external_id),
            text=without_surrogates(msg.text),
            sender_external_id=msg.sender_external_id
            and without_surrogates(msg.sender_external_id),
            reply_to_external_id=without_surrogates(msg.reply_to_external_id),
            raw_json=without_surrogates(msg.raw_json),
        )
    return msg


def _without_surrogates(batch: Batch) -> Batch:
    """The batch with no lone surrogate in any text the sink looks up or stores as text
    (metadata is cleaned where it is encoded)."""
    messages = tuple(_clean_message(msg) for msg in batch.messages)
    if all(clean is msg for clean, msg in zip(messages, batch.messages, strict=True)):
        messages = batch.messages
    try:
        "".join(
            [d.chat_external_id + d.external_id for d in batch.deletions]
            + [c.external_id + c.title for c in batch.chats]
            + [
                i.external_id + i.display_name + i.phone + i.email + i.handle
                for i in batch.identities
            ]
        ).encode()
        people_ok = True
    except UnicodeEncodeError:
        people_ok = False
    if people_ok and messages is batch.messages:
        return batch
    if people_ok:
        return replace(batch, messages=messages)
    return replace(
        batch,
        messages=messages,
        deletions=tuple(
            replace(
                d,
                chat_external_id=without_surrogates(d.chat_external_id),
                external_id=without_surrogates(d.external_id),
            )
            for d in batch.deletions
        ),
        chats=tuple(
            replace(
                c, external_id=without_surrogates(c.external_id), title=without_surrogates(c.title)
            )
            for c in batch.chats
        ),
        identities=tuple(
            replace(
                i,
                **{
                    name: without_surrogates(getattr(i, name))
                    for name in ("external_id", "display_name", "phone", "email", "handle")
                },
            )
            for i in batch.identities
        ),
    )


def _message_problem(msg: MessageRecord) -> str:
    """What makes this record unfit for the store ("" when nothing)."""
    if not msg.external_id or not msg.chat_external_id:
        return "needs an external id and a chat"
    for name, value in (
        ("sent_at", msg.sent_at),
        ("edited_at", msg.edited_at),
        ("deleted_at", msg.deleted_at),
    ):
        if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
            return f"{name} must be a timezone-aware datetime"
    if msg.direction not in DIRECTIONS:
        return f"unknown direction {msg.direction!r}"
    if msg.kind not in MESSAGE_KINDS:
        return f"unknown kind {msg.kind!r}"
    return ""


@dataclass
class _Context:
    account: Account
    chats: dict[str, Chat]
    identities: dict[str, Identity]


def _upsert_account(batch: Batch) -> Account:
    record = batch.account
    account, created = Account.objects.get_or_create(
        provider=record.provider, external_id=record.external_id, defaults={"name": record.name}
    )
    if not created and record.name and account.name != record.name:
        account.name = record.name
        account.save(update_fields=["name"])
    return account


def _upsert_identities(provider: str, records: Iterable[IdentityRecord]) -> dict[str, Identity]:
    wanted: dict[str, IdentityRecord] = {}
    for record in records:
        if not record.external_id:
            raise Invalid(f"an identity of {provider} has no external id")
        wanted[record.external_id] = record
    if not wanted:
        return {}
    existing = {
        ident.external_id: ident
        for ident in Identity.objects.filter(provider=provider, external_id__in=list(wanted))
    }
    fields = ("display_name", "phone", "email", "handle")
    fresh = [
        Identity(
            provider=provider,
            external_id=external_id,
            **{name: getattr(record, name) for name in fields},
        )
        for external_id, record in wanted.items()
        if external_id not in existing
    ]
    if fresh:
        Identity.objects.bulk_create(fresh)  # SQLite returns the new primary keys
        existing.update((ident.external_id, ident) for ident in fresh)
    created = {ident.external_id for ident in fresh}
    for external_id, record in wanted.items():
        if external_id in created:
            continue
        ident = existing[external_id]
        changed = [
            name
            for name in fields
            if getattr(record, name) and getattr(record, name) != getattr(ident, name)
        ]
        if changed:
            for name in changed:
                setattr(ident, name, getattr(record, name))
            ident.save(update_fields=[*changed, "updated_at"])
    return existing


def _upsert_chats(account: Account, records: Iterable[ChatRecord]) -> dict[str, Chat]:
    wanted = {record.external_id: record for record in records}
    existing = {
        chat.external_id: chat
        for chat in Chat.objects.filter(account=account, external_id__in=list(wanted))
    }
    for external_id, record in wanted.items():
        chat = existing.get(external_id)
        if chat is None:
            existing[external_id] = Chat.objects.create(
                account=account,
                external_id=external_id,
                kind=record.kind,
                title=record.title,
                provider_metadata=record.metadata,
            )
            continue
        changed = []
        if record.kind != chat.kind:
            chat.kind = record.kind
            changed.append("kind")
        if record.title and record.title != chat.title:
            chat.title = record.title
            changed.append("title")
        if record.metadata and record.metadata != chat.provider_metadata:
            chat.provider_metadata = record.metadata
            changed.append("provider_metadata")
        if changed:
            chat.save(update_fields=changed)
    return existing


def _resolve_chats(ctx: _Context, external_ids: set[str]) -> None:
    unknown = external_ids - set(ctx.chats)
    if unknown:
        for chat in Chat.objects.filter(account=ctx.account, external_id__in=list(unknown)):
            ctx.chats[chat.external_id] = chat
    still = external_ids - set(ctx.chats)
    if still:
        raise Invalid(
            f"messages refer to chats that are neither in the batch nor known: {sorted(still)[:5]}"
        )


def _resolve_senders(ctx: _Context, external_ids: set[str]) -> None:
    unknown = external_ids - set(ctx.identities)
    if not unknown:
        return
    provider = ctx.account.provider
    for ident in Identity.objects.filter(provider=provider, external_id__in=list(unknown)):
        ctx.identities[ident.external_id] = ident
    # A sender the batch did not describe still becomes an Identity of that provider.
    missing = [IdentityRecord(external_id=ext) for ext in unknown - set(ctx.identities)]
    ctx.identities.update(_upsert_identities(provider, missing))


def _attachment_key(record: AttachmentRecord, index: int) -> str:
    return record.external_id or (f"sha256:{record.sha256}" if record.sha256 else f"#{index}")


def _new_attachments(
    message_id: int, records: Iterable[AttachmentRecord], have: set[str]
) -> list[Attachment]:
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


def _apply_update(
    existing: Message,
    record: MessageRecord,
    ctx: _Context,
    revisions: list[MessageRevision],
    now: datetime,
) -> tuple[bool, bool]:
    """Bring `existing` up to `record`. Returns (changed, tombstoned)."""
    changed = False
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
            changed = True
    elif (
        record.edited_at
        and existing.edited_at != record.edited_at
        and (existing.edited_at is None or record.edited_at > existing.edited_at)
    ):
        existing.edited_at = record.edited_at
        changed = True
    sender = ctx.identities.get(record.sender_external_id) if record.sender_external_id else None
    simple = {
        "kind": record.kind,
        "direction": record.direction,
        "reply_to_external_id": record.reply_to_external_id,
        "provider_metadata": record.metadata,
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
    return changed, tombstoned


_quiet: contextvars.ContextVar[bool] = contextvars.ContextVar("sink_quiet", default=False)


@contextmanager
def quiet_changes() -> Iterator[None]:
    """Within: messages added are in the changes feed but tell no webhook (an import of
    history is not news)."""
    token = _quiet.set(True)
    try:
        yield
    finally:
        _quiet.reset(token)


def batch_record(*, batch: Batch, then: Callable[[BatchResult], None] | None = None) -> BatchResult:
    """Record one bounded batch in one transaction; all or nothing. Idempotent.

    `then(result)` runs last inside the same transaction: a caller's own bookkeeping (an
    import's progress) commits with the batch or not at all, without wrapping the call in
    an outer transaction (which would make the batch a savepoint, whose journal copies
    every page the batch touches)."""
    _validate(batch)
    batch = _without_surrogates(batch)
    result = BatchResult()
    now = timezone.now()
    with transaction.atomic(), sink_writes():
        account = _upsert_account(batch)
        identity_records = list(batch.identities)
        if batch.account.owner is not None:
            identity_records.append(batch.account.owner)
        ctx = _Context(
            account=account,
            chats=_upsert_chats(account, batch.chats),
            identities=_upsert_identities(account.provider, identity_records),
        )
        if batch.account.owner is not None:
            owner = ctx.identities[batch.account.owner.external_id]
            if account.owner_identity_id != owner.pk:
                account.owner_identity = owner
                account.save(update_fields=["owner_identity"])

        _resolve_chats(
            ctx,
            {m.chat_external_id for m in batch.messages}
            | {d.chat_external_id for d in batch.deletions},
        )
        _resolve_senders(
            ctx, {m.sender_external_id for m in batch.messages if m.sender_external_id}
        )

        # The same provider id twice in one batch (real exports do this): the last wins.
        records: dict[tuple[str, str], MessageRecord] = {}
        for msg in batch.messages:
            records[(msg.chat_external_id, msg.external_id)] = msg
        by_chat: dict[str, list[str]] = {}
        for chat_ext, msg_ext in records:
            by_chat.setdefault(chat_ext, []).append(msg_ext)
        for deletion in batch.deletions:
            by_chat.setdefault(deletion.chat_external_id, []).append(deletion.external_id)
        existing: dict[tuple[str, str], Message] = {}
        known = _stored_ids(
            account.pk, {ctx.chats[chat_ext].pk: ids for chat_ext, ids in by_chat.items()}
        )
        if known:
            chat_ext_by_id = {chat.pk: ext for ext, chat in ctx.chats.items()}
            for message in Message.objects.filter(pk__in=known):
                existing[(chat_ext_by_id[message.chat_id], message.external_id)] = message

        attachment_keys: dict[int, set[str]] = {}
        for message_id, att_key in Attachment.objects.filter(
            message_id__in=[m.pk for m in existing.values()]
        ).values_list("message_id", "external_id"):
            attachment_keys.setdefault(message_id, set()).add(att_key)

        new_records: dict[tuple[str, str], MessageRecord] = {}
        new_deleted: dict[tuple[str, str], datetime] = {}
        changed_messages: list[Message] = []
        revisions: list[MessageRevision] = []
        attachments: list[Attachment] = []
        for key, record in records.items():
            found = existing.get(key)
            if found is None:
                new_records[key] = record
                continue
            message = found
            changed, tombstoned = _apply_update(message, record, ctx, revisions, now)
            have = attachment_keys.setdefault(message.pk, set())
            extra = _new_attachments(message.pk, record.attachments, have)
            attachments.extend(extra)
            if changed or tombstoned:
                message.updated_at = now
                changed_messages.append(message)
            if changed or extra:
                result.updated += 1
            elif tombstoned:
                pass
            else:
                result.unchanged += 1
            if tombstoned:
                result.tombstoned += 1

        for deletion in batch.deletions:
            key = (deletion.chat_external_id, deletion.external_id)
            fresh = new_records.get(key)
            if fresh is not None:  # added and deleted within one batch
                if fresh.deleted_at is None and key not in new_deleted:
                    new_deleted[key] = deletion.deleted_at
                    result.tombstoned += 1
                continue
            gone = existing.get(key)
            if gone is not None and gone.deleted_at is None:
                gone.deleted_at = deletion.deleted_at
                gone.updated_at = now
                if gone not in changed_messages:
                    changed_messages.append(gone)
                result.tombstoned += 1

        new_ids: dict[tuple[str, str], int] = {}
        if new_records:
            new_ids = _insert_messages(ctx, new_records, new_deleted, now)
            for key, record in new_records.items():
                attachments.extend(_new_attachments(new_ids[key], record.attachments, set()))
            result.added = len(new_records)
        if changed_messages:
            Message.objects.bulk_update(
                changed_messages,
                [
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
                ],
            )
        if revisions:
            MessageRevision.objects.bulk_create(revisions)
        if attachments:
            Attachment.objects.bulk_create(attachments)

        if new_records:
            _adopt_orphans(ctx, new_ids)
        if changed_messages:
            _link_replies(ctx, changed_messages)
        _refresh_chat_stats(ctx, new_records)
        if batch.cursor is not None:
            ConnectorState.objects.update_or_create(
                account=account, stream=batch.cursor_stream, defaults={"cursor": batch.cursor}
            )
        if then is not None:
            then(result)
    return result


# A batch is inserted with executemany: measured against one `json_each` statement over
# the batch as a JSON array, it costs half the time per row (14 against 30 us), the JSON
# encoding included.
_INSERT_MESSAGES = (
    "INSERT INTO archive_message (id, public_id, account_id, chat_id, external_id, sender_id,"
    " sent_at, text, kind, direction, reply_to_external_id, reply_to_id, edited_at,"
    " deleted_at, delivery_status, raw_json, provider_metadata, created_at, updated_at)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, '', %s, %s, %s, %s)"
)
# The next id AUTOINCREMENT would give: above every id ever used, even purged ones.
_NEXT_MESSAGE_ID = (
    "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'archive_message'), 0),"
    " coalesce((SELECT max(id) FROM archive_message), 0)) + 1"
)
_CHUNK = 5_000
# The FTS5 tables kept over archive_message.text (migrations 0002, 0003).
FTS_TABLES = ("message_fts", "message_trigram")


# One encoder for every row (json.dumps with options builds a new one per call).
_to_json = json.JSONEncoder(ensure_ascii=False).encode


def _db_time(value: datetime | None) -> str | None:
    return None if value is None else db_time(value)


def _chunks(values: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


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


def _ids_of(account_id: int, chat_id: int, external_ids: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    with connection.cursor() as cursor:
        for chunk in _chunks(external_ids):
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(
                "SELECT external_id, id FROM archive_message WHERE account_id = %s AND chat_id = %s"
                f" AND external_id IN ({marks})",
                [account_id, chat_id, *chunk],
            )
            found.update(cursor.fetchall())
    return found


def _insert_messages(
    ctx: _Context,
    records: dict[tuple[str, str], MessageRecord],
    deleted: dict[tuple[str, str], datetime],
    now: datetime,
) -> dict[tuple[str, str], int]:
    """Insert new messages with one executemany (the ORM's per-value work dominated large
    imports), replies already pointing at their parents, and index them in both FTS
    tables; returns their rowids."""
    stamp = _db_time(now)
    with connection.cursor() as cursor:
        # This transaction holds SQLite's write lock (BEGIN IMMEDIATE), so the ids from
        # here on are ours: giving them out now lets a reply name a parent of its own
        # batch in the row itself instead of in a second pass over the table.
        cursor.execute(_NEXT_MESSAGE_ID)
        first = int(cursor.fetchone()[0])
        ids = {key: first + offset for offset, key in enumerate(records)}
        parents = _parent_ids(ctx, records, ids)
        account_id = ctx.account.pk
        chat_ids = {ext: chat.pk for ext, chat in ctx.chats.items()}
        sender_ids = {ext: ident.pk for ext, ident in ctx.identities.items()}
        rows = []
        public_ids = new_public_ids("msg", len(records))
        for public_id, (key, record) in zip(public_ids, records.items(), strict=True):
            metadata = _to_json(record.metadata) if record.metadata else "{}"
            if not metadata.isascii():
                metadata = without_surrogates(metadata)
            rows.append(
                (
                    ids[key],
                    public_id,
                    account_id,
                    chat_ids[record.chat_external_id],
                    record.external_id,
                    sender_ids.get(record.sender_external_id or ""),
                    _db_time(record.sent_at),
                    normalize_text(record.text),
                    record.kind,
                    record.direction,
                    record.reply_to_external_id,
                    parents.get(key),
                    _db_time(record.edited_at),
                    _db_time(record.deleted_at or deleted.get(key)),
                    record.raw_json,
                    metadata,
                    stamp,
                    stamp,
                )
            )
        cursor.executemany(_INSERT_MESSAGES, rows)
        # The sink indexes what it inserts, set-wise (migration 0008): one statement per
        # FTS table instead of a trigger call per row; stems are made from the queue.
        for table in FTS_TABLES:
            cursor.execute(
                f"INSERT INTO {table}(rowid, text) SELECT id, text FROM archive_message"
                " WHERE id >= %s",
                [first],
            )
        cursor.execute(
            "INSERT OR IGNORE INTO archive_stem_queue (message_id)"
            " SELECT id FROM archive_message WHERE id >= %s",
            [first],
        )
        # The changes feed (agents poll it): one row per new message, set-wise too.
        cursor.execute(
            "INSERT INTO archive_change (kind, message_pk, chat_pk, tag, target_kind, at, quiet)"
            " SELECT 'message.added', id, chat_id, '', '', %s, %s FROM archive_message"
            " WHERE id >= %s ORDER BY id",
            [stamp, int(_quiet.get()), first],
        )
    return ids


def _parent_ids(
    ctx: _Context, records: dict[tuple[str, str], MessageRecord], ids: dict[tuple[str, str], int]
) -> dict[tuple[str, str], int]:
    """The stored or same-batch parent of every new reply whose parent is known."""
    wanted: dict[str, set[str]] = {}
    for (chat_ext, _), record in records.items():
        parent = record.reply_to_external_id
        if parent and (chat_ext, parent) not in ids:
            wanted.setdefault(chat_ext, set()).add(parent)
    known: dict[tuple[str, str], int] = dict(ids)
    for chat_ext, parents in wanted.items():
        found = _ids_of(ctx.account.pk, ctx.chats[chat_ext].pk, sorted(parents))
        for external_id, pk in found.items():
            known[(chat_ext, external_id)] = pk
    linked: dict[tuple[str, str], int] = {}
    for key, record in records.items():
        if record.reply_to_external_id:
            parent_id = known.get((key[0], record.reply_to_external_id))
            if parent_id is not None and parent_id != ids[key]:
                linked[key] = parent_id
    return linked


# (parent id, child id) pairs as one JSON array: one statement, one step.
_SET_REPLY_TO = (
    "UPDATE archive_message SET reply_to_id = pair.value ->> 0 FROM json_each(%s) AS pair"
    " WHERE archive_message.id = pair.value ->> 1"
)


def _adopt_orphans(ctx: _Context, ids: dict[tuple[str, str], int]) -> None:
    """Point replies stored before their parent (a later export, another batch) at the
    parents just inserted."""
    by_chat: dict[str, list[str]] = {}
    for chat_ext, external_id in ids:
        by_chat.setdefault(chat_ext, []).append(external_id)
    updates: list[tuple[int, int]] = []
    with connection.cursor() as cursor:
        for chat_ext, external_ids in by_chat.items():
            chat_id = ctx.chats[chat_ext].pk
            cursor.execute(
                "SELECT 1 FROM archive_message WHERE chat_id = %s AND reply_to_id IS NULL"
                " AND reply_to_external_id != '' LIMIT 1",
                [chat_id],
            )
            if cursor.fetchone() is None:
                continue  # no reply in this chat waits for a parent
            for chunk in _chunks(external_ids):
                marks = ", ".join(["%s"] * len(chunk))
                cursor.execute(
                    "SELECT id, reply_to_external_id FROM archive_message WHERE chat_id = %s"
                    " AND reply_to_id IS NULL AND reply_to_external_id != ''"
                    f" AND reply_to_external_id IN ({marks})",
                    [chat_id, *chunk],
                )
                for child_id, parent_ext in cursor.fetchall():
                    parent_id = ids.get((chat_ext, parent_ext))
                    if parent_id is not None and parent_id != child_id:
                        updates.append((parent_id, child_id))
        if updates:
            cursor.execute(_SET_REPLY_TO, [json.dumps(updates)])


def _link_replies(ctx: _Context, touched: list[Message]) -> None:
    """Resolve reply_to for touched messages, and for replies that arrived before a parent."""
    by_chat: dict[int, list[Message]] = {}
    for message in touched:
        by_chat.setdefault(message.chat_id, []).append(message)
    for chat_id, messages in by_chat.items():
        own_ids = [m.external_id for m in messages]
        candidates = list(
            Message.objects.filter(chat_id=chat_id)
            .filter(
                Q(pk__in=[m.pk for m in messages])
                | Q(reply_to__isnull=True, reply_to_external_id__in=own_ids)
            )
            .only("id", "reply_to_external_id", "reply_to_id")
        )
        wanted = {c.reply_to_external_id for c in candidates if c.reply_to_external_id}
        id_by_external = (
            dict(
                Message.objects.filter(
                    account=ctx.account, chat_id=chat_id, external_id__in=wanted
                ).values_list("external_id", "id")
            )
            if wanted
            else {}
        )
        changed = []
        for candidate in candidates:
            parent = id_by_external.get(candidate.reply_to_external_id)
            if parent == candidate.pk:
                parent = None
            if candidate.reply_to_id != parent:
                candidate.reply_to_id = parent
                changed.append(candidate)
        if changed:
            Message.objects.bulk_update(changed, ["reply_to"])


def _refresh_chat_stats(ctx: _Context, new_records: dict[tuple[str, str], MessageRecord]) -> None:
    added: dict[str, int] = {}
    latest: dict[str, datetime] = {}
    for (chat_ext, _), record in new_records.items():
        added[chat_ext] = added.get(chat_ext, 0) + 1
        if chat_ext not in latest or record.sent_at > latest[chat_ext]:
            latest[chat_ext] = record.sent_at
    for chat_ext, count in added.items():
        chat = ctx.chats[chat_ext]
        chat.message_count += count
        if chat.last_message_at is None or latest[chat_ext] > chat.last_message_at:
            chat.last_message_at = latest[chat_ext]
        chat.save(update_fields=["message_count", "last_message_at"])


def message_purge(*, message_ids: Iterable[int]) -> int:
    """The owner's explicit purge: erase messages, their revisions and index entries."""
    ids = list(message_ids)
    if not ids:
        return 0
    with transaction.atomic(), sink_writes():
        doomed = Message.objects.filter(pk__in=ids)
        chats = set(doomed.values_list("chat_id", flat=True))
        count = doomed.count()
        doomed.delete()
        for chat in Chat.objects.filter(pk__in=chats):
            stats = Message.objects.filter(chat=chat).aggregate(latest=Max("sent_at"))
            chat.message_count = Message.objects.filter(chat=chat).count()
            chat.last_message_at = stats["latest"]
            chat.save(update_fields=["message_count", "last_message_at"])
    return count


def outbound_record(
    *, chat: Chat, text: str, send_id: str, reply_to: Message | None, status: str
) -> Message:
    """Write one outbound message (a send) through the batch path, with its delivery
    status; its provider id is the send id until the connector reports its own."""
    account = chat.account
    owner = account.owner_identity
    record = MessageRecord(
        chat_external_id=chat.external_id,
        external_id=send_id,
        sent_at=timezone.now(),
        text=text,
        sender_external_id=owner.external_id if owner is not None else None,
        direction="out",
        reply_to_external_id=reply_to.external_id if reply_to is not None else "",
    )
    with transaction.atomic():
        batch_record(
            batch=Batch(
                account=AccountRecord(
                    provider=account.provider, external_id=account.external_id, name=account.name
                ),
                chats=(
                    ChatRecord(
                        external_id=chat.external_id,
                        kind=chat.kind,
                        title=chat.title,
                        metadata=chat.provider_metadata,
                    ),
                ),
                messages=(record,),
            )
        )
        message = Message.objects.get(account=account, chat=chat, external_id=send_id)
        delivery_set(message_id=message.pk, status=status)
        message.delivery_status = status
    return message


def delivery_set(*, message_id: int, status: str, provider_id: str = "") -> None:
    """Record what became of an outbound message (and the provider's id for it)."""
    with transaction.atomic(), sink_writes():
        message = Message.objects.filter(pk=message_id).first()
        if message is None:
            return
        message.delivery_status = status
        fields = ["delivery_status", "updated_at"]
        if provider_id:
            message.provider_metadata = {**message.provider_metadata, "provider_id": provider_id}
            fields.append("provider_metadata")
        message.save(update_fields=fields)
