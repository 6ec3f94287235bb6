"""The index job: fill the stems of new and edited messages, refresh the typo vocabulary."""

from __future__ import annotations

import functools
import logging

from celery import shared_task

from archive.search.services.index import stems_drain, vocabulary_refresh
from archive.store.effects import STEMS_QUEUED, effect_connect

log = logging.getLogger(__name__)


# A run ends well before the next one (beat, every minute) starts.
STEMS_DRAIN_BUDGET_SECONDS = 50.0


@shared_task(name="archive.jobs.search_stems_drain", ignore_result=True)
def search_stems_drain(vocabulary: bool = True) -> str:
    """Index the stems of messages queued since (imports, edits, purges): once a batch of
    the sink commits, and every minute (beat), which also rebuilds the typo vocabulary
    once the archive has grown by 5 %."""
    result = stems_drain(budget_seconds=STEMS_DRAIN_BUDGET_SECONDS)
    rebuilt = ", rebuilding for a new analyzer" if result.rebuilt else ""
    terms = vocabulary_refresh() if vocabulary else None
    rebuilt_terms = f"; typo vocabulary rebuilt: {terms} terms" if terms is not None else ""
    return f"stems: {result.indexed} indexed, {result.left} queued{rebuilt}{rebuilt_terms}"


# Once a batch of the sink commits. The typo vocabulary waits for the minute's run (an
# import commits a batch every second or so), and a broker that does not answer is not
# waited for: the minute's run catches up.
effect_connect(
    STEMS_QUEUED,
    functools.partial(search_stems_drain.apply_async, kwargs={"vocabulary": False}, retry=False),
)
