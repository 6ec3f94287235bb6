"""The meaning job: a conversation build asks for the refresh once (a marker file gathers
the asks until the run starts), and on a real Celery worker an import ends embedded —
the sink asks for the build, the build asks for the refresh, nothing else is called."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from archive.conversations.services.builds import conversations_build
from archive.meaning import jobs
from archive.meaning.models import Chunk, ChunkKind
from archive.meaning.selectors import meaning_search, readiness
from archive.store.models import Chat
from archive.store.sink import batch_record
from notes.services.notes import note_create, note_update
from tests.archive.test_worker import celery_worker, wait_for_heartbeat
from tests.broker import queued
from tests.factories import batch, message
from wirecat.celery import app

pytestmark = pytest.mark.django_db(transaction=True)


def _queued_refreshes(settings: Any) -> int:
    return queued(settings, "archive.jobs.embeddings_refresh")


def test_builds_ask_for_one_refresh_until_it_starts(settings: Any) -> None:
    if not settings.CELERY_BROKER_URL.startswith("sqla+sqlite:///"):
        pytest.fail("this test reads the embedded broker's file")
    batch_record(
        batch=batch(
            message("1", "who has the key to the bike shed?", chat="a"),
            message("2", "the spare key is under the mat", chat="b", minutes=1),
        )
    )
    marker = Path(settings.STATE_DIR) / "embeddings-refresh.asked"
    before = _queued_refreshes(settings)
    for chat in Chat.objects.all():  # two builds committed, each asking for the refresh
        conversations_build(chat_id=chat.pk)
    assert _queued_refreshes(settings) == before + 1 and marker.exists()

    said = jobs.embeddings_refresh_job()  # the queued run starts (here, in this process)
    assert said.startswith("meaning (all-MiniLM-L6-v2-int8): 2 chunks embedded")
    assert not marker.exists() and readiness().ready
    batch_record(batch=batch(message("3", "found it, thanks", chat="a", minutes=2)))
    conversations_build(chat_id=Chat.objects.get(external_id="a").pk)
    assert _queued_refreshes(settings) == before + 2  # an ask after the run started queues again


def test_a_note_saved_asks_for_the_refresh_and_its_run_cuts_and_embeds_it(
    settings: Any,
) -> None:
    if not settings.CELERY_BROKER_URL.startswith("sqla+sqlite:///"):
        pytest.fail("this test reads the embedded broker's file")
    before = _queued_refreshes(settings)
    note = note_create(title="Garden budget", body="Seeds, tools and a new hose.")
    note_update(public_id=note.public_id, revision=note.revision, body="Seeds and tools.")
    assert _queued_refreshes(settings) == before + 1  # two saves, one run queued
    jobs.embeddings_refresh_job()
    assert Chunk.objects.filter(kind=ChunkKind.NOTE).count() == 1 and readiness().ready


def test_the_job_is_on_the_index_queue_and_beat_runs_it() -> None:
    assert django_settings.CELERY_TASK_ROUTES["archive.jobs.embeddings_refresh"] == {
        "queue": "index"
    }
    entry = app.conf.beat_schedule["embeddings-refresh"]
    assert entry["task"] == "archive.jobs.embeddings_refresh"


@pytest.mark.slow
def test_an_import_ends_embedded_by_a_real_worker(tmp_path: Path, settings: Any) -> None:
    with celery_worker(settings.CELERY_BROKER_URL, tmp_path) as worker:
        wait_for_heartbeat(worker.pid, tmp_path)
        batch_record(
            batch=batch(
                message("1", "I was running late to the meeting because the bus broke down"),
                message("2", "no worries, we started late anyway", sender="bob", minutes=1),
            )
        )
        deadline = time.monotonic() + 300
        while True:
            ready = readiness()
            if ready.chunks and ready.ready:
                break
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(0.2)  # polling the worker's progress
    assert Chunk.objects.filter(kind=ChunkKind.CONVERSATION).exists()
    found = meaning_search("delayed arrival at the gathering", kinds=["conversation"])
    assert "running late" in found.hits["conversation"][0].text
