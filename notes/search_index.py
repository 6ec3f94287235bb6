"""Keeping the notes' stems index current (the words and trigram indexes keep themselves, by
triggers).

The triggers of `notes/migrations/0003_note_search.py` queue every note written, whose title
or body changed, or removed (`notes_stem_queue`). `note_stems_drain` stems them with the
messages' analyzer (`archive.search.services.index.search_analyzer`: the store's Latin
stemmers, Russian for Cyrillic), so one query means the same thing in both searches; a
changed analyzer clears the stems and queues every note again, as the messages' index does.

Who drains: the index job (`notes/jobs.py`), once a save commits and every minute. A search
never drains (a read takes no write lock): until then the words index answers for what
waits in the queue.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from django.db import connection, transaction

from archive.search.services.index import Analyzer, search_analyzer

SLICE = 500


@dataclass(frozen=True)
class NoteStems:
    """What a notes search may use of the stems index: `analyzer` (None: the index was made
    by another analyzer, or never) and whether notes wait for their stems."""

    analyzer: Analyzer | None
    behind: bool


def _recorded() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT stems_analyzer FROM notes_search_state WHERE id = 1")
        row = cursor.fetchone()
    return str(row[0]) if row else ""


def _queued() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM notes_stem_queue")
        return int(cursor.fetchone()[0])


def _any_note() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXISTS (SELECT 1 FROM notes_note)")
        return bool(cursor.fetchone()[0])


def note_stems_for_search() -> NoteStems:
    """The stems index as it stands, for a search: reads only."""
    analyzer = search_analyzer()
    if _recorded() != analyzer.signature:
        # Never made, or made by another analyzer (the job rebuilds it): words only.
        return NoteStems(analyzer=None, behind=_any_note())
    return NoteStems(analyzer=analyzer, behind=_queued() > 0)


def _rebuild_if_needed(analyzer: Analyzer) -> bool:
    if _recorded() == analyzer.signature:
        return False
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM note_stems")
        cursor.execute("INSERT OR IGNORE INTO notes_stem_queue (note_id) SELECT id FROM notes_note")
        cursor.execute(
            "UPDATE notes_search_state SET stems_analyzer = %s WHERE id = 1",
            [analyzer.signature],
        )
    return True


def _slice(analyzer: Analyzer, size: int) -> int:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT note_id FROM notes_stem_queue ORDER BY note_id LIMIT %s", [size])
        ids = [int(row[0]) for row in cursor.fetchall()]
        if not ids:
            return 0
        id_list = json.dumps(ids)
        cursor.execute(
            "SELECT n.id, n.title, n.body FROM json_each(%s) AS q"
            " CROSS JOIN notes_note AS n ON n.id = q.value",
            [id_list],
        )
        # A removed note has no row: its old stems go, none come.
        rows = [
            [note_id, analyzer.stems(f"{title}\n{body}")]
            for note_id, title, body in cursor.fetchall()
        ]
        cursor.execute(
            "DELETE FROM note_stems WHERE rowid IN (SELECT value FROM json_each(%s))", [id_list]
        )
        cursor.execute(
            "INSERT INTO note_stems (rowid, stems) SELECT value ->> 0, value ->> 1"
            " FROM json_each(%s)",
            [json.dumps(rows, ensure_ascii=False)],
        )
        cursor.execute(
            "DELETE FROM notes_stem_queue WHERE note_id IN (SELECT value FROM json_each(%s))",
            [id_list],
        )
    return len(ids)


@dataclass(frozen=True)
class DrainResult:
    indexed: int
    left: int
    rebuilt: bool


def note_stems_drain(*, budget_seconds: float | None = None, size: int = SLICE) -> DrainResult:
    """Stem the queued notes, a short transaction per slice, until the queue is empty or the
    budget is spent. Call it outside any transaction (after commit)."""
    analyzer = search_analyzer()
    rebuilt = _rebuild_if_needed(analyzer)
    deadline = None if budget_seconds is None else time.monotonic() + budget_seconds
    indexed = 0
    while _queued() and (deadline is None or time.monotonic() < deadline):
        indexed += _slice(analyzer, size)
    return DrainResult(indexed=indexed, left=_queued(), rebuilt=rebuilt)
