"""The agent's batches over the API (`GET /api/conversations/batches/next`): the earliest
messages of a chat that need the agent, with 50 messages of context before them and the
rules' candidates, skipping messages the messenger recorded a reply for and those with a
fresh answer of the agent; the scopes they need."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client

from archive.gateway.services.agents import agent_create, agent_limit
from archive.store.models import Chat, Message
from archive.store.sink import batch_record
from tests.factories import T0, batch, message

pytestmark = pytest.mark.django_db

ALL = ("messages.read", "conversations.links")


def agent(*scopes: str, name: str = "linker") -> dict[str, str]:
    token = agent_create(name=name, scopes=list(scopes)).token
    return {"Authorization": f"Bearer {token}"}


def store_chat(count: int, *, replied: range = range(0), chat: str = "chat-1") -> Chat:
    """`count` messages "1", "2", … a minute apart, alternately from Alice and Bob; those
    in `replied` record a reply to the message before them."""
    batch_record(
        batch=batch(
            *(
                message(
                    str(n),
                    f"line {n} of {chat}",
                    chat=chat,
                    sender="alice" if n % 2 else "bob",
                    minutes=n,
                    reply_to_external_id=str(n - 1) if n in replied else "",
                )
                for n in range(1, count + 1)
            )
        )
    )
    return Chat.objects.get(external_id=chat)


def pid(external_id: str, chat: str = "chat-1") -> str:
    return Message.objects.get(external_id=external_id, chat__external_id=chat).public_id


def edit(external_id: str, text: str, minutes: int, **extra: Any) -> None:
    """The messenger edits a message (through the sink, as a sync would)."""
    batch_record(
        batch=batch(
            message(
                external_id,
                text,
                sender="alice" if minutes % 2 else "bob",
                minutes=minutes,
                edited_at=T0 + timedelta(days=1),
                **extra,
            )
        )
    )


def next_batch(auth: dict[str, str], chat: Chat, size: int | None = None) -> Any:
    query = f"chat={chat.pk}" + (f"&size={size}" if size is not None else "")
    got = Client().get(f"/api/conversations/batches/next?{query}", headers=auth)
    assert got.status_code == 200, got.content
    return got.json()["batch"]


def answer(auth: dict[str, str], batch_id: str, body: dict[str, Any]) -> Any:
    return Client().post(
        f"/api/conversations/batches/{batch_id}/answers",
        data=json.dumps(body),
        content_type="application/json",
        headers=auth,
    )


def starts(auth: dict[str, str], batch_id: str, *external_ids: str) -> None:
    """The agent answers that each of these messages starts a conversation."""
    body = {
        "model": "linker-1",
        "answers": [{"message": pid(e), "parent": None, "confidence": 0.9} for e in external_ids],
    }
    stored = answer(auth, batch_id, body)
    assert stored.status_code == 200, stored.content


def test_next_gives_the_earliest_messages_that_need_the_agent_with_context() -> None:
    chat = store_chat(70, replied=range(2, 61))  # 2…60 record a reply; 1 and 61… do not
    auth = agent(*ALL)
    first = next_batch(auth, chat, size=5)
    # Message 1 needs the agent; 2…5 have their recorded replies: shown, not asked.
    assert [m["id"] for m in first["messages"]] == [pid(str(n)) for n in range(1, 6)]
    assert [m["asked"] for m in first["messages"]] == [True, False, False, False, False]
    assert first["context"] == [] and first["chat_id"] == chat.pk
    assert first["messages"][1]["reply_to"] == pid("1")
    assert first["messages"][1]["candidates"] == []
    assert first["id"].startswith(f"bat_{chat.pk}_")

    starts(auth, first["id"], "1")
    second = next_batch(auth, chat)  # the default size: 50, of which 10 exist
    ids = [m["id"] for m in second["messages"]]
    assert ids == [pid(str(n)) for n in range(61, 71)]
    assert all(m["asked"] and not m["answered"] for m in second["messages"])
    # 50 messages of context before the first one asked about, in the chat's order.
    assert [m["id"] for m in second["context"]] == [pid(str(n)) for n in range(11, 61)]
    shown = second["messages"][0]
    assert shown["text"] == "line 61 of chat-1" and shown["sender"] == "Alice"
    assert shown["sent_at"].startswith("2024-03-01T13:01:00")
    assert second["context"][-1]["sender"] == "Bob" and second["context"][-1]["reply_to"]
    # The rules' candidates: parents earlier than the message, in the batch or its
    # context, with a confidence and a rule; null: it starts a conversation.
    order = [m["id"] for m in second["context"]] + ids
    for at, shown in enumerate(second["messages"], start=len(second["context"])):
        assert shown["candidates"], shown
        for candidate in shown["candidates"]:
            assert 0 <= candidate["confidence"] <= 1 and candidate["rule"]
            if candidate["parent"] is not None:
                assert order.index(candidate["parent"]) < at
    assert any(c["parent"] is not None for m in second["messages"] for c in m["candidates"])


def test_next_skips_fresh_answers_and_offers_stale_ones_again() -> None:
    chat = store_chat(8)
    auth = agent(*ALL)
    first = next_batch(auth, chat, size=3)
    assert [m["id"] for m in first["messages"]] == [pid("1"), pid("2"), pid("3")]
    starts(auth, first["id"], "1", "3")
    # 2 still waits: the batch starts there, 3 shown as answered (a new answer may
    # replace it).
    second = next_batch(auth, chat, size=3)
    assert [m["id"] for m in second["messages"]] == [pid("2"), pid("3"), pid("4")]
    assert [m["answered"] for m in second["messages"]] == [False, True, False]
    assert [m["id"] for m in second["context"]] == [pid("1")]
    starts(auth, second["id"], "2", "4")
    assert next_batch(auth, chat, size=1)["messages"][0]["id"] == pid("5")
    status = Client().get(f"/api/conversations/batches/status?chat={chat.pk}", headers=auth)
    assert status.status_code == 200 and status.json() == {"chat_id": chat.pk, "waiting": 4}
    # Message 3 is edited: its answer is stale, and it needs the agent again.
    edit("3", "line 3, edited", minutes=3)
    again = next_batch(auth, chat, size=2)
    assert [m["id"] for m in again["messages"]] == [pid("3"), pid("4")]
    assert [m["answered"] for m in again["messages"]] == [False, True]
    status = Client().get(f"/api/conversations/batches/status?chat={chat.pk}", headers=auth)
    assert status.json()["waiting"] == 5


def test_next_is_null_when_nothing_needs_the_agent() -> None:
    chat = store_chat(3, replied=range(2, 4))
    auth = agent(*ALL)
    only = next_batch(auth, chat)
    assert [m["asked"] for m in only["messages"]] == [True, False, False]
    starts(auth, only["id"], "1")
    got = Client().get(f"/api/conversations/batches/next?chat={chat.pk}", headers=auth)
    assert got.status_code == 200 and got.json() == {"batch": None}
    status = Client().get(f"/api/conversations/batches/status?chat={chat.pk}", headers=auth)
    assert status.json()["waiting"] == 0


def test_batches_need_their_scopes_and_see_only_the_agents_chats() -> None:
    chat = store_chat(3)
    other = store_chat(2, chat="chat-2")
    url = f"/api/conversations/batches/next?chat={chat.pk}"
    reader = Client().get(url, headers=agent("messages.read", name="reader"))
    assert reader.status_code == 403 and "conversations.links" in reader.json()["detail"]
    # The batch shows message text: the links scope alone does not read it.
    linker = agent("conversations.links", name="blind")
    blind = Client().get(url, headers=linker)
    assert blind.status_code == 403 and "messages.read" in blind.json()["detail"]
    status = Client().get(f"/api/conversations/batches/status?chat={chat.pk}", headers=linker)
    assert status.status_code == 200 and status.json()["waiting"] == 3
    # An agent limited to one chat: the other is not there.
    issued = agent_create(name="limited", scopes=list(ALL))
    agent_limit(public_id=issued.agent.public_id, chat_ids=[chat.pk])
    limited = {"Authorization": f"Bearer {issued.token}"}
    assert Client().get(url, headers=limited).status_code == 200
    hidden = Client().get(f"/api/conversations/batches/next?chat={other.pk}", headers=limited)
    assert hidden.status_code == 404
    missing = Client().get("/api/conversations/batches/next?chat=999999", headers=limited)
    assert missing.status_code == 404
    too_big = Client().get(f"{url}&size=201", headers=agent(*ALL, name="big"))
    assert too_big.status_code == 422 and "size" in too_big.json()["detail"]
