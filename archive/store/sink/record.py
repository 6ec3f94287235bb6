"""`batch_record`: one bounded batch in one transaction, all or nothing, as named steps."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from archive.people.services import owner_identities_link
from archive.store import changes
from archive.store.domain import Batch, BatchResult, MessageRecord
from archive.store.effects import CALENDAR_STORED, FILES_STORED, STEMS_QUEUED, on_commit_effect
from archive.store.models import ConnectorState, Message, sink_writes
from archive.store.signals import messages_written_send
from archive.store.sink.attachments import attachment_ids_settle, is_calendar, new_attachments
from archive.store.sink.cleaning import batch_check, batch_cleaned
from archive.store.sink.inserts import messages_insert
from archive.store.sink.replies import orphans_adopt, replies_link
from archive.store.sink.updates import (
    Key,
    Pending,
    deletions_plan,
    stored_messages,
    updates_plan,
    updates_write,
)
from archive.store.sink.upserts import Context, context_upsert


def batch_record(
    *,
    batch: Batch,
    then: Callable[[BatchResult], None] | None = None,
    quiet: bool = False,
) -> BatchResult:
    """Record one bounded batch in one transaction; all or nothing. Idempotent.

    `then(result)` runs last inside the same transaction: a caller's own bookkeeping (an
    import's progress) commits with the batch or not at all, without wrapping the call in
    an outer transaction (which would make the batch a savepoint, whose journal copies
    every page the batch touches). `quiet` (or an enclosing `quiet_changes()`): what the
    batch changes is in the changes feed but tells no webhook (history, not news)."""
    batch_check(batch)
    batch = batch_cleaned(batch)
    result = BatchResult()
    now = timezone.now()
    with transaction.atomic(), sink_writes(), changes.quiet_changes(quiet):
        ctx = context_upsert(batch)
        _owner_identities(ctx, batch)
        records = _records_by_key(batch)
        stored = stored_messages(ctx, records, batch.deletions)
        pending = updates_plan(ctx, records, stored, result, now)
        deletions_plan(batch.deletions, stored, pending, result, now)
        new_ids = _fresh_insert(ctx, pending, now)
        result.added = len(new_ids)
        attachment_ids_settle(pending.attachments, records.values())
        updates_write(pending)
        _replies_link(ctx, new_ids, pending)
        _chat_stats_refresh(ctx, pending.fresh, pending.redated)
        _cursor_save(ctx, batch)
        _changes_record(ctx, new_ids, pending, now)
        _written_announce(ctx, pending)
        _index_after_commit(new_ids, pending)
        _calendars_after_commit(pending)
        if then is not None:
            then(result)
    return result


def _owner_identities(ctx: Context, batch: Batch) -> None:
    """The owner's own identities (the account's owner, the senders of what the owner sent)
    belong to the owner's person from the start. Read from the batch's identities in
    memory: a batch whose owner identities are all linked already asks the store nothing."""
    owner = batch.account.owner
    own = [owner.external_id] if owner is not None else []
    sent = [m.sender_external_id for m in batch.messages if m.direction == "out"]
    loose = {
        ctx.identities[ext].pk
        for ext in (*own, *sent)
        if ext and ext in ctx.identities and ctx.identities[ext].person_id is None
    }
    if loose:
        owner_identities_link(
            identity_ids=loose, accounts_own=[ctx.identities[ext].pk for ext in own]
        )


def _records_by_key(batch: Batch) -> dict[Key, MessageRecord]:
    """The batch's messages by key; the same provider id twice in one batch (real exports
    do this): the last wins."""
    return {(msg.chat_external_id, msg.external_id): msg for msg in batch.messages}


def _fresh_insert(ctx: Context, pending: Pending, now: datetime) -> dict[Key, int]:
    """Insert the new messages; their attachments join the pending ones."""
    if not pending.fresh:
        return {}
    new_ids = messages_insert(ctx, pending.fresh, pending.fresh_deleted, now)
    for key, record in pending.fresh.items():
        pending.attachments.extend(new_attachments(new_ids[key], record.attachments, set()))
    return new_ids


def _replies_link(ctx: Context, new_ids: dict[Key, int], pending: Pending) -> None:
    """Replies stored earlier meet their new parents; updated messages meet theirs."""
    if new_ids:
        orphans_adopt(ctx, new_ids)
    if pending.changed:
        replies_link(ctx, pending.changed)


def _chat_stats_refresh(
    ctx: Context, fresh: dict[Key, MessageRecord], redated: list[Message]
) -> None:
    """Each chat's message count and latest time, kept so the chat list sorts without
    scanning messages (a stored estimate replaced by a later time moves the latter too)."""
    added: dict[str, int] = {}
    latest: dict[str, datetime] = {}
    for (chat_ext, _), record in fresh.items():
        added[chat_ext] = added.get(chat_ext, 0) + 1
        if chat_ext not in latest or record.sent_at > latest[chat_ext]:
            latest[chat_ext] = record.sent_at
    chat_ext_by_id = {chat.pk: ext for ext, chat in ctx.chats.items()} if redated else {}
    for message in redated:
        chat_ext = chat_ext_by_id[message.chat_id]
        added.setdefault(chat_ext, 0)
        if chat_ext not in latest or message.sent_at > latest[chat_ext]:
            latest[chat_ext] = message.sent_at
    for chat_ext, count in added.items():
        chat = ctx.chats[chat_ext]
        chat.message_count += count
        if chat.last_message_at is None or latest[chat_ext] > chat.last_message_at:
            chat.last_message_at = latest[chat_ext]
        chat.save(update_fields=["message_count", "last_message_at"])


def _cursor_save(ctx: Context, batch: Batch) -> None:
    """The connector's cursor after this batch, committed with it."""
    if batch.cursor is not None:
        ConnectorState.objects.update_or_create(
            account=ctx.account, stream=batch.cursor_stream, defaults={"cursor": batch.cursor}
        )


def _changes_record(ctx: Context, new_ids: dict[Key, int], pending: Pending, now: datetime) -> None:
    """The changes feed: every message added, edited and tombstoned, set-wise."""
    if new_ids:
        chat_pks = {ext: chat.pk for ext, chat in ctx.chats.items()}
        changes.messages_added(  # the ids were given out in the records' order
            first_id=min(new_ids.values()),
            chat_ids=[chat_pks[chat_ext] for chat_ext, _ in new_ids],
            at=now,
        )
    changes.messages_changed(
        kind=changes.ChangeKind.MESSAGE_EDITED, message_ids=pending.edited, at=now
    )
    changes.messages_changed(
        kind=changes.ChangeKind.MESSAGE_TOMBSTONED, message_ids=pending.tombstoned, at=now
    )


def _written_announce(ctx: Context, pending: Pending) -> None:
    """Tell the apps built on the store which chats grew and which had stored messages
    changed (the conversations mark what each needs), in this transaction."""
    grown = {ctx.chats[chat_ext].pk for chat_ext, _ in pending.fresh}
    rewritten = {message.chat_id for message in (*pending.changed, *pending.redated)}
    messages_written_send(grown=grown, rewritten=rewritten, removed=pending.tombstoned)


def _index_after_commit(new_ids: dict[Key, int], pending: Pending) -> None:
    """Messages inserted or rewritten wait in the stems queue: once the batch commits, the
    index job is asked to make their stems (a search never does)."""
    if new_ids or pending.changed:
        on_commit_effect(STEMS_QUEUED)
    if any(attachment.path for attachment in pending.attachments):
        on_commit_effect(FILES_STORED)  # and their files' text is read


def _calendars_after_commit(pending: Pending) -> None:
    """Each calendar file stored now (an invitation in a mail; never one stored before, so
    a re-delivery asks nothing) is announced once the batch commits: the meetings read it."""
    for attachment in pending.attachments:
        if is_calendar(attachment):
            on_commit_effect(CALENDAR_STORED, public_id=attachment.public_id)
