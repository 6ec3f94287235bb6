"""The owner's agent's answers: whether each is still fresh (its message and parent as they
were when it was given)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from archive.conversations.domain import message_print
from archive.conversations.models import ConversationAnswer
from archive.store.models import Message


def prints_of(message_ids: Iterable[int]) -> dict[int, str]:
    """The fingerprint of each message as it is now (a purged message has none)."""
    ids = sorted(set(message_ids))
    found: dict[int, str] = {}
    for pk, text, sent_at, deleted_at, sender_id in Message.objects.filter(pk__in=ids).values_list(
        "pk", "text", "sent_at", "deleted_at", "sender_id"
    ):
        found[pk] = message_print(
            text=text, sent_at=sent_at, deleted=deleted_at is not None, sender_id=sender_id
        )
    return found


def answers_freshness(answers: Sequence[ConversationAnswer]) -> dict[int, bool]:
    """Message id -> whether its answer is fresh: the message has the print it was answered
    with, and the parent too (an answer that names a parent the store lost is stale; one
    that says the message starts a conversation depends on the message alone)."""
    wanted = [a.message_id for a in answers] + [a.parent_id for a in answers if a.parent_id]
    prints = prints_of(wanted)
    fresh: dict[int, bool] = {}
    for answer in answers:
        ok = prints.get(answer.message_id) == answer.message_print
        if answer.parent_print:
            ok = ok and answer.parent_id is not None
            ok = ok and prints.get(answer.parent_id or 0) == answer.parent_print
        fresh[answer.message_id] = ok
    return fresh
