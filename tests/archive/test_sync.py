"""Live sync through the Telegram Bot API connector, against a local server answering the
Bot API's real JSON: connect, full and incremental runs, edits, rate limits, refused
tokens, leases, sends through the guard, and a worker killed mid-run."""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from archive.store.models import Account, Chat, ConnectorState, Message, MessageRevision
from archive.sync.credentials import KEY_FILE, unseal
from archive.sync.jobs import account_sync as account_sync_job
from archive.sync.models import SyncAccount, SyncRun
from archive.sync.services.accounts import sync_connect, sync_disconnect, sync_interval_set
from archive.sync.services.run import account_sync
from tests.archive.sync_support import agent_send, chatter
from tests.providers.bot_api import ALICE, GROUP, PRIVATE, TOKEN, BotApi
from wirecat.errors import Invalid

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def connect(api: BotApi, **extra: Any) -> SyncAccount:
    return sync_connect(
        kind="telegram_bot", credentials={"token": TOKEN}, settings={"api_url": api.url}, **extra
    )


class Sleeps(list[float]):
    """The run's clock for waiting: records what it was asked to wait, waits nothing."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def test_connecting_checks_the_token_seals_it_and_schedules_the_account(
    bot_api: BotApi, settings: Any
) -> None:
    sync = connect(bot_api, interval_seconds=120)
    account = sync.account
    assert (account.provider, account.external_id, account.name) == (
        "telegram",
        "bot7000000001",
        "@archivist_bot",
    )
    assert TOKEN not in sync.credentials and TOKEN not in json.dumps(sync.settings)
    assert unseal(sync.credentials) == {"token": TOKEN}
    key = Path(settings.STATE_DIR) / KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    task = PeriodicTask.objects.get(pk=sync.schedule_id)
    assert task.task == "archive.jobs.account_sync"
    assert json.loads(task.kwargs) == {"sync_account_id": sync.pk}
    assert task.interval is not None and task.interval.every == 120
    sync_interval_set(sync=sync, interval_seconds=600)
    task.refresh_from_db()
    assert task.interval is not None and task.interval.every == 600
    sync_disconnect(sync=sync)
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()
    assert Account.objects.filter(pk=account.pk).exists()  # the archive keeps the account


def test_a_refused_token_is_a_clear_error_and_keeps_nothing(bot_api: BotApi) -> None:
    bot_api.valid_tokens.clear()
    with pytest.raises(Invalid, match="Telegram refused the bot token"):
        connect(bot_api)
    assert not SyncAccount.objects.exists()


def test_a_full_sync_from_empty_then_an_incremental_one_with_an_edit(bot_api: BotApi) -> None:
    sync = connect(bot_api)
    chatter(bot_api, 250)
    run = account_sync(sync_account_id=sync.pk, page_size=100)
    assert run is not None
    assert (run.outcome, run.fetched, run.added, run.pages) == ("done", 250, 250, 3)
    assert Message.objects.filter(account=sync.account).count() == 250
    group = Chat.objects.get(external_id=str(GROUP["id"]))
    assert (group.kind, group.title) == ("group", "Night owls")
    assert Chat.objects.get(external_id=str(PRIVATE["id"])).kind == "dm"
    answer = Message.objects.get(chat=group, text="answer 7")
    assert answer.reply_to is not None and answer.reply_to.text == "group line 6"
    assert answer.sender is not None and answer.sender.display_name == "Bob"
    cursor = ConnectorState.objects.get(account=sync.account, stream="telegram_bot").cursor
    assert cursor == {"offset": 500_251}
    sync.refresh_from_db()
    assert (sync.state, sync.lease_owner, sync.last_error) == ("idle", "", "")

    bot_api.post(GROUP, ALICE, "after the first run")
    bot_api.edit(3, "group line 3, corrected")
    again = account_sync(sync_account_id=sync.pk, page_size=100)
    assert again is not None and (again.added, again.updated) == (1, 1)
    assert bot_api.offsets_asked()[3] == 500_251  # the second run began at the cursor
    edited = Message.objects.get(chat=group, external_id="3")
    assert edited.text == "group line 3, corrected" and edited.edited_at is not None
    assert MessageRevision.objects.get(message=edited).text == "group line 3"
    assert Message.objects.filter(account=sync.account).count() == 251
    assert account_sync(sync_account_id=sync.pk).added == 0  # type: ignore[union-attr]


def test_a_short_wait_asked_mid_run_is_waited_out(bot_api: BotApi) -> None:
    sync = connect(bot_api)
    chatter(bot_api, 250)
    bot_api.rate_limit_calls = {2: 3}  # the second getUpdates answers 429, retry after 3 s
    sleeps = Sleeps()
    run = account_sync(sync_account_id=sync.pk, page_size=100, sleep=sleeps)
    assert sleeps == [3.0]
    assert run is not None and (run.outcome, run.added) == ("done", 250)


def test_a_long_wait_ends_the_run_and_the_next_one_finishes_nothing_lost_or_doubled(
    bot_api: BotApi,
) -> None:
    sync = connect(bot_api)
    chatter(bot_api, 250)
    bot_api.rate_limit_calls = {2: 600}
    sleeps = Sleeps()
    first = account_sync(sync_account_id=sync.pk, page_size=100, sleep=sleeps)
    assert first is not None
    assert (first.outcome, first.added) == ("rate-limited", 100)
    assert "retry after 600" in first.error and sleeps == []
    second = account_sync(sync_account_id=sync.pk, page_size=100, sleep=sleeps)
    assert second is not None and (second.outcome, second.added) == ("done", 150)
    ids = list(Message.objects.filter(account=sync.account).values_list("external_id", flat=True))
    assert len(ids) == len(set(ids)) == 250


def test_network_errors_are_retried_with_backoff(bot_api: BotApi) -> None:
    sync = connect(bot_api)
    chatter(bot_api, 5)
    url = bot_api.url
    bot_api.close()  # nothing listens: every attempt fails to connect
    sleeps = Sleeps()
    run = account_sync(sync_account_id=sync.pk, sleep=sleeps)
    assert run is not None and run.outcome == "error"
    assert len(sleeps) == 4 and sleeps[-1] > sleeps[0]
    assert "refused the connection" in run.error and url not in run.error
    sync.refresh_from_db()
    assert sync.state == "idle" and "refused the connection" in sync.last_error  # next time


def test_a_refused_token_stops_the_account_and_no_log_line_holds_it(
    bot_api: BotApi, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sync = connect(bot_api)
    chatter(bot_api, 120)
    account_sync(sync_account_id=sync.pk, page_size=100)
    bot_api.valid_tokens.clear()  # revoked at @BotFather
    run = account_sync(sync_account_id=sync.pk)
    assert run is not None and run.outcome == "credentials"
    sync.refresh_from_db()
    assert sync.state == "failed" and "refused the bot token" in sync.last_error
    assert account_sync(sync_account_id=sync.pk) is None  # beat's runs wait for the owner
    assert account_sync_job(sync.pk).endswith("skipped (busy, failed or paused)")
    assert account_sync(sync_account_id=sync.pk, force=True) is not None  # "Sync now" tries
    logged = "\n".join(
        f"{record.getMessage()} {record.args!r} {record.exc_text or ''}"
        for record in caplog.records
    )
    assert "refused the bot token" in logged  # the runs were logged, the token never
    assert TOKEN.split(":")[1] not in logged
    assert all(TOKEN not in run.error for run in SyncRun.objects.all())


def test_a_held_lease_turns_a_second_run_away_until_it_lapses(bot_api: BotApi) -> None:
    sync = connect(bot_api)
    chatter(bot_api, 3)
    SyncAccount.objects.filter(pk=sync.pk).update(
        lease_owner="elsewhere:1", lease_until=timezone.now() + timezone.timedelta(seconds=60)
    )
    assert account_sync(sync_account_id=sync.pk) is None
    assert bot_api.offsets_asked() == []
    SyncAccount.objects.filter(pk=sync.pk).update(
        lease_until=timezone.now() - timezone.timedelta(seconds=1)  # its worker died
    )
    run = account_sync(sync_account_id=sync.pk)
    assert run is not None and run.added == 3


@pytest.mark.django_db(transaction=True)
def test_two_syncs_of_one_account_at_once_never_both_run(bot_api: BotApi) -> None:
    sync = connect(bot_api)
    chatter(bot_api, 300)
    bot_api.delay = 0.15
    barrier = threading.Barrier(2)
    runs: list[SyncRun | None] = []
    problems: list[BaseException] = []

    def run() -> None:
        try:
            barrier.wait()
            runs.append(account_sync(sync_account_id=sync.pk, page_size=100))
        except BaseException as exc:
            problems.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    assert sorted(r is None for r in runs) == [False, True]
    assert bot_api.most_busy == 1  # the provider never saw two fetches at once
    assert Message.objects.filter(account=sync.account).count() == 300


def test_a_send_through_the_guard_goes_out_through_the_bot(bot_api: BotApi) -> None:
    sync = connect(bot_api)
    bot_api.post(PRIVATE, ALICE, "can you remind me?")
    account_sync(sync_account_id=sync.pk)
    chat = Chat.objects.get(account=sync.account, external_id=str(PRIVATE["id"]))
    response, _ = agent_send(
        sync.account,
        chat,
        "Reminder: call the plumber",
        reply_to=Message.objects.get(chat=chat),
        key="remind-1",
    )
    assert bot_api.sent == [
        {
            "chat_id": str(PRIVATE["id"]),
            "text": "Reminder: call the plumber",
            "reply_parameters": {"message_id": 1, "allow_sending_without_reply": True},
        }
    ]
    outbound = Message.objects.get(public_id=response.json()["message_id"])
    assert outbound.delivery_status == "sent" and outbound.provider_metadata["provider_id"] == "2"


# a worker killed mid-run ------------------------------------------------------------------


def _wirecat(state: Path, *args: str, **popen: Any) -> subprocess.Popen[bytes]:
    env = {**os.environ, "WIRECAT_STATE_DIR": str(state), "WIRECAT_SYNC_LEASE_SECONDS": "2"}
    return subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, env=env, **popen
    )


def _stored(state: Path) -> tuple[int, int]:
    """(messages, distinct provider ids) in the store, read without taking any lock."""
    db = sqlite3.connect(f"file:{state / 'wirecat.db'}?mode=ro", uri=True)
    try:
        return db.execute(
            "SELECT count(*), count(DISTINCT chat_id || ':' || external_id) FROM archive_message"
        ).fetchone()
    except sqlite3.OperationalError:
        return (0, 0)
    finally:
        db.close()


@pytest.mark.slow
def test_a_worker_killed_mid_run_is_resumed_from_the_committed_cursor(
    bot_api: BotApi, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    assert _wirecat(state, "migrate", "-v0").wait() == 0
    connected = _wirecat(
        state,
        "shell",
        "-c",
        "from archive.sync.services.accounts import sync_connect as c;"
        f"print(c(kind='telegram_bot', credentials={{'token': {TOKEN!r}}},"
        f" settings={{'api_url': {bot_api.url!r}}}).public_id)",
        stdout=subprocess.PIPE,
    )
    out, _ = connected.communicate()
    public_id = out.decode().strip().splitlines()[-1]
    chatter(bot_api, 1000)
    bot_api.delay = 0.3
    worker = _wirecat(
        state, "sync", public_id, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while _stored(state)[0] < 300 and time.monotonic() < deadline:
        time.sleep(0.05)
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    killed_at = _stored(state)[0]
    assert 300 <= killed_at < 1000
    db = sqlite3.connect(f"file:{state / 'wirecat.db'}?mode=ro", uri=True)
    committed = json.loads(db.execute("SELECT cursor FROM archive_connectorstate").fetchone()[0])
    db.close()
    # The cursor commits with the messages it covers: nothing stored beyond it, nothing short.
    assert committed["offset"] == 500_001 + killed_at
    asked_before = len(bot_api.offsets_asked())
    bot_api.delay = 0
    time.sleep(2.5)  # the dead worker's lease lapses
    resumed = _wirecat(state, "sync", public_id, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output, _ = resumed.communicate()
    assert resumed.returncode == 0, output.decode()
    assert bot_api.offsets_asked()[asked_before] == committed["offset"]
    assert _stored(state) == (1000, 1000)


# the Sync page ----------------------------------------------------------------------------


def test_pages_recorded_together_keep_the_last_cursor_and_every_record() -> None:
    from archive.store.domain import AccountRecord, Batch
    from archive.sync.services.run import _merged
    from tests.factories import message

    account = AccountRecord(provider="telegram", external_id="bot1")
    pages = [
        Batch(account=account, messages=(message("1"), message("2")), cursor={"offset": 3}),
        Batch(account=account, messages=(message("3"),), cursor={"offset": 4}),
    ]
    merged = _merged(pages)
    assert [m.external_id for m in merged.messages] == ["1", "2", "3"]
    assert merged.cursor == {"offset": 4}


def _committed_cursor(state: Path) -> dict[str, Any]:
    db = sqlite3.connect(f"file:{state / 'wirecat.db'}?mode=ro", uri=True)
    try:
        return dict(
            json.loads(db.execute("SELECT cursor FROM archive_connectorstate").fetchone()[0])
        )
    finally:
        db.close()


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["discord", "max"])
def test_every_http_connector_resumes_a_killed_run_from_its_committed_cursor(
    provider: str, tmp_path: Path
) -> None:
    """The same kill as above, for the Discord and MAX connectors: a worker killed mid-run,
    the next run from the cursor committed with the last recorded page, nothing lost or
    twice."""
    from tests.providers import discord_api, max_api

    state = tmp_path / "state"
    assert _wirecat(state, "migrate", "-v0").wait() == 0
    server: Any
    if provider == "discord":
        server = discord_api.DiscordApi()
        for n in range(1, 601):
            server.post(discord_api.GENERAL, discord_api.ANN, f"line {n}")
        kind, token = "discord_bot", discord_api.TOKEN

        def first_after_resume(asked_before: int, committed: dict[str, Any]) -> bool:
            channel, after = server.listings()[asked_before]
            return after == committed["after"].get(channel, "0")

        count_asked = lambda: len(server.listings())  # noqa: E731
    else:
        server = max_api.MaxApi()
        for n in range(1, 601):
            server.post(max_api.TEAM, max_api.VERA, f"line {n}")
        kind, token = "max_bot", max_api.TOKEN

        def first_after_resume(asked_before: int, committed: dict[str, Any]) -> bool:
            return server.markers_asked()[asked_before] == str(committed["marker"])

        count_asked = lambda: len(server.markers_asked())  # noqa: E731
    try:
        connected = _wirecat(
            state,
            "shell",
            "-c",
            "from archive.sync.services.accounts import sync_connect as c;"
            f"print(c(kind={kind!r}, credentials={{'token': {token!r}}},"
            f" settings={{'api_url': {server.url!r}}}).public_id)",
            stdout=subprocess.PIPE,
        )
        out, _ = connected.communicate()
        public_id = out.decode().strip().splitlines()[-1]
        server.delay = 0.3
        worker = _wirecat(
            state, "sync", public_id, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        while _stored(state)[0] < 100 and time.monotonic() < deadline:
            time.sleep(0.05)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        killed_at = _stored(state)[0]
        assert 100 <= killed_at < 600
        committed = _committed_cursor(state)
        asked_before = count_asked()
        server.delay = 0
        time.sleep(2.5)  # the dead worker's lease lapses
        resumed = _wirecat(
            state, "sync", public_id, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        output, _ = resumed.communicate()
        assert resumed.returncode == 0, output.decode()
        assert first_after_resume(asked_before, committed)
        assert _stored(state) == (600, 600)
    finally:
        server.close()


def test_provider_data_no_translation_foresaw_fails_the_run_and_keeps_what_came_before(
    bot_api: BotApi,
) -> None:
    sync = connect(bot_api)
    chatter(bot_api, 100)  # the first page, fine
    bot_api.post(GROUP, ALICE, "broken")
    bot_api.updates[-1]["message"]["date"] = "soon"  # not a Unix time
    run = account_sync(sync_account_id=sync.pk, page_size=100)
    assert run is not None and run.outcome == "error"
    assert run.error == "unexpected ValueError while syncing (the worker's log has details)"
    assert Message.objects.filter(account=sync.account).count() == 100  # the page before
    sync.refresh_from_db()
    assert (sync.state, sync.lease_owner) == ("idle", "") and "ValueError" in sync.last_error


# the live registry --------------------------------------------------------------------------
