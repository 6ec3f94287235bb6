"""Who and where a batch speaks of: its account, chats and identities, created or brought
up to date (a field the batch leaves empty keeps what the store has), and the chats and
senders its messages refer to."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from archive.store.domain import Batch, ChatRecord, IdentityRecord
from archive.store.models import Account, Chat, Identity
from wirecat.errors import Invalid


@dataclass
class Context:
    """The store's rows for what one batch names, by external id."""

    account: Account
    chats: dict[str, Chat]
    identities: dict[str, Identity]


def context_upsert(batch: Batch) -> Context:
    """Upsert the batch's account, chats and identities (the account's owner among them),
    then find the chats and senders its messages name that the batch did not describe: a
    chat must be known already (Invalid if not), a sender becomes a bare identity."""
    account = _upsert_account(batch)
    identity_records = list(batch.identities)
    if batch.account.owner is not None:
        identity_records.append(batch.account.owner)
    ctx = Context(
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
    _resolve_senders(ctx, {m.sender_external_id for m in batch.messages if m.sender_external_id})
    return ctx


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


def _resolve_chats(ctx: Context, external_ids: set[str]) -> None:
    unknown = external_ids - set(ctx.chats)
    if unknown:
        for chat in Chat.objects.filter(account=ctx.account, external_id__in=list(unknown)):
            ctx.chats[chat.external_id] = chat
    still = external_ids - set(ctx.chats)
    if still:
        raise Invalid(
            f"messages refer to chats that are neither in the batch nor known: {sorted(still)[:5]}"
        )


def _resolve_senders(ctx: Context, external_ids: set[str]) -> None:
    unknown = external_ids - set(ctx.identities)
    if not unknown:
        return
    provider = ctx.account.provider
    for ident in Identity.objects.filter(provider=provider, external_id__in=list(unknown)):
        ctx.identities[ident.external_id] = ident
    # A sender the batch did not describe still becomes an Identity of that provider.
    missing = [IdentityRecord(external_id=ext) for ext in unknown - set(ctx.identities)]
    ctx.identities.update(_upsert_identities(provider, missing))
