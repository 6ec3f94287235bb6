"""The sink's other writes: the owner's purge, outbound messages (sends) and what became
of them."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from archive.store.domain import AccountRecord, Batch, ChatRecord, MessageRecord
from archive.store.effects import STEMS_QUEUED, on_commit_effect
from archive.store.models import Chat, DeliveryStatus, Message, sink_writes
from archive.store.signals import messages_written_send
from archive.store.sink.record import batch_record


def message_purge(*, message_ids: Iterable[int]) -> int:
    """The owner's explicit purge: erase messages, their revisions and index entries."""
    ids = list(message_ids)
    if not ids:
        return 0
    with transaction.atomic(), sink_writes():
        doomed = Message.objects.filter(pk__in=ids)
        chats = set(doomed.values_list("chat_id", flat=True))
        count = doomed.count()
        # Before the rows go: what was built of them is found through them.
        messages_written_send(removed=ids)
        doomed.delete()
        for chat in Chat.objects.filter(pk__in=chats):
            stats = Message.objects.filter(chat=chat).aggregate(latest=Max("sent_at"))
            chat.message_count = Message.objects.filter(chat=chat).count()
            chat.last_message_at = stats["latest"]
            chat.save(update_fields=["message_count", "last_message_at"])
        on_commit_effect(STEMS_QUEUED)  # their stems go too
        messages_written_send(rewritten=chats)
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


# Outbound messages that have not gone out (a draft awaiting the owner) or never will
# (refused, failed): kept for the Sends page, but not what the chat last said.
UNSENT = (DeliveryStatus.AWAITING, DeliveryStatus.REFUSED, DeliveryStatus.FAILED)


def delivery_set(*, message_id: int, status: str, provider_id: str = "") -> None:
    """Record what became of an outbound message (and the provider's id for it); the
    chat's latest time follows, so an unsent draft never moves its chat up the list."""
    with transaction.atomic(), sink_writes():
        message = Message.objects.filter(pk=message_id).first()
        if message is None:
            return
        was_unsent = message.delivery_status in UNSENT
        message.delivery_status = status
        fields = ["delivery_status", "updated_at"]
        if provider_id:
            message.provider_metadata = {**message.provider_metadata, "provider_id": provider_id}
            fields.append("provider_metadata")
        message.save(update_fields=fields)
        latest = (
            Message.objects.filter(chat_id=message.chat_id)
            .exclude(delivery_status__in=UNSENT)
            .order_by("-sent_at", "-id")
            .values_list("sent_at", flat=True)
            .first()
        )
        Chat.objects.filter(pk=message.chat_id).update(last_message_at=latest)
        if was_unsent != (status in UNSENT):
            # A draft that went out joins the chat (and a failed send leaves it).
            messages_written_send(rewritten=[message.chat_id])
