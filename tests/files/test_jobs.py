"""The files' job: asked for once a batch that stored files commits (an import, a sync),
every five minutes by beat, on the `index` queue; it reads in slices (queueing the next
while files wait), one worker at a time, and stems what it read."""

from __future__ import annotations

import fcntl
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command

from archive.files import jobs
from archive.files.jobs import file_text_read, file_texts_extract
from archive.files.models import AttachmentText
from archive.files.selectors import file_text_counts
from archive.store.domain import AttachmentRecord
from archive.store.effects import FILES_STORED, Effect
from archive.store.models import Attachment
from archive.store.sink import batch_record
from tests.factories import batch, message
from tests.files.test_services import NOTES, png, stems, store_file, words
from wirecat.celery import app

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
Committed = Callable[[], AbstractContextManager[list[Any]]]


@pytest.fixture
def celery_inline() -> Iterator[None]:
    """Celery runs a job where it is enqueued (as tests/archive/conftest.py does)."""
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


def test_an_import_that_stored_files_has_their_text_read(
    celery_inline: None, committed: Committed
) -> None:
    with committed() as callbacks:
        call_command("import", str(FIXTURES / "telegram" / "personal_2020"), stdout=StringIO())
    assert Effect(FILES_STORED) in callbacks
    notes = Attachment.objects.get(file_name="notes.txt")
    row = AttachmentText.objects.get(pk=notes.pk)
    assert row.state == "done" and "Shopping list" in row.text
    assert words("hammer") == [notes.pk] and stems("hammer") == [notes.pk]
    counts = file_text_counts()
    assert counts.stored == Attachment.objects.exclude(path=None).count() >= 2
    assert counts.waiting == 0


def test_the_sink_asks_for_the_job_only_when_it_stored_bytes(
    celery_inline: None, committed: Committed
) -> None:
    with committed() as stored:
        photo = store_file(png(), "whiteboard.png", "image/png")
    assert stored.count(Effect(FILES_STORED)) == 1
    assert AttachmentText.objects.get(pk=photo.pk).state == "needs_text"
    with committed() as metadata_only:
        batch_record(batch=batch(message("2", attachments=(AttachmentRecord(external_id="meta"),))))
    assert Effect(FILES_STORED) not in metadata_only


def test_a_slice_queues_the_next_while_files_wait(
    celery_inline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = [store_file(f"letter {n}".encode(), f"{n}.txt", "text/plain") for n in range(3)]
    monkeypatch.setattr(jobs, "SLICE_FILES", 1)
    said = file_texts_extract.delay().get()
    assert said.startswith("files: 1 read") and "2 waiting" in said
    # Eager: the next slices ran at once, each asked for by the one before.
    assert AttachmentText.objects.filter(pk__in=[a.pk for a in made]).count() == 3


def test_one_worker_reads_at_a_time() -> None:
    store_file(NOTES, "notes.txt", "text/plain")
    lock = Path(settings.STATE_DIR) / "file-text.lock"
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert file_texts_extract() == "files: another run is reading them"
        assert not AttachmentText.objects.exists()
    assert "1 read" in file_texts_extract()
    assert AttachmentText.objects.get().state == "done"


def test_one_file_is_read_on_request() -> None:
    notes = store_file(NOTES, "notes.txt", "text/plain")
    assert file_text_read(notes.pk).startswith(f"attachment {notes.pk}: done")
    assert stems("plumber") == [notes.pk]
    assert file_text_read(10**9) == f"attachment {10**9}: no stored file to read"


def test_the_job_is_on_the_index_queue_and_beat_runs_it() -> None:
    route = settings.CELERY_TASK_ROUTES["archive.jobs.file_texts_extract"]
    assert route == {"queue": "index"}
    entry = app.conf.beat_schedule["file-texts-extract"]
    assert entry["task"] == "archive.jobs.file_texts_extract"
    assert entry["schedule"] == 300.0 and entry["options"]["expires"] < 300
