"""The Sync page and the live registry: connecting, the forms each connector brings, the
row actions, the admin, and errors shown where the owner typed."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from archive.connectors.live import (
    LIVE_CONNECTORS,
    LiveKind,
    live_connector_class,
    live_login,
    sending_providers,
)
from archive.connectors.sending import OutboundMessage, SendError, sender_for, unregister_sender
from archive.sync.jobs import account_sync as account_sync_job
from archive.sync.models import SyncAccount, SyncRun
from archive.sync.services.accounts import sync_connect
from archive.sync.services.run import account_sync
from archive.sync.services.sending import senders_register
from tests.archive.sync_support import chatter
from tests.providers.bot_api import TOKEN, BotApi

pytestmark = pytest.mark.django_db


def connect(api: BotApi, **extra: Any) -> SyncAccount:
    return sync_connect(
        kind="telegram_bot", credentials={"token": TOKEN}, settings={"api_url": api.url}, **extra
    )


def test_the_sync_page_needs_the_owner(client: Client) -> None:
    response = client.get("/sync/")
    assert response.status_code == 302 and "/login" in response["Location"]


def test_the_sync_page_connects_shows_runs_and_never_the_token(
    owner_client: Client, bot_api: BotApi, django_capture_on_commit_callbacks: Any
) -> None:
    empty = owner_client.get("/sync/").content.decode()
    assert "No live accounts yet" in empty and "Connect a Telegram bot" in empty
    with django_capture_on_commit_callbacks() as callbacks:
        response = owner_client.post(
            "/sync/connect/",
            {"kind": "telegram_bot", "token": TOKEN, "interval": "60", "api_url": bot_api.url},
        )
    assert response.status_code == 302
    assert len(callbacks) == 1  # the first sync is queued once the connection commits
    sync = SyncAccount.objects.get()
    chatter(bot_api, 30)
    account_sync_job.run(sync.pk, True)  # what the worker runs
    page = owner_client.get("/sync/").content.decode()
    assert "@archivist_bot" in page and "30 new, 0 changed" in page
    assert "offset=500031" in page and 'hx-trigger="every 2s"' not in page
    assert TOKEN not in page and TOKEN.split(":")[1] not in page

    # While a run holds the lease, the row polls and shows the run's figures.
    SyncAccount.objects.filter(pk=sync.pk).update(lease_owner="w:1", lease_until=timezone.now())
    SyncRun.objects.create(sync_account=sync, started_at=timezone.now(), fetched=12, added=11)
    row = owner_client.get(f"/sync/{sync.public_id}/").content.decode()
    assert "<html" not in row and 'hx-trigger="every 2s"' in row
    assert "<strong>12</strong> fetched" in row and "running" in row


def test_a_refused_token_is_shown_on_the_form_with_422(
    owner_client: Client, bot_api: BotApi
) -> None:
    bot_api.valid_tokens.clear()
    response = owner_client.post(
        "/sync/connect/", {"kind": "telegram_bot", "token": "12:nope", "api_url": bot_api.url}
    )
    assert response.status_code == 422
    assert "Telegram refused the bot token" in response.content.decode()
    for bad, words in [
        ({"kind": "fax"}, "kind: one of telegram_bot, discord_bot, max_bot, imap, imessage"),
        ({"kind": "telegram_bot", "token": ""}, "token: needed"),
        ({"kind": "telegram_bot", "token": "1:a", "interval": "soon"}, "whole number"),
        ({"kind": "telegram_bot", "token": "1:a", "api_url": "file:///etc"}, "http(s) URL"),
    ]:
        answer = owner_client.post("/sync/connect/", bad)
        assert answer.status_code == 422 and words in answer.content.decode()
    assert not SyncAccount.objects.exists()


def test_the_row_actions_sync_now_interval_pause_and_disconnect(
    owner_client: Client, bot_api: BotApi, django_capture_on_commit_callbacks: Any
) -> None:
    sync = connect(bot_api)
    url = f"/sync/{sync.public_id}/"
    with django_capture_on_commit_callbacks() as callbacks:
        assert owner_client.post(url, {"action": "now"}).status_code == 302
    assert len(callbacks) == 1
    owner_client.post(url, {"action": "interval", "interval": "5"})  # below the minimum
    sync.refresh_from_db()
    assert sync.interval_seconds == 300
    assert "at least 10 seconds" in owner_client.get("/sync/").content.decode()
    owner_client.post(url, {"action": "interval", "interval": "900"})
    owner_client.post(url, {"action": "pause"})
    sync.refresh_from_db()
    assert sync.interval_seconds == 900 and not sync.enabled
    task = PeriodicTask.objects.get(pk=sync.schedule_id)
    assert task.enabled is False and task.interval is not None and task.interval.every == 900
    assert account_sync(sync_account_id=sync.pk) is None  # paused: beat's runs skip it
    owner_client.post(url, {"action": "disconnect"})
    assert not SyncAccount.objects.exists() and not PeriodicTask.objects.filter(pk=task.pk).exists()
    assert owner_client.get(url).status_code == 404


def test_the_admin_edits_the_interval_through_the_service_and_never_shows_the_token(
    owner_client: Client, bot_api: BotApi
) -> None:
    sync = connect(bot_api)
    account_sync(sync_account_id=sync.pk)
    url = f"/admin/archive/syncaccount/{sync.pk}/change/"
    page = owner_client.get(url).content.decode()
    assert "@archivist_bot" in page and TOKEN not in page and sync.credentials not in page
    response = owner_client.post(
        url,
        {
            "interval_seconds": "1800",
            "enabled": "on",
            "runs-TOTAL_FORMS": "1",
            "runs-INITIAL_FORMS": "1",
            "runs-MIN_NUM_FORMS": "0",
            "runs-MAX_NUM_FORMS": "0",
            "runs-0-id": str(SyncRun.objects.get().pk),
            "runs-0-sync_account": str(sync.pk),
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    task = PeriodicTask.objects.get(pk=sync.schedule_id)
    assert task.interval is not None and task.interval.every == 1800
    assert owner_client.get("/admin/archive/syncaccount/add/").status_code == 403


def test_an_api_address_that_is_no_url_is_a_clear_422_not_a_500(owner_client: Client) -> None:
    for address, words in [
        ("http://[::1", "is not a URL"),
        ("http://exa mple.org", "API address: an http(s) URL"),
    ]:
        answer = owner_client.post(
            "/sync/connect/", {"kind": "discord_bot", "token": "t", "api_url": address}
        )
        assert answer.status_code == 422 and words in answer.content.decode(), address
    assert not SyncAccount.objects.exists()


def test_the_live_registry_says_what_its_connectors_say() -> None:
    """What the table tells a process without importing a connector (its provider, whether
    it sends, how the owner connects it) is what the connector's own class says."""
    for kind, entry in LIVE_CONNECTORS.items():
        connector = live_connector_class(kind)
        assert (connector.kind, connector.provider) == (kind, entry.provider)
        assert connector.capabilities.send or not entry.sends, kind
        assert hasattr(connector, "token_form") == entry.token, kind
        if entry.login:
            assert callable(live_login(kind).start) and callable(live_login(kind).advance)


def test_senders_are_the_registry_s_providers_and_a_new_one_joins_by_its_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert sending_providers() == ["telegram", "discord", "max"]
    assert all(sender_for(provider) is not None for provider in sending_providers())
    assert sender_for("mail") is None and sender_for("imessage") is None
    fax = LiveKind("tests.nowhere:FaxBot", "fax", sends=True)
    monkeypatch.setitem(LIVE_CONNECTORS, "fax_bot", fax)
    senders_register()
    try:
        sender = sender_for("fax")
        assert sender is not None
        with pytest.raises(SendError, match="'fax-1' has no live connection"):
            sender(OutboundMessage("fax-1", "chat-1", "hello", None, "snd_1"))
    finally:
        unregister_sender("fax")


def test_the_sync_page_shows_each_token_connector_s_own_form(owner_client: Client) -> None:
    page = owner_client.get("/sync/").content.decode()
    for title, words, api in [
        ("Telegram bot", "A token from @BotFather.", "api.telegram.org"),
        ("Discord bot", "with the Message Content intent on.", "discord.com/api/v10"),
        ("MAX bot", "A token from MAX for partners", "platform-api2.max.ru"),
    ]:
        assert f"Connect a {title}</h2>" in page and words in page
        assert f"(empty: {api})" in page
    kinds = ["telegram_bot", "discord_bot", "max_bot"]
    assert [page.index(f'name="kind" value="{kind}"') for kind in kinds] == sorted(
        page.index(f'name="kind" value="{kind}"') for kind in kinds
    )
