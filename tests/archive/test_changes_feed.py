"""The changes feed has one writer (`archive.store.changes`) and one vocabulary: every kind
of change a history import or a repair pass causes is quiet (in the feed, told to no
webhook), the live sync's are news, and the webhooks' fan-out trigger names only what the
vocabulary knows."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection

from archive.connectors.discord.bot import DiscordBot
from archive.gateway.models import WEBHOOK_EVENTS, GatewaySettings, WebhookDelivery
from archive.gateway.services import webhooks
from archive.imports.services import import_job_create, import_run
from archive.store import changes
from archive.store.changes import EVENTS, ChangeKind, Event, event_of
from archive.store.domain import DeletionRecord
from archive.store.models import Change, Message, MessageRevision
from archive.store.sink import batch_record, quiet_changes
from archive.sync.services.accounts import sync_connect
from archive.sync.services.run import account_sync, accounts_repair
from notes.services.notes import note_create, note_delete, note_update
from tests.factories import T0, batch, message
from tests.providers.discord_api import ANN, GENERAL, TOKEN, DiscordApi

pytestmark = pytest.mark.django_db


@pytest.fixture
def endpoint(db: None) -> None:
    """An active endpoint that wants every event (nothing listens: deliveries only queue)."""
    GatewaySettings.objects.update_or_create(pk=1, defaults={"webhooks_allow_private": True})
    webhooks.endpoint_create(url="http://127.0.0.1:9/hook", events=[])


def feed() -> list[tuple[str, bool]]:
    return list(Change.objects.order_by("id").values_list("kind", "quiet"))


def telegram_export(texts: dict[int, str], edited: set[int] = frozenset()) -> bytes:  # type: ignore[assignment]
    messages = []
    for i, text in texts.items():
        item = {
            "id": i,
            "type": "message",
            "date": "2021-05-01T10:00:00",
            "date_unixtime": str(1_619_863_200 + i),
            "from": "Alice",
            "from_id": "user1",
            "text": text,
        }
        if i in edited:
            item.update(edited="2021-05-02T10:00:00", edited_unixtime=str(1_619_949_600 + i))
        messages.append(item)
    return json.dumps(
        {"name": "Family", "type": "private_group", "id": 42, "messages": messages}
    ).encode()


def test_a_reimport_that_finds_edits_tells_no_webhook(endpoint: None, tmp_path: Path) -> None:
    export = tmp_path / "result.json"
    export.write_bytes(telegram_export({1: "hello", 2: "see you at noon", 3: "bye"}))
    assert import_run(job_id=import_job_create(source=export).pk).added == 3
    export.write_bytes(  # the owner exports again after editing a message
        telegram_export({1: "hello", 2: "see you at one", 3: "bye"}, edited={2})
    )
    again = import_run(job_id=import_job_create(source=export).pk)
    assert (again.added, again.updated) == (0, 1)
    edited = Message.objects.get(external_id="2")
    assert edited.text == "see you at one"
    assert MessageRevision.objects.get(message=edited).text == "see you at noon"
    # In the feed for agents that poll it, quiet for the webhooks: history is not news
    # (its new messages one row for the chat; tests/feed/ has more of that).
    assert feed() == [("messages.imported", True), ("message.edited", True)]
    assert not WebhookDelivery.objects.exists()


def test_everything_a_quiet_batch_changes_is_quiet(endpoint: None) -> None:
    batch_record(batch=batch(message("1", "hello"), message("2", "there", minutes=1)))
    with quiet_changes():
        batch_record(
            batch=batch(
                message("1", "hello, edited", edited_at=T0 + timedelta(hours=1)),
                message("3", "new", minutes=2),
                deletions=(DeletionRecord("chat-1", "2", T0 + timedelta(hours=2)),),
            )
        )
    batch_record(  # `quiet=` says the same for one batch
        batch=batch(message("3", "new, edited", minutes=2, edited_at=T0 + timedelta(hours=3))),
        quiet=True,
    )
    assert feed() == [
        ("message.added", False),
        ("message.added", False),
        ("messages.imported", True),
        ("message.edited", True),
        ("message.tombstoned", True),
        ("message.edited", True),
    ]
    events = WebhookDelivery.objects.order_by("id").values_list("event", flat=True)
    assert list(events) == ["message.inbound", "message.inbound"]  # the news alone


@pytest.fixture
def discord() -> Iterator[DiscordApi]:
    api = DiscordApi()
    yield api
    api.close()


def test_the_repair_pass_is_quiet_and_the_live_pass_is_news(
    endpoint: None, discord: DiscordApi
) -> None:
    sync = sync_connect(
        kind=DiscordBot.kind, credentials={"token": TOKEN}, settings={"api_url": discord.url}
    )
    ids = [discord.post(GENERAL, ANN, f"general {n}") for n in range(1, 6)]
    account_sync(sync_account_id=sync.pk)
    assert set(feed()) == {("message.added", False)}  # agents and webhooks see new messages
    assert WebhookDelivery.objects.count() == 5
    discord.edit(GENERAL, ids[1], "general 2, edited")
    discord.delete(GENERAL, ids[2])
    ((run),) = accounts_repair(hours=24 * 365 * 20)
    assert (run.outcome, run.updated, run.deleted) == ("repaired", 1, 1)
    assert feed()[5:] == [("message.edited", True), ("message.tombstoned", True)]
    assert WebhookDelivery.objects.count() == 5  # the repair told no webhook
    discord.post(GENERAL, ANN, "general 6")
    account_sync(sync_account_id=sync.pk)
    assert feed()[-1] == ("message.added", False) and WebhookDelivery.objects.count() == 6


# --- one vocabulary -----------------------------------------------------------------------


def test_webhook_events_are_the_feeds_vocabulary() -> None:
    assert WEBHOOK_EVENTS == EVENTS == tuple(e.value for e in Event)
    told = {event_of(kind, direction=d) for kind in ChangeKind for d in ("in", "out")}
    assert told == {*Event, None}  # None: an import's rows, always quiet, are told to none
    assert event_of(ChangeKind.MESSAGES_IMPORTED) is None


def test_the_fan_out_trigger_names_only_known_kinds_and_events() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger'")
        triggers = [row[0] for row in cursor.fetchall()]
    fan_out = next(sql for sql in triggers if "archive_webhookdelivery" in sql)
    names = set(re.findall(r"'([a-z]+\.[a-z]+)'", fan_out))
    assert names and names <= {k.value for k in ChangeKind} | {e.value for e in Event}
    # The feed is written by Python alone: no trigger writes a change row any more.
    assert [sql for sql in triggers if "INSERT INTO archive_change" in sql] == []


def test_the_fan_out_trigger_maps_every_kind_as_the_vocabulary_does(endpoint: None) -> None:
    batch_record(batch=batch(message("in", "hello")))
    batch_record(batch=batch(message("out", "hi", direction="out", minutes=1)))
    batch_record(batch=batch(message("old", "history", minutes=-1)), quiet=True)
    inbound, outbound = (Message.objects.get(external_id=e) for e in ("in", "out"))
    changes.messages_changed(kind=ChangeKind.MESSAGE_EDITED, message_ids=[inbound.pk])
    changes.messages_changed(kind=ChangeKind.MESSAGE_TOMBSTONED, message_ids=[inbound.pk])
    changes.tags_changed(added=True, tag="x", targets=[("message", inbound.pk)])
    changes.tags_changed(added=False, tag="x", targets=[("chat", inbound.chat_id)])
    changes.send_status_changed(send_id=1, message_id=outbound.pk, chat_id=outbound.chat_id)
    note = note_create(title="Plumber", body="Call on Friday")  # note.created
    note_update(public_id=note.public_id, revision=1, body="Call on Monday")  # note.updated
    note_delete(public_id=note.public_id)  # note.deleted
    told = dict(WebhookDelivery.objects.values_list("change_pk", "event"))
    directions = dict(Message.objects.values_list("pk", "direction"))
    rows = list(Change.objects.order_by("id"))
    assert {row.kind for row in rows} == set(ChangeKind)
    for row in rows:
        direction = directions.get(row.message_pk or 0, "in")
        assert told.get(row.pk) == event_of(row.kind, direction=direction), row.kind
    assert told[rows[1].pk] == "message.outbound"
    tag_added = next(row for row in rows if row.kind == ChangeKind.TAG_ADDED)
    assert (tag_added.message_pk, tag_added.target_kind, tag_added.tag) == (
        inbound.pk,
        "message",
        "x",
    )
