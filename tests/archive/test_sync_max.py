"""Live sync through the MAX bot connector, against a local server answering the MAX Bot
API's JSON: updates from the marker, edits, deletions as tombstones, a 429, a refused
token and sends through the guard."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from archive.store.models import Chat, ConnectorState, Message, MessageRevision
from archive.sync.models import SyncAccount
from archive.sync.services.accounts import sync_connect
from archive.sync.services.run import account_sync
from tests.archive.sync_support import agent_send
from tests.providers.max_api import DIALOG, OLEG, TEAM, TOKEN, VERA, MaxApi

pytestmark = pytest.mark.django_db


@pytest.fixture
def max_api() -> Iterator[MaxApi]:
    api = MaxApi()
    yield api
    api.close()


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def connect(api: MaxApi) -> SyncAccount:
    return sync_connect(kind="max_bot", credentials={"token": TOKEN}, settings={"api_url": api.url})


def test_updates_from_the_marker_with_edits_and_deletions(max_api: MaxApi) -> None:
    sync = connect(max_api)
    assert (sync.account.provider, sync.account.external_id, sync.account.name) == (
        "max",
        "bot9001",
        "Courier",
    )
    first = max_api.post(DIALOG, VERA, "Hello, is the parcel on its way?")
    mids = [max_api.post(TEAM, OLEG if n % 2 else VERA, f"team line {n}") for n in range(1, 151)]
    max_api.post(TEAM, VERA, "agreed", reply_to=mids[0])
    run = account_sync(sync_account_id=sync.pk, page_size=100)
    assert run is not None and (run.outcome, run.added, run.pages) == ("done", 152, 2)
    dialog = Chat.objects.get(external_id=str(DIALOG["chat_id"]))
    assert (dialog.kind, dialog.title) == ("dm", "Vera")
    team = Chat.objects.get(external_id=str(TEAM["chat_id"]))
    assert team.kind == "group"
    agreed = Message.objects.get(chat=team, text="agreed")
    assert agreed.reply_to is not None and agreed.reply_to.external_id == mids[0]
    oleg = Message.objects.get(external_id=mids[0]).sender
    assert oleg is not None and oleg.display_name == "Oleg P."
    assert ConnectorState.objects.get(account=sync.account).cursor == {"marker": 153}

    max_api.edit(first, "Hello, is the parcel on its way? (order 77)")
    max_api.remove(TEAM, mids[1])
    again = account_sync(sync_account_id=sync.pk, page_size=100)
    assert again is not None and again.updated == 1
    assert max_api.markers_asked()[-1] == "153"  # the second run began at the cursor
    edited = Message.objects.get(external_id=first)
    assert edited.text.endswith("(order 77)") and edited.edited_at is not None
    assert MessageRevision.objects.get(message=edited).text == "Hello, is the parcel on its way?"
    gone = Message.objects.get(external_id=mids[1])
    assert gone.deleted_at is not None and gone.text == "team line 2"  # a tombstone keeps text


def test_a_429_is_waited_out_and_nothing_is_doubled(max_api: MaxApi) -> None:
    sync = connect(max_api)
    for n in range(30):
        max_api.post(TEAM, VERA, f"line {n}")
    max_api.rate_limit_next = 1
    sleeps = Sleeps()
    run = account_sync(sync_account_id=sync.pk, sleep=sleeps)
    assert sleeps == [2.0] and run is not None and run.added == 30
    assert Message.objects.count() == 30


def test_the_token_goes_in_the_header_and_a_refused_one_stops_the_account(
    max_api: MaxApi, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sync = connect(max_api)
    assert all("access_token" not in query for _, _, query in max_api.calls)
    from archive.sync.credentials import seal

    SyncAccount.objects.filter(pk=sync.pk).update(credentials=seal({"token": "wrong-token"}))
    run = account_sync(sync_account_id=sync.pk)
    assert run is not None and run.outcome == "credentials"
    assert run.error.startswith("MAX refused the bot token (Invalid access_token) — check")
    logged = "\n".join(f"{r.getMessage()} {r.args!r}" for r in caplog.records)
    assert "refused" in logged and TOKEN not in logged and "wrong-token" not in logged


def test_a_send_goes_out_through_the_bot(max_api: MaxApi) -> None:
    sync = connect(max_api)
    asked = max_api.post(DIALOG, VERA, "when?")
    account_sync(sync_account_id=sync.pk)
    chat = Chat.objects.get(external_id=str(DIALOG["chat_id"]))
    response, _ = agent_send(
        sync.account,
        chat,
        "Tomorrow at 10",
        reply_to=Message.objects.get(external_id=asked),
        key="when-1",
    )
    assert max_api.sent == [
        (
            str(DIALOG["chat_id"]),
            {"text": "Tomorrow at 10", "link": {"type": "reply", "mid": asked}},
        )
    ]
    outbound = Message.objects.get(public_id=response.json()["message_id"])
    assert outbound.provider_metadata["provider_id"] == "mid.sent000000000001"
