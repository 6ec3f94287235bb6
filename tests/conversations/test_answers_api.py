"""The agent's answers to a batch (`POST /api/conversations/batches/{id}/answers`): checked
whole before anything is stored, refused with 409 when the window moved, a new answer
replacing the old, stale when its message or parent changes; and the build choosing them
after the messenger's replies and before the rules."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest

from archive.conversations.models import ConversationAnswer, ConversationState, Need
from archive.conversations.selectors import chat_links
from archive.conversations.services.builds import conversations_build
from archive.store.domain import DeletionRecord
from archive.store.models import Chat
from archive.store.sink import batch_record
from tests.conversations.test_batches import (
    ALL,
    agent,
    answer,
    edit,
    next_batch,
    pid,
    starts,
    store_chat,
)
from tests.factories import T0, batch, message

pytestmark = pytest.mark.django_db


def answers_now() -> list[tuple[Any, ...]]:
    return list(
        ConversationAnswer.objects.order_by("message_id").values_list(
            "message_id", "parent_id", "confidence", "model", "message_print", "parent_print"
        )
    )


def one(message: str, parent: str | None, confidence: float = 0.8) -> dict[str, Any]:
    return {
        "message": pid(message),
        "parent": None if parent is None else pid(parent),
        "confidence": confidence,
    }


@pytest.fixture
def window() -> tuple[dict[str, str], Chat, dict[str, Any]]:
    """70 messages: 2…55 and 58 record a reply to the one before; message 1 answered
    already. The batch: 56…65 (58 not asked), context 6…55."""
    chat = store_chat(70, replied=range(2, 56))
    batch_record(
        batch=batch(
            message("58", "line 58 of chat-1", sender="bob", minutes=58, reply_to_external_id="57")
        )
    )
    auth = agent(*ALL)
    starts(auth, next_batch(auth, chat, size=1)["id"], "1")
    got = next_batch(auth, chat, size=10)
    assert [m["id"] for m in got["messages"]] == [pid(str(n)) for n in range(56, 66)]
    assert [m["id"] for m in got["context"]] == [pid(str(n)) for n in range(6, 56)]
    assert not got["messages"][2]["asked"]
    return auth, chat, got


def test_every_refusal_stores_nothing_and_names_what_and_where(
    window: tuple[dict[str, str], Chat, dict[str, Any]],
) -> None:
    auth, _, got = window
    before = answers_now()
    good = one("56", None)
    refusals: list[tuple[dict[str, Any], int, str]] = [
        # A message the batch does not ask about: a recorded reply, context, beyond it.
        (
            {"model": "m", "answers": [good, one("58", "57")]},
            422,
            f"answers[1].message: {pid('58')} has the reply the messenger recorded",
        ),
        (
            {"model": "m", "answers": [good, one("30", "29")]},
            422,
            f"answers[1].message: {pid('30')} is not a message this batch asks about",
        ),
        (
            {"model": "m", "answers": [good, one("66", "65")]},
            422,
            f"answers[1].message: {pid('66')} is not a message this batch asks about",
        ),
        # A parent later than its message, or itself.
        (
            {"model": "m", "answers": [good, one("57", "59")]},
            422,
            f"answers[1].parent: {pid('59')} is not earlier than its message",
        ),
        (
            {"model": "m", "answers": [good, one("57", "57")]},
            422,
            f"answers[1].parent: {pid('57')} is not earlier than its message",
        ),
        # A parent outside the batch and its context (before it, after it, elsewhere).
        (
            {"model": "m", "answers": [good, one("57", "5")]},
            422,
            f"answers[1].parent: {pid('5')} is not in this batch or its context",
        ),
        (
            {"model": "m", "answers": [good, one("57", "66")]},
            422,
            f"answers[1].parent: {pid('66')} is not in this batch or its context",
        ),
        (
            {"model": "m", "answers": [good, {**one("57", None), "parent": "msg_01NOSUCH"}]},
            422,
            "answers[1].parent: msg_01NOSUCH is not in this batch or its context",
        ),
        # The same message twice.
        (
            {"model": "m", "answers": [good, one("57", None), one("56", "55")]},
            422,
            f"answers[2].message: {pid('56')} is answered twice (also answers[0])",
        ),
        # Confidence outside 0 to 1, or not a number.
        ({"model": "m", "answers": [good, one("57", None, 1.5)]}, 422, "answers.1.confidence"),
        ({"model": "m", "answers": [good, one("57", None, -0.1)]}, 422, "answers.1.confidence"),
        (
            {"model": "m", "answers": [good, {**one("57", None), "confidence": "0.5"}]},
            422,
            "answers.1.confidence",
        ),
        # The model missing or blank; no answers; a field the schema lacks.
        ({"answers": [good]}, 422, "model"),
        ({"model": "  ", "answers": [good]}, 422, "model: empty"),
        ({"model": "m", "answers": []}, 422, "answers"),
        ({"model": "m", "answers": [{**good, "why": "x"}]}, 422, "answers.0.why"),
        (
            {"model": "m", "answers": [{"message": pid("57"), "confidence": 0.5}]},
            422,
            "answers.0.parent",
        ),
    ]
    for body, status, detail in refusals:
        refused = answer(auth, got["id"], body)
        assert refused.status_code == status, (body, refused.content)
        assert detail in refused.json()["detail"], (detail, refused.json())
        assert answers_now() == before
    # Several problems at once: each named, nothing stored.
    many = answer(auth, got["id"], {"model": "m", "answers": [one("30", None), one("57", "60")]})
    assert many.status_code == 422
    assert "answers[0].message" in many.json()["detail"]
    assert "answers[1].parent" in many.json()["detail"]
    # Batch ids the server never gave.
    body = {"model": "m", "answers": [good]}
    malformed = answer(auth, "bat_nope", body)
    assert malformed.status_code == 422 and "batch_id" in malformed.json()["detail"]
    suffix = got["id"].split("_", 2)[2]
    assert answer(auth, f"bat_999999_{suffix}", body).status_code == 404
    assert answer(auth, got["id"][:-1] + "x", body).status_code == 422
    forged = got["id"][:-4] + ("0000" if not got["id"].endswith("0000") else "1111")
    assert answer(auth, forged, body).status_code == 409
    assert answers_now() == before


def test_a_window_that_moved_is_refused_with_409(
    window: tuple[dict[str, str], Chat, dict[str, Any]],
) -> None:
    auth, chat, got = window
    body = {"model": "m", "answers": [one("56", None)]}
    before = answers_now()
    # A message after the window leaves it as it was.
    batch_record(batch=batch(message("71", "late", minutes=71)))
    assert answer(auth, got["id"], body).status_code == 200
    # A message added inside it: the agent answered a window that no longer is.
    inserted = dataclasses.replace(
        message("60a", "squeezed in", minutes=60), sent_at=T0 + timedelta(minutes=60, seconds=30)
    )
    batch_record(batch=batch(inserted))
    before = answers_now()
    moved = answer(auth, got["id"], {"model": "m", "answers": [one("57", None)]})
    assert moved.status_code == 409 and "ask for the next batch" in moved.json()["detail"]
    assert answers_now() == before
    # Edited inside it, and tombstoned inside it.
    second = next_batch(auth, chat, size=10)
    edit("59", "line 59, edited", minutes=59)
    assert (
        answer(auth, second["id"], {"model": "m", "answers": [one("57", None)]}).status_code == 409
    )
    third = next_batch(auth, chat, size=10)
    batch_record(
        batch=batch(
            deletions=(DeletionRecord(chat_external_id="chat-1", external_id="61", deleted_at=T0),)
        )
    )
    assert (
        answer(auth, third["id"], {"model": "m", "answers": [one("57", None)]}).status_code == 409
    )
    # Its first message tombstoned: still 409, not 404.
    fourth = next_batch(auth, chat, size=10)
    first = fourth["messages"][0]["id"]
    batch_record(
        batch=batch(
            deletions=(
                DeletionRecord(
                    chat_external_id="chat-1",
                    external_id=next(e for e in ("57", "59", "60") if pid(e) == first),
                    deleted_at=T0,
                ),
            )
        )
    )
    assert (
        answer(auth, fourth["id"], {"model": "m", "answers": [one("62", None)]}).status_code == 409
    )
    assert answers_now() == before


def test_a_subset_is_stored_and_a_new_answer_replaces_the_old(
    window: tuple[dict[str, str], Chat, dict[str, Any]],
) -> None:
    auth, chat, got = window
    stored = answer(
        auth, got["id"], {"model": "m-1", "answers": [one("56", None), one("57", "56", 0.7)]}
    )
    assert stored.status_code == 200, stored.content
    assert stored.json() == {"batch": got["id"], "chat_id": chat.pk, "stored": 2, "need": "rebuild"}
    assert ConversationState.objects.get(chat=chat).need == Need.REBUILD
    row = ConversationAnswer.objects.get(message__public_id=pid("57"))
    assert row.parent is not None and row.parent.public_id == pid("56")
    assert row.confidence == 0.7 and row.model == "m-1" and row.agent == "agent:linker"
    # The id stays valid for the rest; the next batch starts after what was answered.
    assert next_batch(auth, chat, size=1)["messages"][0]["id"] == pid("59")
    again = answer(
        auth, got["id"], {"model": "m-2", "answers": [one("57", None, 1), one("59", "58")]}
    )
    assert again.status_code == 200 and again.json()["stored"] == 2
    assert ConversationAnswer.objects.filter(message__public_id=pid("57")).count() == 1
    row = ConversationAnswer.objects.get(message__public_id=pid("57"))
    assert row.parent is None and row.confidence == 1.0 and row.model == "m-2"
    assert row.parent_print == ""
    assert ConversationAnswer.objects.count() == 4  # 1, 56, 57, 59


def test_an_answer_goes_stale_when_its_message_or_parent_changes(
    window: tuple[dict[str, str], Chat, dict[str, Any]],
) -> None:
    auth, chat, got = window
    body = {
        "model": "m",
        "answers": [one(str(n), None) for n in (56, 57)]
        + [one("59", "58"), one("60", "55"), one("61", None)]
        + [one(str(n), None) for n in range(62, 66)],
    }
    assert answer(auth, got["id"], body).status_code == 200
    assert next_batch(auth, chat, size=1)["messages"][0]["id"] == pid("66")
    # The parent edited: 59's answer is stale, 59 needs the agent again.
    edit("58", "line 58, edited", minutes=58, reply_to_external_id="57")
    assert next_batch(auth, chat, size=1)["messages"][0]["id"] == pid("59")
    assert (
        answer(
            auth, next_batch(auth, chat, size=1)["id"], {"model": "m", "answers": [one("59", "58")]}
        ).status_code
        == 200
    )
    # The parent tombstoned: 60's answer is stale.
    batch_record(
        batch=batch(
            deletions=(DeletionRecord(chat_external_id="chat-1", external_id="55", deleted_at=T0),)
        )
    )
    assert next_batch(auth, chat, size=1)["messages"][0]["id"] == pid("60")
    starts(auth, next_batch(auth, chat, size=1)["id"], "60")
    # The message itself edited.
    edit("61", "line 61, edited", minutes=61)
    assert next_batch(auth, chat, size=1)["messages"][0]["id"] == pid("61")


def test_the_build_chooses_a_reply_then_the_agent_then_the_rules(
    window: tuple[dict[str, str], Chat, dict[str, Any]],
) -> None:
    auth, chat, _ = window
    conversations_build(chat_id=chat.pk)
    links = dict(chat_links(chat.pk))
    # A message the rules join to an earlier one (the lines are a minute apart).
    joined = next(e for e in ("57", "60", "61", "63", "64", "65") if links[e] != e)
    # 62 records a reply to a message not stored yet: the agent is asked about it.
    batch_record(
        batch=batch(
            message(
                "62", "line 62 of chat-1", sender="bob", minutes=62, reply_to_external_id="late"
            )
        )
    )
    fresh = next_batch(auth, chat, size=10)
    body = {
        "model": "m",
        "answers": [one(joined, None), one("59", "30"), one("62", "30")],
    }
    assert answer(auth, fresh["id"], body).status_code == 200
    conversations_build(chat_id=chat.pk)
    links = dict(chat_links(chat.pk))
    assert links[joined] == joined  # the agent's "starts" overrides the rules' parent
    assert links["59"] == "30" and links["62"] == "30"
    assert links["58"] == "57"  # the recorded reply, untouched
    # The parent 62 replies to arrives (earlier than 62): the messenger's reply wins over
    # the agent's answer, which stays fresh.
    late = dataclasses.replace(
        message("late", "the late parent", minutes=61),
        sent_at=T0 + timedelta(minutes=61, seconds=30),
    )
    batch_record(batch=batch(late))
    conversations_build(chat_id=chat.pk)
    links = dict(chat_links(chat.pk))
    assert links["62"] == "late" and links["59"] == "30"
    assert ConversationAnswer.objects.filter(message__public_id=pid("62")).exists()
