"""archive.search.jobs"""

from __future__ import annotations

import logging

from celery import shared_task

from archive.search.services.index import stems_drain, vocabulary_refresh

log = logging.getLogger(__name__)


# A run ends well before the next one (beat, every minute) starts.
STEMS_DRAIN_BUDGET_SECONDS = 50.0


@shared_task(name="archive.jobs.search_stems_drain", ignore_result=True)
def search_stems_drain() -> str:
    """Every minute: index the stems of messages queued since (imports, edits, purges), and
    rebuild the typo vocabulary once the archive has grown by 5 %."""
    result = stems_drain(budget_seconds=STEMS_DRAIN_BUDGET_SECONDS)
    rebuilt = ", rebuilding for a new analyzer" if result.rebuilt else ""
    terms = vocabulary_refresh()
    vocabulary = f"; typo vocabulary rebuilt: {terms} terms" if terms is not None else ""
    return f"stems: {result.indexed} indexed, {result.left} queued{rebuilt}{vocabulary}"
