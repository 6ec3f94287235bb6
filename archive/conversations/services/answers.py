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
    return {
        answer.message_id: answer_fresh(
            message_print=answer.message_print,
            parent_id=answer.parent_id,
            parent_print=answer.parent_print,
            message_now=prints.get(answer.message_id),
            parent_now=None if answer.parent_id is None else prints.get(answer.parent_id),
        )
        for answer in answers
    }


def answer_fresh(
    *,
    message_print: str,
    parent_id: int | None,
    parent_print: str,
    message_now: str | None,
    parent_now: str | None,
) -> bool:
    """Whether one answer (the prints it was given with) is fresh, given the prints of its
    message and parent as they are now (None: the store no longer holds it)."""
    if message_now != message_print:
        return False
    if not parent_print:
        return True
    return parent_id is not None and parent_now == parent_print
