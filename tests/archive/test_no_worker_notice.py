"""Jobs never wait in silence: where one waits for a worker (tag all results, an import,
the Sync page's schedule, approved sends), a page says "No worker is running" and how to
start one while the workers' heartbeat is missing or stale, and nothing while it is fresh."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from archive.gateway.models import SendAttempt, SendOutcome
from archive.imports.models import ImportJob
from archive.owner.models import WorkerHeartbeat
from archive.store.models import Account, Chat
from archive.store.sink import batch_record
from archive.sync.models import SyncAccount
from archive.sync.services.accounts import sync_connect
from archive.tags.services import tag_bulk_create
from tests.factories import batch, message
from tests.providers.bot_api import TOKEN, BotApi

pytestmark = pytest.mark.django_db

NOTICE = "No worker is running"
HOW = "Start it with <code>wirecat start</code> (or <code>make run</code>)"


def beat(age: timedelta) -> None:
    WorkerHeartbeat.objects.update_or_create(
        hostname="worker-1", defaults={"seen_at": timezone.now() - age, "pid": 1}
    )


def states(client: Client, url: str, words: str) -> dict[str, str]:
    """The page at `url` with no heartbeat, a stale one and a fresh one."""
    pages = {"none": client.get(url).content.decode()}
    beat(timedelta(hours=2))
    pages["stale"] = client.get(url).content.decode()
    beat(timedelta(seconds=5))
    pages["fresh"] = client.get(url).content.decode()
    for state in ("none", "stale"):
        assert NOTICE in pages[state] and HOW in pages[state], state
        assert words in pages[state], state
    assert "The last worker was heard from" in pages["stale"]
    assert "The last worker was heard from" not in pages["none"]
    assert NOTICE not in pages["fresh"]
    return pages


def test_tag_all_results_says_it_waits_for_a_worker(owner_client: Client) -> None:
    batch_record(batch=batch(*[message(str(i), f"invoice {i}") for i in range(3)]))
    bulk = tag_bulk_create(query="invoice", name="money")  # queued: the job has not run
    pages = states(owner_client, f"/tags/all/{bulk.pk}/", "this tagging waits until one starts")
    assert "Queued" in pages["none"]
    # The progress card htmx polls carries the notice too.
    WorkerHeartbeat.objects.all().delete()
    polled = owner_client.get(f"/tags/all/{bulk.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in polled and NOTICE in polled


def test_a_queued_import_says_it_waits_for_a_worker(owner_client: Client) -> None:
    job = ImportJob.objects.create(source="exports/export.json", source_name="export.json")
    states(owner_client, f"/imports/{job.public_id}/", "this import waits until one starts")
    job.status = "done"
    job.save()
    WorkerHeartbeat.objects.all().delete()
    assert NOTICE not in owner_client.get(f"/imports/{job.public_id}/").content.decode()


def test_the_sync_page_promises_no_next_run_without_a_worker(
    owner_client: Client, bot_api: BotApi
) -> None:
    assert NOTICE not in owner_client.get("/sync/").content.decode()  # nothing to run yet
    sync = sync_connect(
        kind="telegram_bot", credentials={"token": TOKEN}, settings={"api_url": bot_api.url}
    )
    SyncAccount.objects.filter(pk=sync.pk).update(last_run_at=timezone.now())
    pages = states(owner_client, "/sync/", "no account is synced until one starts")
    assert "waits for a worker" in pages["none"]
    assert "waits for a worker" not in pages["fresh"] and "minutes from now" in pages["fresh"]
    row = owner_client.get(f"/sync/{sync.public_id}/").content.decode()
    assert "waits for a worker" not in row  # the heartbeat is fresh now
    WorkerHeartbeat.objects.all().delete()
    row = owner_client.get(f"/sync/{sync.public_id}/").content.decode()
    assert "waits for a worker" in row
    # "Sync now" says where the sync stands: queued until a worker runs, not "on its way".
    now = owner_client.post(f"/sync/{sync.public_id}/", {"action": "now"}, follow=True)
    assert "a sync is queued; it starts once a worker runs" in now.content.decode()
    beat(timedelta(seconds=1))
    now = owner_client.post(f"/sync/{sync.public_id}/", {"action": "now"}, follow=True)
    assert "a sync is on its way." in now.content.decode()


def test_the_sends_page_says_approved_sends_wait_for_a_worker(owner_client: Client) -> None:
    batch_record(batch=batch(message("1", "hello")))
    account, chat = Account.objects.get(), Chat.objects.get()
    assert NOTICE not in owner_client.get("/sends/").content.decode()  # nothing waits
    SendAttempt.objects.create(
        public_id="snd_waiting", account=account, chat=chat, outcome=SendOutcome.QUEUED
    )
    states(owner_client, "/sends/", "approved sends wait until one starts")
