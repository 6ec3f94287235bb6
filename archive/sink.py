"""THE write path for messages.

Every message, and everything that comes with it (chat and identity upserts, attachments,
edits as revisions, deletions as tombstones, the connector cursor), is recorded here, one
bounded batch per transaction, all or nothing. Re-delivering a message (same account, chat
and provider id) with the same content changes nothing. Nothing else writes Message rows:
the models refuse it, and a test scans the code for it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from archive.domain import (
    CHAT_KINDS,
    DIRECTIONS,
    MAX_BATCH_MESSAGES,
    MESSAGE_KINDS,
    AttachmentRecord,
    Batch,
    BatchResult,
    ChatRecord,
    IdentityRecord,
    MessageRecord,
)
from archive.models import (
    Account,
    Attachment,
    Chat,
    ConnectorState,
    Identity,
    Message,
    MessageRevision,
    sink_writes,
)
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
        label = f"{where}, message #{index} ({msg.external_id!r})"
        if not msg.external_id or not msg.chat_external_id:
            raise Invalid(f"{label}: needs an external id and a chat")
        for name, value in (
            ("sent_at", msg.sent_at),
            ("edited_at", msg.edited_at),
            ("deleted_at", msg.deleted_at),
        ):
            if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
                raise Invalid(f"{label}: {name} must be a timezone-aware datetime")
        if msg.direction not in DIRECTIONS:
            raise Invalid(f"{label}: unknown direction {msg.direction!r}")
        if msg.kind not in MESSAGE_KINDS:
            raise Invalid(f"{label}: unknown kind {msg.kind!r}")
    for deletion in batch.deletions:
        if deletion.deleted_at.tzinfo is None:
            raise Invalid(f"{where}: deletion of {deletion.external_id!r} needs an aware time")


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
    for external_id, record in wanted.items():
        ident = existing.get(external_id)
        if ident is None:
            existing[external_id] = Identity.objects.create(
                provider=provider,
                external_id=external_id,
                **{name: getattr(record, name) for name in fields},
            )
            continue
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
    message: Message, records: Iterable[AttachmentRecord], have: set[str]
) -> list[Attachment]:
    rows = []
    for index, record in enumerate(records):
        key = _attachment_key(record, index)
        if key in have:
            continue
        have.add(key)
        rows.append(
            Attachment(
                message=message,
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


def batch_record(*, batch: Batch) -> BatchResult:
    """Record one bounded batch in one transaction; all or nothing. Idempotent."""
    _validate(batch)
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
        for chat_ext, ids in by_chat.items():
            chat = ctx.chats[chat_ext]
            for message in Message.objects.filter(chat=chat, external_id__in=ids):
                existing[(chat_ext, message.external_id)] = message

        attachment_keys: dict[int, set[str]] = {}
        for message_id, att_key in Attachment.objects.filter(
            message_id__in=[m.pk for m in existing.values()]
        ).values_list("message_id", "external_id"):
            attachment_keys.setdefault(message_id, set()).add(att_key)

        new_messages: list[Message] = []
        new_records: list[MessageRecord] = []
        new_by_key: dict[tuple[str, str], Message] = {}
        changed_messages: list[Message] = []
        revisions: list[MessageRevision] = []
        attachments: list[Attachment] = []
        for key, record in records.items():
            found = existing.get(key)
            if found is None:
                chat = ctx.chats[record.chat_external_id]
                new_messages.append(
                    Message(
                        account=account,
                        chat=chat,
                        external_id=record.external_id,
                        sender=ctx.identities.get(record.sender_external_id or ""),
                        sent_at=record.sent_at,
                        text=normalize_text(record.text),
                        kind=record.kind,
                        direction=record.direction,
                        reply_to_external_id=record.reply_to_external_id,
                        edited_at=record.edited_at,
                        deleted_at=record.deleted_at,
                        raw_json=record.raw_json,
                        provider_metadata=record.metadata,
                    )
                )
                new_records.append(record)
                new_by_key[key] = new_messages[-1]
                continue
            message = found
            changed, tombstoned = _apply_update(message, record, ctx, revisions, now)
            have = attachment_keys.setdefault(message.pk, set())
            extra = _new_attachments(message, record.attachments, have)
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
            fresh = new_by_key.get(key)
            if fresh is not None:  # added and deleted within one batch
                if fresh.deleted_at is None:
                    fresh.deleted_at = deletion.deleted_at
                    result.tombstoned += 1
                continue
            gone = existing.get(key)
            if gone is not None and gone.deleted_at is None:
                gone.deleted_at = deletion.deleted_at
                gone.updated_at = now
                if gone not in changed_messages:
                    changed_messages.append(gone)
                result.tombstoned += 1

        if new_messages:
            Message.objects.bulk_create(new_messages)
            for message, record in zip(new_messages, new_records, strict=True):
                attachments.extend(_new_attachments(message, record.attachments, set()))
            result.added = len(new_messages)
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

        _link_replies(ctx, new_messages + changed_messages)
        _refresh_chat_stats(ctx, new_messages)
        if batch.cursor is not None:
            ConnectorState.objects.update_or_create(
                account=account, stream=batch.cursor_stream, defaults={"cursor": batch.cursor}
            )
    return result


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
                Message.objects.filter(chat_id=chat_id, external_id__in=wanted).values_list(
                    "external_id", "id"
                )
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


def _refresh_chat_stats(ctx: _Context, new_messages: list[Message]) -> None:
    touched = {m.chat_id for m in new_messages}
    for chat in ctx.chats.values():
        if chat.pk not in touched:
            continue
        added = [m for m in new_messages if m.chat_id == chat.pk]
        latest = max(m.sent_at for m in added)
        chat.message_count += len(added)
        if chat.last_message_at is None or latest > chat.last_message_at:
            chat.last_message_at = latest
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
