"""The index job: fill the stems of new and edited messages, refresh the typo vocabulary."""

from __future__ import annotations

import functools
import logging
from pathlib import Path

from celery import shared_task
from django.conf import settings

from archive.search.services.index import stems_drain, vocabulary_refresh
from archive.store.effects import STEMS_QUEUED, ask_once, effect_connect

log = logging.getLogger(__name__)


# A run ends well before the next one (beat, every minute) starts.
STEMS_DRAIN_BUDGET_SECONDS = 50.0


# An ask older than this is not a duplicate (a run lost with a broker that went away).
ASKED_FRESH_SECONDS = 120.0


def _asked() -> Path:
    return Path(settings.STATE_DIR) / "stems-drain.asked"


@shared_task(name="archive.jobs.search_stems_drain", ignore_result=True)
def search_stems_drain(vocabulary: bool = True) -> str:
    """Index the stems of messages queued since (imports, edits, purges): once a batch of
    the sink commits, and every minute (beat), which also rebuilds the typo vocabulary
    once the archive has grown by 5 %."""
    _asked().unlink(missing_ok=True)
    result = stems_drain(budget_seconds=STEMS_DRAIN_BUDGET_SECONDS)
    rebuilt = ", rebuilding for a new analyzer" if result.rebuilt else ""
    terms = vocabulary_refresh() if vocabulary else None
    rebuilt_terms = f"; typo vocabulary rebuilt: {terms} terms" if terms is not None else ""
    return f"stems: {result.indexed} indexed, {result.left} queued{rebuilt}{rebuilt_terms}"


def stems_drain_ask() -> None:
    """Queue a drain once a batch of the sink commits, unless one is queued and has not
    started yet: an import's batches (several a second) ask for one run, not one each
    (each ask is a write to the broker). The typo vocabulary waits for the minute's run,
    and a broker that does not answer is not waited for: the minute's run catches up."""
    ask_once(
        _asked(),
        fresh_seconds=ASKED_FRESH_SECONDS,
        enqueue=lambda: _enqueue(),
        what="search: the stems drain",
    )


# Bound now, to this project's Celery app (see archive/conversations/jobs.py).
_enqueue = functools.partial(
    search_stems_drain.apply_async, kwargs={"vocabulary": False}, retry=False
)

effect_connect(STEMS_QUEUED, stems_drain_ask)
