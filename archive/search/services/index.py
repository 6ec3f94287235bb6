"""Keeping the stems index current: drain the queue of changed messages in bounded slices.

Called by the `search_stems_drain` job: once a batch of the sink commits (the store's
`STEMS_QUEUED` effect) and every minute (beat). Never by a search: a read takes no write
lock. Each slice is one short transaction: the queued ids' old stems go, their new ones
come, the ids leave the queue. A changed analyzer (the store's Latin stemmers, or a new
Snowball version) first clears the index and queues every message again, so stems of two
analyzers never mix. The queue's workings are `stems_queue.py`'s (the notes' and the
meetings' stems indexes are kept by it too); `MESSAGE_STEMS` names the messages' tables.

A search asks `stems_for_search()` what it may use: the stems index when it was made by
the analyzer the settings ask for, else the words index alone; either way it learns
whether the stems are behind (messages queued: the words index answers for them), and
says so. `search_analyzer` is the one analyzer every search stems with.
"""

from __future__ import annotations

import logging

from django.db import connection, transaction

from archive.search.analyzer import Analyzer, latin_choices
from archive.search.models import SearchConfig
from archive.search.services.stems_queue import SLICE, DrainResult, StemsQueue, StemsReading

log = logging.getLogger(__name__)

MESSAGE_STEMS = StemsQueue(
    stems="message_stems",
    queue="archive_stem_queue",
    key="message_id",
    state=SearchConfig._meta.db_table,
    requeue=(
        "INSERT OR IGNORE INTO archive_stem_queue (message_id) SELECT id FROM archive_message",
    ),
    texts=(
        "SELECT m.id, m.text FROM json_each(%(ids)s) AS q CROSS JOIN archive_message AS m"
        " ON m.id = q.value"
    ),
    documents="archive_message",
)

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


def stems_drain(*, budget_seconds: float | None = None, size: int = SLICE) -> DrainResult:
    """Index queued messages' stems until the queue is empty or the budget is spent."""
    config, _ = SearchConfig.objects.get_or_create(pk=1)
    analyzer = search_analyzer(config)
    if config.stems_analyzer != analyzer.signature:
        log.info("stems index: rebuilding for %s", analyzer.signature)
    return MESSAGE_STEMS.drain(
        analyzer, recorded=config.stems_analyzer, budget_seconds=budget_seconds, size=size
    )


def stems_for_search() -> StemsReading:
    """The stems index as it stands, for a search: reads only, never drains the queue. One
    read of the settings row gives both the analyzer and the one the index was made by (no
    row: never made)."""
    config = SearchConfig.objects.filter(pk=1).first() or SearchConfig()
    return MESSAGE_STEMS.reading(search_analyzer(config), recorded=config.stems_analyzer)


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
