"""The changes feed keeps an import to one row per chat and batch: a quiet batch's new
messages are a "messages.imported" row per chat (its first and last message and how many),
which `/api/changes` shows in order with a cursor that resumes exactly, within an agent's
limits, and which `GET /api/changes/{seq}/messages` follows to exactly those messages. A
live batch is still one "message.added" row per message, each told to the webhooks; edits
and tombstones stay one row per message either way."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from archive.gateway.models import GatewaySettings, WebhookDelivery
from archive.gateway.services import agents as agent_service
from archive.gateway.services import webhooks
from archive.imports.services import import_job_create, import_run
from archive.store.domain import DeletionRecord
from archive.store.models import Change, Chat, Message
from archive.store.sink import batch_record
from tests.factories import T0, batch, message

pytestmark = pytest.mark.django_db


def bearer(token: str) -> dict[str, Any]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def agent(name: str = "bot", chats: tuple[str, ...] = ()) -> str:
    issued = agent_service.agent_create(name=name, scopes=list(agent_service.SCOPES))
    if chats:
        pks = [Chat.objects.get(external_id=c).pk for c in chats]
        agent_service.agent_limit(public_id=issued.agent.public_id, chat_ids=pks)
    return issued.token


def feed(client: Client, token: str, cursor: str | None = None, limit: int = 100) -> Any:
    query: dict[str, Any] = {"limit": limit, **({"cursor": cursor} if cursor else {})}
    answer = client.get("/api/changes", query, **bearer(token))
    assert answer.status_code == 200, answer.content
    return answer.json()


def public(*external_ids: str) -> list[str]:
    found = dict(Message.objects.values_list("external_id", "public_id"))
    return [found[e] for e in external_ids]


def imported(row: dict[str, Any]) -> tuple[Any, ...]:
    chat = Chat.objects.get(pk=row["chat_id"]).external_id
    return row["kind"], chat, row["message"], row["last_message"], row["count"]


def history(*keys: str, **extra: Any) -> None:
    """A quiet batch (an import's): one message per key "<chat>:<id>", in that order."""
    records = []
    for n, key in enumerate(keys):
        chat, external_id = key.split(":")
        records.append(message(external_id, f"history {key}", chat=chat, minutes=n))
    batch_record(batch=batch(*records, **extra), quiet=True)


def test_an_import_is_one_row_per_chat_and_batch_in_order(client: Client) -> None:
    history("A:a1", "B:b1", "A:a2", "A:a3", "B:b2")  # the chats' messages interleave
    history("C:c1", "A:a4")
    rows = list(Change.objects.order_by("id"))
    assert [(r.kind, r.quiet) for r in rows] == [("messages.imported", True)] * 4
    token = agent()
    a1, a3, a4, b1, b2, c1 = public("a1", "a3", "a4", "b1", "b2", "c1")
    expected = [
        ("messages.imported", "A", a1, a3, 3),  # ordered by each chat's first message
        ("messages.imported", "B", b1, b2, 2),
        ("messages.imported", "C", c1, c1, 1),
        ("messages.imported", "A", a4, a4, 1),
    ]
    whole = feed(client, token)
    assert [imported(row) for row in whole["changes"]] == expected
    assert all(row["tag"] is None and row["target_id"] is None for row in whole["changes"])
    # A row at a time, the cursor resumes exactly: the same rows, and then it stays put.
    seen, cursor = [], None
    for _ in expected:
        page = feed(client, token, cursor, limit=1)
        seen += page["changes"]
        cursor = page["cursor"]
    assert seen == whole["changes"]
    assert feed(client, token, cursor) == {"changes": [], "cursor": cursor}
    history("B:b3")  # a later import: after the cursor, nothing before it again
    (later,) = feed(client, token, cursor)["changes"]
    assert imported(later) == ("messages.imported", "B", *public("b3", "b3"), 1)


def telegram_export(chats: dict[int, int]) -> bytes:
    """A whole Telegram account export: chat id -> how many messages."""
    listed = []
    for chat_id, count in chats.items():
        messages = [
            {
                "id": i,
                "type": "message",
                "date": "2021-05-01T10:00:00",
                "date_unixtime": str(1_619_863_200 + 60 * i),
                "from": "Alice",
                "from_id": "user1",
                "text": f"message {i} of chat {chat_id}",
            }
            for i in range(1, count + 1)
        ]
        listed.append(
            {
                "name": f"Chat {chat_id}",
                "type": "private_group",
                "id": chat_id,
                "messages": messages,
            }
        )
    return json.dumps({"chats": {"list": listed}}).encode()


def test_a_real_import_counts_every_message_once_in_rows_per_chat_and_batch(
    tmp_path: Path,
) -> None:
    export = tmp_path / "result.json"
    export.write_bytes(telegram_export({41: 7, 42: 4, 43: 1}))
    job = import_run(job_id=import_job_create(source=export).pk, batch_size=3)
    assert job.added == 12
    rows = list(Change.objects.order_by("id"))
    assert {r.kind for r in rows} == {"messages.imported"} and all(r.quiet for r in rows)
    assert 4 <= len(rows) < 12  # batches of 3: at least a row per batch, never one a message
    counted: list[int] = []
    for row in rows:
        assert row.message_pk is not None and row.target_id is not None
        ids = list(
            Message.objects.filter(
                chat_id=row.chat_pk or 0, pk__gte=row.message_pk, pk__lte=row.target_id
            ).values_list("pk", flat=True)
        )
        assert (ids[0], ids[-1], len(ids)) == (row.message_pk, row.target_id, int(row.tag))
        counted += ids
    assert sorted(counted) == sorted(Message.objects.values_list("pk", flat=True))
    assert [r.message_pk for r in rows] == sorted(r.message_pk or 0 for r in rows)


def test_a_limited_agent_sees_only_its_chats_rows_and_messages(client: Client) -> None:
    history("A:a1", "B:b1", "A:a2", "C:c1")
    limited, free = agent("limited", chats=("A",)), agent("free")
    mine = feed(client, limited)["changes"]
    assert [imported(row) for row in mine] == [("messages.imported", "A", *public("a1", "a2"), 2)]
    everything = feed(client, free)["changes"]
    assert [imported(row)[1] for row in everything] == ["A", "B", "C"]
    (of_b,) = [row for row in everything if imported(row)[1] == "B"]
    url = f"/api/changes/{of_b['seq']}/messages"
    refused = client.get(url, **bearer(limited))
    assert refused.status_code == 404 and "messages.imported" in refused.json()["detail"]
    assert [m["id"] for m in client.get(url, **bearer(free)).json()["messages"]] == public("b1")
    url = f"/api/changes/{mine[0]['seq']}/messages"
    assert [m["id"] for m in client.get(url, **bearer(limited)).json()["messages"]] == public(
        "a1", "a2"
    )


@pytest.fixture
def endpoint(db: None) -> None:
    """An active endpoint that wants every event (nothing listens: deliveries only queue)."""
    GatewaySettings.objects.update_or_create(pk=1, defaults={"webhooks_allow_private": True})
    webhooks.endpoint_create(url="http://127.0.0.1:9/hook", events=[])


def test_live_messages_stay_a_row_each_and_reach_webhooks(endpoint: None) -> None:
    batch_record(
        batch=batch(
            message("l1", "live one", chat="A"),
            message("l2", "live two", chat="B", minutes=1),
            message("l3", "live three", chat="A", minutes=2, direction="out"),
        )
    )
    history("A:h1", "B:h2", "A:h3")
    live = list(Change.objects.order_by("id").values_list("kind", "message_pk", "quiet"))
    pks = dict(Message.objects.values_list("external_id", "pk"))
    assert live[:3] == [("message.added", pks[e], False) for e in ("l1", "l2", "l3")]
    assert [(kind, quiet) for kind, _, quiet in live[3:]] == [("messages.imported", True)] * 2
    told = WebhookDelivery.objects.order_by("id").values_list("event", flat=True)
    assert list(told) == ["message.inbound", "message.inbound", "message.outbound"]


def test_edits_and_tombstones_stay_a_row_each_in_an_import() -> None:
    history("A:a1", "A:a2", "A:a3")
    history(
        deletions=(
            DeletionRecord("A", "a1", T0 + timedelta(hours=1)),
            DeletionRecord("A", "a2", T0 + timedelta(hours=1)),
        )
    )
    batch_record(
        batch=batch(
            message("a3", "edited", chat="A", minutes=2, edited_at=T0 + timedelta(hours=2))
        ),
        quiet=True,
    )
    kinds = list(Change.objects.order_by("id").values_list("kind", "quiet"))
    assert kinds == [
        ("messages.imported", True),
        ("message.tombstoned", True),
        ("message.tombstoned", True),
        ("message.edited", True),
    ]


def test_following_an_imported_row_gets_exactly_its_messages(client: Client) -> None:
    batch_record(batch=batch(message("old", "kept from before", chat="A", minutes=3)))
    # History whose times surround the old message, mixed with another chat's, then news.
    history("A:h1", "B:x1", "A:h2", "A:h3", "B:x2", "A:h4", "A:h5")
    batch_record(batch=batch(message("new", "live after it", chat="A", minutes=1)))
    batch_record(batch=batch(deletions=(DeletionRecord("A", "h2", T0 + timedelta(hours=1)),)))
    token = agent()
    rows = feed(client, token)["changes"]
    (row,) = [
        r for r in rows if r["kind"] == "messages.imported" and r["message"] == public("h1")[0]
    ]
    assert (row["last_message"], row["count"]) == (public("h5")[0], 5)
    got, cursor = [], None
    while True:
        query = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get(f"/api/changes/{row['seq']}/messages", query, **bearer(token)).json()
        got += page["messages"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [m["id"] for m in got] == public("h1", "h2", "h3", "h4", "h5")  # stored order
    assert len(got) == row["count"]
    assert [m["deleted"] for m in got] == [False, True, False, False, False]
    added = next(r for r in rows if r["kind"] == "message.added")
    for seq in (added["seq"], 10_000):
        refused = client.get(f"/api/changes/{seq}/messages", **bearer(token))
        assert refused.status_code == 404, seq
    bogus = client.get(f"/api/changes/{row['seq']}/messages", {"cursor": "x!"}, **bearer(token))
    assert bogus.status_code == 422
