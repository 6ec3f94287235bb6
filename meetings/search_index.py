"""Keeping the meetings' stems index current (the words index keeps itself, by triggers).

The triggers of `meetings/migrations/0002_meeting_search.py` queue every transcript segment
and meeting written, changed or removed (`meetings_stem_queue`, by document: 2 * segment
id, 2 * meeting id + 1). `meeting_stems_drain` stems them with the messages' analyzer
(`archive.search.services.index.search_analyzer`: the store's Latin stemmers, Russian for
Cyrillic), so one query means the same thing in both searches; a changed analyzer clears
the stems and queues every document again, as the messages' index does. The queue's
workings are the messages' own (`archive.search.services.stems_queue`); `MEETINGS` names
the meetings' tables.

Who drains: the transcript API after it stores a transcript, and whatever writes meetings
in bulk (an import) once it commits. A search never drains (a read takes no write lock):
until then the words index answers for what waits in the queue.
"""

from __future__ import annotations

from archive.search.services.index import search_analyzer
from archive.search.services.stems_queue import SLICE, StemsQueue, StemsReading
from archive.search.services.stems_queue import DrainResult as DrainResult

MEETINGS = StemsQueue(
    stems="meeting_stems",
    queue="meetings_stem_queue",
    key="doc",
    state="meetings_search_state",
    requeue=(
        "INSERT OR IGNORE INTO meetings_stem_queue (doc) SELECT id * 2 FROM meetings_segment",
        "INSERT OR IGNORE INTO meetings_stem_queue (doc) SELECT id * 2 + 1 FROM meetings_meeting",
    ),
    # A document is a segment's text or a meeting's title and description.
    texts=(
        "SELECT s.id * 2, s.text FROM json_each(%(ids)s) AS q"
        " CROSS JOIN meetings_segment AS s ON s.id = q.value / 2 WHERE q.value %% 2 = 0"
        " UNION ALL"
        " SELECT m.id * 2 + 1, m.title || ' ' || m.description FROM json_each(%(ids)s) AS q"
        " CROSS JOIN meetings_meeting AS m ON m.id = q.value / 2 WHERE q.value %% 2 = 1"
    ),
    documents=None,  # behind until the index is first made, documents or not
)


def meeting_stems_for_search() -> StemsReading:
    """The stems index as it stands, for a search: reads only."""
    return MEETINGS.reading(search_analyzer())


def meeting_stems_drain(*, budget_seconds: float | None = None, size: int = SLICE) -> DrainResult:
    """Stem the queued segments and meetings, a short transaction per slice, until the queue
    is empty or the budget is spent. Call it outside any transaction (after commit)."""
    return MEETINGS.drain(search_analyzer(), budget_seconds=budget_seconds, size=size)
