"""The notes' jobs: keep the stems of notes current."""

from __future__ import annotations

import functools

from celery import shared_task

from archive.store.effects import effect_connect
from notes.search_index import note_stems_drain
from notes.services.notes import NOTES_INDEX_QUEUED

# A run ends well before the next one (beat, every minute) starts.
STEMS_DRAIN_BUDGET_SECONDS = 50.0


@shared_task(name="archive.jobs.notes_stems_drain", ignore_result=True)
def notes_stems_drain() -> str:
    """Stem the notes saved or deleted since: once a save commits, and every minute (beat),
    which catches up on what a save's job missed (the broker was down). Until then the words
    index answers for them."""
    result = note_stems_drain(budget_seconds=STEMS_DRAIN_BUDGET_SECONDS)
    rebuilt = ", rebuilding for a new analyzer" if result.rebuilt else ""
    return f"note stems: {result.indexed} indexed, {result.left} queued{rebuilt}"


# Once a save or a delete commits (notes/services/notes.py). A broker that does not answer
# is not waited for: the minute's run catches up.
effect_connect(NOTES_INDEX_QUEUED, functools.partial(notes_stems_drain.apply_async, retry=False))
