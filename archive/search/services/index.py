"""Keeping the stems index current: drain the queue of changed messages in bounded slices.

Called by the `search_stems_drain` job: once a batch of the sink commits (the store's
`STEMS_QUEUED` effect) and every minute (beat). Never by a search: a read takes no write
lock. Each slice is one short transaction: the queued ids' old stems go, their new ones
come, the ids leave the queue. A changed analyzer (the store's Latin stemmers, or a new
Snowball version) first clears the index and queues every message again, so stems of two
analyzers never mix.

A search asks `stems_for_search()` what it may use: the stems index when it was made by
the analyzer the settings ask for, else the words index alone; either way it learns
whether the stems are behind (messages queued: the words index answers for them), and
says so.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

from django.db import connection, transaction

from archive.search.analyzer import Analyzer, latin_choices
from archive.search.models import SearchConfig

log = logging.getLogger(__name__)

SLICE = 500

_analyzers: dict[tuple[str, ...], Analyzer] = {}


def search_analyzer(config: SearchConfig | None = None) -> Analyzer:
    """The analyzer the store's settings ask for (one per choice per process, memoised)."""
    if config is None:
        config = SearchConfig.objects.filter(pk=1).first()
    try:
        latin = latin_choices(config.latin_stemmers if config else "")
    except ValueError:
        log.warning("search settings name an unknown stemmer; using English")
        latin = latin_choices("")
    analyzer = _analyzers.get(latin)
    if analyzer is None:
        analyzer = _analyzers[latin] = Analyzer(latin=latin)
    return analyzer


@dataclass(frozen=True)
class DrainResult:
    indexed: int
    left: int
    rebuilt: bool
    analyzer: Analyzer


def _ensure_analyzer(config: SearchConfig, analyzer: Analyzer) -> bool:
    """Rebuild (clear and queue everything) when the index was made by another analyzer."""
    if config.stems_analyzer == analyzer.signature:
        return False
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM message_stems")
        cursor.execute(
            "INSERT OR IGNORE INTO archive_stem_queue (message_id) SELECT id FROM archive_message"
        )
        SearchConfig.objects.filter(pk=config.pk).update(stems_analyzer=analyzer.signature)
    config.stems_analyzer = analyzer.signature
    log.info("stems index: rebuilding for %s", analyzer.signature)
    return True


def _queued() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXISTS (SELECT 1 FROM archive_stem_queue)")
        return bool(cursor.fetchone()[0])


def _slice(analyzer: Analyzer, size: int) -> int:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT message_id FROM archive_stem_queue ORDER BY message_id LIMIT %s", [size]
        )
        ids = [row[0] for row in cursor.fetchall()]
        if not ids:
            return 0
        id_list = json.dumps(ids)
        cursor.execute(
            "SELECT m.id, m.text FROM json_each(%s) AS q CROSS JOIN archive_message AS m"
            " ON m.id = q.value",
            [id_list],
        )
        rows = [[message_id, analyzer.stems(text)] for message_id, text in cursor.fetchall()]
        cursor.execute(
            "DELETE FROM message_stems WHERE rowid IN (SELECT value FROM json_each(%s))",
            [id_list],
        )
        cursor.execute(
            "INSERT INTO message_stems (rowid, stems)"
            " SELECT value ->> 0, value ->> 1 FROM json_each(%s)",
            [json.dumps(rows, ensure_ascii=False)],
        )
        cursor.execute(
            "DELETE FROM archive_stem_queue WHERE message_id IN (SELECT value FROM json_each(%s))",
            [id_list],
        )
    return len(ids)


def stems_drain(*, budget_seconds: float | None = None, size: int = SLICE) -> DrainResult:
    """Index queued messages' stems until the queue is empty or the budget is spent."""
    config, _ = SearchConfig.objects.get_or_create(pk=1)
    analyzer = search_analyzer(config)
    rebuilt = _ensure_analyzer(config, analyzer)
    deadline = None if budget_seconds is None else time.monotonic() + budget_seconds
    indexed = 0
    while _queued() and (deadline is None or time.monotonic() < deadline):
        indexed += _slice(analyzer, size)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM archive_stem_queue")
        left = int(cursor.fetchone()[0])
    return DrainResult(indexed=indexed, left=left, rebuilt=rebuilt, analyzer=analyzer)


@dataclass(frozen=True)
class StemsReading:
    """What a search may use of the stems index: `analyzer` to stem its words with (None:
    the index was made by another analyzer, or never, so the words index answers alone),
    and whether the index is `behind` (messages wait in the queue, or it needs a rebuild)."""

    analyzer: Analyzer | None
    behind: bool


def stems_for_search() -> StemsReading:
    """The stems index as it stands, for a search: reads only, never drains the queue."""
    config = SearchConfig.objects.filter(pk=1).first()
    analyzer = search_analyzer(config) if config is not None else None
    if config is None or analyzer is None or config.stems_analyzer != analyzer.signature:
        # Never made, or made by another analyzer (the job rebuilds it): words only.
        return StemsReading(analyzer=None, behind=_any_message())
    return StemsReading(analyzer=analyzer, behind=_queued())


def _any_message() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXISTS (SELECT 1 FROM archive_message)")
        return bool(cursor.fetchone()[0])


# The vocabulary is rebuilt when the archive has grown by this share since the last build.
VOCABULARY_GROWTH = 0.05


def vocabulary_refresh(*, force: bool = False) -> int | None:
    """Rebuild the typo vocabulary from the words index when the archive has grown by 5 %
    since (or when forced); returns the number of terms, or None when it was current."""
    config, _ = SearchConfig.objects.get_or_create(pk=1)
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(max(id), 0) FROM archive_message")
        through = int(cursor.fetchone()[0])
    if not force and through <= config.vocabulary_through * (1 + VOCABULARY_GROWTH):
        return None
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM search_terms")
        cursor.execute(
            "INSERT INTO search_terms (term, docs) SELECT term, doc FROM message_fts_vocab"
            " WHERE length(term) BETWEEN 3 AND 40"
        )
        cursor.execute("SELECT count(*) FROM search_terms")
        terms = int(cursor.fetchone()[0])
        SearchConfig.objects.filter(pk=config.pk).update(vocabulary_through=through)
    return terms
