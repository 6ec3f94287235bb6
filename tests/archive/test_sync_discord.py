"""Live sync through the Discord bot connector, against a local server answering Discord's
REST API v10 JSON and rate-limit headers: history from empty, paging forward per channel,
429s and spent buckets, the repair pass for edits, refused tokens and sends."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from archive.connectors.discord.bot import DiscordBot
from archive.store.models import Chat, ConnectorState, Message, MessageRevision
from archive.sync.models import SyncAccount
from archive.sync.services.accounts import sync_connect
from archive.sync.services.run import account_sync, accounts_repair
from tests.archive.sync_support import agent_send
from tests.providers.discord_api import ANN, BEN, GENERAL, NEWS, TOKEN, VOICE, DiscordApi

pytestmark = pytest.mark.django_db


@pytest.fixture
def discord() -> Iterator[DiscordApi]:
    api = DiscordApi()
    yield api
    api.close()


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def connect(api: DiscordApi) -> SyncAccount:
    return sync_connect(
        kind="discord_bot", credentials={"token": TOKEN}, settings={"api_url": api.url}
    )


def history(api: DiscordApi, general: int, news: int) -> list[str]:
    ids = []
    for n in range(1, general + 1):
        extra: dict[str, Any] = {}
        if n % 9 == 0:
            extra["message_reference"] = {"message_id": ids[-1], "channel_id": GENERAL["id"]}
        if n == 5:
            extra["attachments"] = [
                {
                    "id": "6000000000000000001",
                    "filename": "plan.pdf",
                    "size": 2048,
                    "url": "https://cdn.discordapp.com/attachments/1/2/plan.pdf",
                    "content_type": "application/pdf",
                }
            ]
        ids.append(api.post(GENERAL, ANN if n % 2 else BEN, f"general {n}", **extra))
    for n in range(1, news + 1):
        api.post(NEWS, ANN, f"news {n}")
    return ids


def test_a_full_sync_reads_every_text_channel_from_its_first_message(
    discord: DiscordApi,
) -> None:
    sync = connect(discord)
    assert (sync.account.provider, sync.account.external_id, sync.account.name) == (
        "discord",
        "bot1000000000000000001",
        "Keeper",
    )
    ids = history(discord, general=250, news=30)
    run = account_sync(sync_account_id=sync.pk, page_size=100)
    assert run is not None and (run.outcome, run.added) == ("done", 280)
    general = Chat.objects.get(external_id=GENERAL["id"])
    assert general.title == "Makers #general" and general.kind == "channel"
    assert not Chat.objects.filter(external_id=VOICE["id"]).exists()
    assert list(
        Message.objects.filter(chat=general).order_by("sent_at").values_list("text", flat=True)[:3]
    ) == ["general 1", "general 2", "general 3"]
    reply = Message.objects.get(chat=general, text="general 9")
    assert reply.reply_to is not None and reply.reply_to.text == "general 8"
    attached = Message.objects.get(chat=general, text="general 5")
    assert [(a.file_name, a.size, a.path) for a in attached.attachments.all()] == [
        ("plan.pdf", 2048, None)
    ]
    ben = Message.objects.get(chat=general, text="general 2").sender
    assert ben is not None and ben.display_name == "ben"  # no global name: the user name
    cursor = ConnectorState.objects.get(account=sync.account, stream="discord_bot").cursor
    assert cursor["after"][GENERAL["id"]] == ids[-1]
    assert [after for channel, after in discord.listings() if channel == GENERAL["id"]] == [
        "0",
        ids[99],
        ids[199],
    ]

    newer = discord.post(GENERAL, BEN, "fresh news")
    again = account_sync(sync_account_id=sync.pk, page_size=100)
    assert again is not None and again.added == 1
    assert discord.listings()[-2:] == [
        (GENERAL["id"], ids[-1]),
        (NEWS["id"], cursor["after"][NEWS["id"]]),
    ]
    assert Message.objects.get(external_id=newer).text == "fresh news"


def test_a_429_mid_history_is_waited_out_or_resumed_nothing_doubled(discord: DiscordApi) -> None:
    sync = connect(discord)
    history(discord, general=250, news=0)
    discord.rate_limit_in(2, 1.5)
    sleeps = Sleeps()
    run = account_sync(sync_account_id=sync.pk, page_size=100, sleep=sleeps)
    assert sleeps == [1.5] and run is not None and (run.outcome, run.added) == ("done", 250)

    for n in range(150):
        discord.post(GENERAL, ANN, f"later {n}")
    discord.rate_limit_in(2, 3600.0)  # a long wait: the run ends, the next one continues
    cut = account_sync(sync_account_id=sync.pk, page_size=100, sleep=sleeps)
    assert cut is not None and (cut.outcome, cut.added) == ("rate-limited", 100)
    assert "You are being rate limited." in cut.error
    rest = account_sync(sync_account_id=sync.pk, page_size=100, sleep=sleeps)
    assert rest is not None and rest.added == 50
    texts = list(Message.objects.values_list("external_id", flat=True))
    assert len(texts) == len(set(texts)) == 400


def test_a_spent_bucket_is_waited_for_before_the_next_request(discord: DiscordApi) -> None:
    sync = connect(discord)
    history(discord, general=120, news=0)
    discord.spent_bucket_every = 1  # every answer: Remaining 0, Reset-After 0.2 s
    start = len(discord.request_times)
    run = account_sync(sync_account_id=sync.pk, page_size=50)
    assert run is not None and run.added == 120
    times = discord.request_times[start:]
    assert len(times) >= 4
    assert min(b - a for a, b in itertools.pairwise(times)) >= 0.18


def test_the_repair_pass_records_edits_and_deletions_the_live_pass_cannot_see(
    discord: DiscordApi,
) -> None:
    sync = connect(discord)
    ids = history(discord, general=40, news=5)
    account_sync(sync_account_id=sync.pk)
    before = ConnectorState.objects.get(account=sync.account).cursor
    discord.edit(GENERAL, ids[10], "general 11, edited")
    discord.delete(GENERAL, ids[20])  # in the middle of a page
    discord.delete(GENERAL, ids[-1])  # the channel's last message
    live = account_sync(sync_account_id=sync.pk)
    assert live is not None and live.updated == 0  # `after=` shows only newer messages
    runs = accounts_repair(hours=24 * 365 * 20)
    assert [(run.outcome, run.updated, run.deleted) for run in runs] == [("repaired", 1, 2)]
    gone = Message.objects.get(external_id=ids[20])
    assert gone.deleted_at is not None and gone.text == "general 21"  # a tombstone keeps text
    assert Message.objects.get(external_id=ids[-1]).deleted_at is not None
    assert Message.objects.filter(deleted_at__isnull=False).count() == 2
    assert accounts_repair(hours=24 * 365 * 20)[0].deleted == 0  # once is enough
    edited = Message.objects.get(external_id=ids[10])
    assert edited.text == "general 11, edited"
    assert MessageRevision.objects.get(message=edited).text == "general 11"
    assert ConnectorState.objects.get(account=sync.account).cursor == before  # untouched


def test_the_rewound_cursor_starts_at_the_window_and_never_moves_forward() -> None:
    bot = DiscordBot({"token": "x"}, {})
    since = datetime(2025, 11, 30, tzinfo=UTC)
    floor = (int(since.timestamp() * 1000) - 1_420_070_400_000) << 22
    rewound = bot.rewind({"after": {"1": str(floor + 99), "2": "5"}}, since)
    assert rewound == {"after": {"1": str(floor), "2": "5"}}


def test_a_refused_token_stops_the_account_and_is_never_logged(
    discord: DiscordApi, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sync = connect(discord)
    history(discord, general=3, news=0)
    sync.settings = {**sync.settings, "api_url": discord.url}
    from archive.sync.credentials import seal

    SyncAccount.objects.filter(pk=sync.pk).update(credentials=seal({"token": "revoked.token"}))
    run = account_sync(sync_account_id=sync.pk)
    assert run is not None and run.outcome == "credentials"
    assert "Discord refused the bot token" in run.error
    logged = "\n".join(f"{r.getMessage()} {r.args!r}" for r in caplog.records)
    assert "refused" in logged and TOKEN not in logged and "revoked.token" not in logged


def test_a_send_goes_out_through_the_bot_with_a_nonce(discord: DiscordApi) -> None:
    sync = connect(discord)
    asked = history(discord, general=2, news=0)[-1]
    account_sync(sync_account_id=sync.pk)
    chat = Chat.objects.get(external_id=GENERAL["id"])
    _, attempt = agent_send(
        sync.account,
        chat,
        "Meeting moved to 5",
        reply_to=Message.objects.get(external_id=asked),
        key="move-1",
    )
    channel, body = discord.sent[0]
    assert channel == GENERAL["id"] and body["content"] == "Meeting moved to 5"
    assert body["message_reference"]["message_id"] == asked
    assert body["enforce_nonce"] is True and body["nonce"] == attempt.public_id[-25:]


def test_the_repair_pass_tombstones_a_channel_whose_window_was_emptied(
    discord: DiscordApi,
) -> None:
    sync = connect(discord)
    history(discord, general=3, news=4)
    account_sync(sync_account_id=sync.pk)
    for message in list(discord.messages[NEWS["id"]]):
        discord.delete(NEWS, message["id"])
    runs = accounts_repair(hours=24 * 365 * 20)
    assert [(run.outcome, run.deleted) for run in runs] == [("repaired", 4)]
    news = Message.objects.filter(chat__external_id=NEWS["id"])
    assert news.count() == 4 and not news.filter(deleted_at__isnull=True).exists()
    assert not Message.objects.filter(chat__external_id=GENERAL["id"], deleted_at__isnull=False)
