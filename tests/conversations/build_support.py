"""What the build tests share: messages written through the sink, agent answers stored as
the batches store them, and the current build read back."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.utils import timezone

from archive.conversations.models import (
    Conversation,
    ConversationAnswer,
    ConversationLink,
    ConversationState,
    Need,
)
from archive.conversations.selectors import chat_links
from archive.conversations.services import writer
from archive.conversations.services.answers import prints_of
from archive.conversations.services.state import chats_mark
from archive.store.domain import MessageRecord
from archive.store.models import Chat, Message
from archive.store.sink import batch_record
from tests.factories import batch, message

SENDERS = ("alice", "bob", "me")


def record(*messages: MessageRecord, **extra: Any) -> None:
    batch_record(batch=batch(*messages, **extra))


def talk(count: int, *, start: int = 0, chat: str = "chat-1", **extra: Any) -> list[MessageRecord]:
    """`count` messages a minute apart, external ids start+1…, senders in turn."""
    return [
        message(
            str(n),
            f"line {n} about topic {n % 7}",
            chat=chat,
            sender=SENDERS[n % 3],
            minutes=n,
            **extra,
        )
        for n in range(start + 1, start + count + 1)
    ]


def pk(external_id: str, chat: str = "chat-1") -> int:
    return Message.objects.get(external_id=external_id, chat__external_id=chat).pk


def answer(external_id: str, parent: str | None, *, confidence: float = 0.9) -> None:
    """The agent's answer as the batches store it: with the prints of its message and
    parent as they are now."""
    message_pk = pk(external_id)
    parent_pk = pk(parent) if parent is not None else None
    prints = prints_of([message_pk] + ([parent_pk] if parent_pk else []))
    chat_id = Message.objects.get(pk=message_pk).chat_id
    ConversationAnswer.objects.update_or_create(
        message_id=message_pk,
        defaults={
            "chat_id": chat_id,
            "parent_id": parent_pk,
            "confidence": confidence,
            "model": "test-model 1",
            "message_print": prints[message_pk],
            "parent_print": prints[parent_pk] if parent_pk else "",
            "answered_at": timezone.now(),
        },
    )
    chats_mark(chat_ids=[chat_id], need=Need.REBUILD)  # as storing answers does


def answers_start(external_ids: list[str]) -> None:
    """Many answers "starts a conversation" at once."""
    pks = dict(Message.objects.filter(external_id__in=external_ids).values_list("pk", "chat_id"))
    prints = prints_of(pks)
    ConversationAnswer.objects.bulk_create(
        ConversationAnswer(
            message_id=message_pk,
            chat_id=chat_id,
            parent_id=None,
            confidence=0.8,
            model="test-model 1",
            message_print=prints[message_pk],
            answered_at=timezone.now(),
        )
        for message_pk, chat_id in pks.items()
    )
    chats_mark(chat_ids=set(pks.values()), need=Need.REBUILD)


def links(chat_id: int) -> dict[str, str]:
    return dict(chat_links(chat_id))


def link_rows(chat_id: int) -> dict[str, tuple[str | None, str, float]]:
    """External id -> (parent's external id, source, confidence) in the current build."""
    state = ConversationState.objects.get(chat_id=chat_id)
    external = dict(Message.objects.filter(chat_id=chat_id).values_list("pk", "external_id"))
    return {
        external[row.message_id]: (
            external.get(row.parent_id) if row.parent_id else None,
            row.source,
            row.confidence,
        )
        for row in ConversationLink.objects.filter(build_id=state.current_id)
    }


def rows_of(chat_id: int) -> set[tuple[object, ...]]:
    """The current build's conversation rows, comparable across builds."""
    state = ConversationState.objects.get(chat_id=chat_id)
    return {
        (c.root_id, c.first_at, c.last_at, c.message_count, tuple(c.participants), c.title)
        for c in Conversation.objects.filter(build_id=state.current_id)
    }


def title(text: str) -> str:
    first = next(" ".join(raw.split()) for raw in text.splitlines() if raw.strip())
    cut = writer.TITLE_CHARS
    return first if len(first) <= cut else first[: cut - 1] + "…"


def expected_rows(chat_id: int) -> set[tuple[object, ...]]:
    """The conversation rows the current build's links imply, worked out from scratch."""
    state = ConversationState.objects.get(chat_id=chat_id)
    messages = {m.pk: m for m in Message.objects.filter(chat_id=chat_id)}
    members: dict[int, list[Message]] = {}
    for link in ConversationLink.objects.filter(build_id=state.current_id):
        members.setdefault(link.conversation_id, []).append(messages[link.message_id])
    out: set[tuple[object, ...]] = set()
    for found in members.values():
        found.sort(key=lambda m: (m.sent_at, m.pk))
        senders = Counter(m.sender_id for m in found if m.sender_id)
        titled = [title(m.text) for m in found if m.kind != "service" and m.text.strip()]
        out.add(
            (
                found[0].pk,
                found[0].sent_at,
                found[-1].sent_at,
                len(found),
                tuple(s for s, _ in senders.most_common(writer.PARTICIPANTS_KEPT)),
                titled[0] if titled else "",
            )
        )
    return out


def chat() -> Chat:
    return Chat.objects.get(external_id="chat-1")
