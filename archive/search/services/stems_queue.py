"""A stems index kept from a queue: the messages', the notes' and the meetings' are each one.

Triggers queue a document (by its rowid in the stems index) whenever its text is written,
changed or removed. `StemsQueue.drain` stems what waits with the search analyzer, a short
transaction per slice: the slice's old stems go, their new ones come, its rowids leave the
queue (a removed document has no text: its stems go, none come). A state row records the
analyzer the index was made by; another analyzer first clears the index and queues every
document again, so stems of two analyzers never mix. Call it outside any transaction
(after commit).

A search asks `StemsQueue.reading` what it may use, and never drains (a read takes no
write lock): the stems index when it was made by the analyzer the settings ask for, else
the words index alone; either way whether documents wait (the words index answers for
them).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from django.db import connection, transaction

from archive.search.analyzer import Analyzer

SLICE = 500


@dataclass(frozen=True)
class StemsReading:
    """What a search may use of a stems index: `analyzer` to stem its words with (None: the
    index was made by another analyzer, or never, so the words index answers alone), and
    whether the index is `behind` (documents wait in the queue, or it needs a rebuild)."""

    analyzer: Analyzer | None
    behind: bool


@dataclass(frozen=True)
class DrainResult:
    indexed: int
    left: int
    rebuilt: bool
    analyzer: Analyzer


@dataclass(frozen=True)
class StemsQueue:
    """One stems index and what keeps it.

    `stems`: the FTS5 table (rowid, stems). `queue`: the rowids waiting, in its column
    `key`. `state`: the table whose row 1 records, in `stems_analyzer`, the analyzer the
    index was made by. `requeue`: the statements that queue every document (a rebuild).
    `texts`: SQL of (rowid, text) for the rowids listed by the JSON array `%(ids)s` (a
    rowid with no document left yields no row). `documents`: a table whether any row of
    which says an index never made is behind; None: behind whenever never made."""

    stems: str
    queue: str
    key: str
    state: str
    requeue: tuple[str, ...]
    texts: str
    documents: str | None = None

    def recorded(self) -> str:
        """The signature of the analyzer the index was made by ("" never made)."""
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT stems_analyzer FROM {self.state} WHERE id = 1")
            row = cursor.fetchone()
        return str(row[0]) if row else ""

    def waiting(self) -> bool:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {self.queue})")
            return bool(cursor.fetchone()[0])

    def left(self) -> int:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {self.queue}")
            return int(cursor.fetchone()[0])

    def reading(self, analyzer: Analyzer, recorded: str | None = None) -> StemsReading:
        """The index as it stands, for a search by `analyzer`: reads only. `recorded`: the
        state row's signature, when the caller has read it already."""
        if (self.recorded() if recorded is None else recorded) != analyzer.signature:
            # Never made, or made by another analyzer (the drain rebuilds it): words only.
            return StemsReading(analyzer=None, behind=self._any_document())
        return StemsReading(analyzer=analyzer, behind=self.waiting())

    def _any_document(self) -> bool:
        if self.documents is None:
            return True
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {self.documents})")
            return bool(cursor.fetchone()[0])

    def rebuild_if_needed(self, analyzer: Analyzer, recorded: str | None = None) -> bool:
        """Clear the index and queue every document when another analyzer made it."""
        if (self.recorded() if recorded is None else recorded) == analyzer.signature:
            return False
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {self.stems}")
            for statement in self.requeue:
                cursor.execute(statement)
            cursor.execute(
                f"UPDATE {self.state} SET stems_analyzer = %s WHERE id = 1", [analyzer.signature]
            )
        return True

    def slice(self, analyzer: Analyzer, size: int) -> int:
        """Stem the first `size` rowids of the queue, in one transaction; how many."""
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {self.key} FROM {self.queue} ORDER BY {self.key} LIMIT %s", [size]
            )
            ids = [int(row[0]) for row in cursor.fetchall()]
            if not ids:
                return 0
            id_list = json.dumps(ids)
            cursor.execute(self.texts, {"ids": id_list})
            rows = [[rowid, analyzer.stems(text)] for rowid, text in cursor.fetchall()]
            cursor.execute(
                f"DELETE FROM {self.stems} WHERE rowid IN (SELECT value FROM json_each(%s))",
                [id_list],
            )
            cursor.execute(
                f"INSERT INTO {self.stems} (rowid, stems)"
                " SELECT value ->> 0, value ->> 1 FROM json_each(%s)",
                [json.dumps(rows, ensure_ascii=False)],
            )
            cursor.execute(
                f"DELETE FROM {self.queue} WHERE {self.key} IN (SELECT value FROM json_each(%s))",
                [id_list],
            )
        return len(ids)

    def drain(
        self,
        analyzer: Analyzer,
        *,
        recorded: str | None = None,
        budget_seconds: float | None = None,
        size: int = SLICE,
    ) -> DrainResult:
        """Stem what waits, a slice at a time, until the queue is empty or the budget is
        spent (rebuilding first when `analyzer` did not make the index; `recorded` as for
        `reading`)."""
        rebuilt = self.rebuild_if_needed(analyzer, recorded)
        deadline = None if budget_seconds is None else time.monotonic() + budget_seconds
        indexed = 0
        while self.waiting() and (deadline is None or time.monotonic() < deadline):
            indexed += self.slice(analyzer, size)
        return DrainResult(indexed=indexed, left=self.left(), rebuilt=rebuilt, analyzer=analyzer)
