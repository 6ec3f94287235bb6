"""Keeping the notes' stems index current (the words and trigram indexes keep themselves, by
triggers).

The triggers of `notes/migrations/0003_note_search.py` queue every note written, whose title
or body changed, or removed (`notes_stem_queue`). `note_stems_drain` stems them with the
messages' analyzer (`archive.search.services.index.search_analyzer`: the store's Latin
stemmers, Russian for Cyrillic), so one query means the same thing in both searches; a
changed analyzer clears the stems and queues every note again, as the messages' index does.
The queue's workings are the messages' own (`archive.search.services.stems_queue`); `NOTES`
names the notes' tables.

Who drains: the index job (`notes/jobs.py`), once a save commits and every minute. A search
never drains (a read takes no write lock): until then the words index answers for what
waits in the queue.
"""

from __future__ import annotations

from archive.search.services.index import search_analyzer
from archive.search.services.stems_queue import SLICE, StemsQueue, StemsReading
from archive.search.services.stems_queue import DrainResult as DrainResult

NOTES = StemsQueue(
    stems="note_stems",
    queue="notes_stem_queue",
    key="note_id",
    state="notes_search_state",
    requeue=("INSERT OR IGNORE INTO notes_stem_queue (note_id) SELECT id FROM notes_note",),
    # A note's title and body, a line apart.
    texts=(
        "SELECT n.id, n.title || char(10) || n.body FROM json_each(%(ids)s) AS q"
        " CROSS JOIN notes_note AS n ON n.id = q.value"
    ),
    documents="notes_note",
)


def note_stems_for_search() -> StemsReading:
    """The stems index as it stands, for a search: reads only."""
    return NOTES.reading(search_analyzer())


def note_stems_drain(*, budget_seconds: float | None = None, size: int = SLICE) -> DrainResult:
    """Stem the queued notes, a short transaction per slice, until the queue is empty or the
    budget is spent. Call it outside any transaction (after commit)."""
    return NOTES.drain(search_analyzer(), budget_seconds=budget_seconds, size=size)
