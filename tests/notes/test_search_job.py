"""The index job: a note's save (or delete) asks for it after commit, and it stems what the
save queued; every minute (beat) it catches up, on the index queue."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from archive.store.effects import Effect
from notes.jobs import notes_stems_drain
from notes.search import note_search
from notes.services.notes import NOTES_INDEX_QUEUED, note_create, note_delete, note_update
from wirecat.celery import app

pytestmark = pytest.mark.django_db


@pytest.fixture
def celery_inline() -> Iterator[None]:
    """Celery runs a job where it is enqueued (its own eager mode): what a worker would do
    with it, at once (as tests/archive/conftest.py's fixture of the same name)."""
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


def _queued() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM notes_stem_queue")
        return int(cursor.fetchone()[0])


def _titles(query: str) -> list[str]:
    return [hit.note.title for hit in note_search(query=query).hits]


def test_every_save_runs_the_stems_job_once_it_commits(celery_inline: None, committed: Any) -> None:
    with committed() as created:
        note = note_create(title="Morning", body="she runs every day")
    assert created.count(Effect(NOTES_INDEX_QUEUED)) == 1
    assert _queued() == 0  # the job ran after the commit
    page = note_search(query="running")
    assert [hit.note.title for hit in page.hits] == ["Morning"] and not page.stems_behind

    with committed() as edited:
        note_update(public_id=note.public_id, revision=note.revision, body="walked home")
    assert edited.count(Effect(NOTES_INDEX_QUEUED)) == 1
    assert _queued() == 0 and _titles("walking") == ["Morning"] and _titles("running") == []

    with committed() as deleted:
        note_delete(public_id=note.public_id)
    assert deleted.count(Effect(NOTES_INDEX_QUEUED)) == 1
    assert _queued() == 0 and _titles("walking") == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM note_stems")
        assert cursor.fetchone()[0] == 0


def test_many_saves_in_one_transaction_run_the_job_once(
    celery_inline: None, committed: Any
) -> None:
    with committed() as callbacks:
        for n in range(5):
            note_create(title=f"Imported {n}", body="walking notes")
    assert callbacks.count(Effect(NOTES_INDEX_QUEUED)) == 1
    assert _queued() == 0 and len(_titles("walk")) == 5


def test_the_minute_job_catches_up_on_the_index_queue() -> None:
    note_create(title="Sync", body="we keep meeting on Mondays")
    note_create(title="Other", body="meetings all day")
    assert notes_stems_drain.run().startswith("note stems: 2 indexed, 0 queued")
    assert sorted(_titles("meeting")) == ["Other", "Sync"]
    assert notes_stems_drain.run() == "note stems: 0 indexed, 0 queued"
    entry = app.conf.beat_schedule["notes-stems-drain"]
    assert entry["task"] == notes_stems_drain.name == "archive.jobs.notes_stems_drain"
    assert entry["options"]["expires"] < entry["schedule"]
    assert settings.CELERY_TASK_ROUTES[notes_stems_drain.name] == {"queue": "index"}
