"""The files' jobs (queue `index`): read the text of stored attachments in bounded slices,
newest first, after an import or a sync stored files and every few minutes, then stem it."""

from __future__ import annotations

import fcntl
import functools
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from celery import shared_task
from django.conf import settings

from archive.files.search_index import file_stems_drain
from archive.files.services import attachment_text_extract, attachment_texts_extract
from archive.store.effects import FILES_STORED, effect_connect

log = logging.getLogger(__name__)

# One slice: at most this many files, for about this long (the file being read when the
# time runs out is finished: at most WIRECAT_FILE_TEXT_SECONDS more). A slice that leaves
# files waiting queues the next, so other jobs on the queue get their turn in between.
SLICE_FILES = 100
SLICE_SECONDS = 120.0
STEMS_BUDGET_SECONDS = 30.0


@contextmanager
def _one_reader() -> Iterator[bool]:
    """True when this process holds the files' reading lock (a file lock in the state
    folder, let go when the process dies): two workers would read the same newest files."""
    path = Path(settings.STATE_DIR) / "file-text.lock"
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@shared_task(name="archive.jobs.file_texts_extract", ignore_result=True)
def file_texts_extract() -> str:
    """Read one slice of the stored files without text (newest message first), stem what
    was read, and queue the next slice while files wait. Asked for once a batch that
    stored files commits (an import, a sync) and every five minutes (beat)."""
    with _one_reader() as mine:
        if not mine:
            return "files: another run is reading them"
        run = attachment_texts_extract(limit=SLICE_FILES, budget_seconds=SLICE_SECONDS)
        stems = file_stems_drain(budget_seconds=STEMS_BUDGET_SECONDS)
    states = ", ".join(f"{n} {state}" for state, n in sorted(run.states.items())) or "none"
    if run.left and run.read:
        # A broker that does not answer is not waited for: the beat's run catches up.
        file_texts_extract.apply_async(retry=False)
    return (
        f"files: {run.read} read in {run.seconds:.1f}s ({states}), {run.left} waiting;"
        f" stems: {stems.indexed} indexed, {stems.left} queued"
    )


@shared_task(name="archive.jobs.file_text_read", ignore_result=True)
def file_text_read(attachment_id: int, ocr: bool = False) -> str:
    """Read one file now (the owner asked: OCR of a scan), then stem its text. An agent's
    text stays; good text is not replaced by a failed OCR."""
    row = attachment_text_extract(attachment_id=attachment_id, ocr=ocr)
    file_stems_drain(budget_seconds=STEMS_BUDGET_SECONDS)
    if row is None:
        return f"attachment {attachment_id}: no stored file to read"
    return f"attachment {attachment_id}: {row.state} ({row.extractor or 'no reader'})"


# A batch of the sink that stored files with their bytes (archive/store/sink/record.py).
effect_connect(FILES_STORED, functools.partial(file_texts_extract.apply_async, retry=False))
