"""Keeping the meetings' stems index current (the words index keeps itself, by triggers).

The triggers of `meetings/migrations/0002_meeting_search.py` queue every transcript segment
and meeting written, changed or removed (`meetings_stem_queue`, by document: 2 * segment
id, 2 * meeting id + 1). `meeting_stems_drain` stems them with the messages' analyzer
(`archive.search.services.index.search_analyzer`: the store's Latin stemmers, Russian for
Cyrillic), so one query means the same thing in both searches; a changed analyzer clears
the stems and queues every document again, as the messages' index does.

Who drains: the transcript API after it stores a transcript, and whatever writes meetings
in bulk (an import) once it commits. A search never drains (a read takes no write lock):
until then the words index answers for what waits in the queue.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from django.db import connection, transaction

from archive.search.services.index import Analyzer, search_analyzer

SLICE = 500


@dataclass(frozen=True)
class MeetingStems:
    """What a meetings search may use of the stems index: `analyzer` (None: the index was
    made by another analyzer, or never) and whether documents wait in the queue."""

    analyzer: Analyzer | None
    behind: bool


def _recorded() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT stems_analyzer FROM meetings_search_state WHERE id = 1")
        row = cursor.fetchone()
    return str(row[0]) if row else ""


def _queued() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM meetings_stem_queue")
        return int(cursor.fetchone()[0])


def meeting_stems_for_search() -> MeetingStems:
    """The stems index as it stands, for a search: reads only."""
    analyzer = search_analyzer()
    if _recorded() != analyzer.signature:
        return MeetingStems(analyzer=None, behind=True)
    return MeetingStems(analyzer=analyzer, behind=_queued() > 0)


def _rebuild_if_needed(analyzer: Analyzer) -> bool:
    if _recorded() == analyzer.signature:
        return False
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM meeting_stems")
        cursor.execute(
            "INSERT OR IGNORE INTO meetings_stem_queue (doc) SELECT id * 2 FROM meetings_segment"
        )
        cursor.execute(
            "INSERT OR IGNORE INTO meetings_stem_queue (doc)"
            " SELECT id * 2 + 1 FROM meetings_meeting"
        )
        cursor.execute(
            "UPDATE meetings_search_state SET stems_analyzer = %s WHERE id = 1",
            [analyzer.signature],
        )
    return True


def _slice(analyzer: Analyzer, size: int) -> int:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT doc FROM meetings_stem_queue ORDER BY doc LIMIT %s", [size])
        docs = [int(row[0]) for row in cursor.fetchall()]
        if not docs:
            return 0
        doc_list = json.dumps(docs)
        cursor.execute(
            "SELECT s.id * 2, s.text FROM json_each(%s) AS q"
            " CROSS JOIN meetings_segment AS s ON s.id = q.value / 2 WHERE q.value %% 2 = 0"
            " UNION ALL"
            " SELECT m.id * 2 + 1, m.title || ' ' || m.description FROM json_each(%s) AS q"
            " CROSS JOIN meetings_meeting AS m ON m.id = q.value / 2 WHERE q.value %% 2 = 1",
            [doc_list, doc_list],
        )
        rows = [[doc, analyzer.stems(text)] for doc, text in cursor.fetchall()]
        cursor.execute(
            "DELETE FROM meeting_stems WHERE rowid IN (SELECT value FROM json_each(%s))",
            [doc_list],
        )
        cursor.execute(
            "INSERT INTO meeting_stems (rowid, stems)"
            " SELECT value ->> 0, value ->> 1 FROM json_each(%s)",
            [json.dumps(rows, ensure_ascii=False)],
        )
        cursor.execute(
            "DELETE FROM meetings_stem_queue WHERE doc IN (SELECT value FROM json_each(%s))",
            [doc_list],
        )
    return len(docs)


@dataclass(frozen=True)
class DrainResult:
    indexed: int
    left: int
    rebuilt: bool


def meeting_stems_drain(*, budget_seconds: float | None = None, size: int = SLICE) -> DrainResult:
    """Stem the queued segments and meetings, a short transaction per slice, until the queue
    is empty or the budget is spent. Call it outside any transaction (after commit)."""
    analyzer = search_analyzer()
    rebuilt = _rebuild_if_needed(analyzer)
    deadline = None if budget_seconds is None else time.monotonic() + budget_seconds
    indexed = 0
    while _queued() and (deadline is None or time.monotonic() < deadline):
        indexed += _slice(analyzer, size)
    return DrainResult(indexed=indexed, left=_queued(), rebuilt=rebuilt)
