"""The archive's scheduled jobs and the beat table they are installed from."""

from __future__ import annotations

import pytest
from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import DatabaseScheduler

from archive.owner.jobs import heartbeat
from archive.owner.models import WorkerHeartbeat
from archive.search.jobs import search_stems_drain
from archive.store.jobs import store_optimize
from archive.store.sink import batch_record
from tests.factories import batch, message
from wirecat.celery import app

pytestmark = pytest.mark.django_db


def test_store_optimize_merges_every_index() -> None:
    batch_record(batch=batch(message("1", "some words to index")))
    status = store_optimize.run()
    assert "message_fts: optimize" in status
    assert "message_trigram: optimize" in status
    assert "PRAGMA optimize" in status


def test_stems_drain_job_indexes_what_was_queued() -> None:
    batch_record(batch=batch(message("1", "dogs barking"), message("2", "a dog barked")))
    assert search_stems_drain.run().startswith("stems: 2 indexed, 0 queued")
    assert search_stems_drain.run().startswith("stems: 0 indexed, 0 queued")


def test_heartbeat_records_this_worker() -> None:
    heartbeat.run()
    heartbeat.run()
    beat = WorkerHeartbeat.objects.get()
    assert beat.store["journal_mode"] == "wal"


@pytest.mark.django_db(transaction=True)  # the scheduler closes its connection
def test_beat_table_is_installed_in_the_database_scheduler() -> None:
    DatabaseScheduler(app=app)
    tasks = dict(PeriodicTask.objects.values_list("name", "task"))
    assert tasks["heartbeat"] == "archive.jobs.heartbeat"
    assert tasks["store-optimize-nightly"] == "archive.jobs.store_optimize"
    assert tasks["search-stems-drain"] == "archive.jobs.search_stems_drain"
    nightly = PeriodicTask.objects.get(name="store-optimize-nightly")
    assert nightly.crontab is not None
    assert (nightly.crontab.hour, nightly.crontab.minute) == ("3", "30")
