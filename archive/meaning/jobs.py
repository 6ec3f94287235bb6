"""The meaning index's job (queue `index`): `embeddings_refresh` after conversation builds
and note saves, and every ten minutes (beat: transcripts and file texts), a bounded run at
a time; a run that stops at its bound queues the next. Asks are gathered like the build
job's: one run queued for all the asks made until it starts (a marker file in the state
folder)."""

from __future__ import annotations

import functools
from pathlib import Path

from celery import shared_task
from django.conf import settings

from archive.conversations.services.state import CONVERSATIONS_BUILT
from archive.meaning.services import forget  # noqa: F401  (connects its store-signal receiver)
from archive.meaning.services.refresh import EMBEDDINGS_DUE, embeddings_refresh
from archive.store.effects import ask_once, effect_connect
from notes.services.notes import NOTES_INDEX_QUEUED

BUDGET_SECONDS = 120.0  # a run embeds for about this long, then queues the next
ASKED_FRESH_SECONDS = 300.0  # an ask older than this is not a duplicate (a lost run)


def _asked() -> Path:
    return Path(settings.STATE_DIR) / "embeddings-refresh.asked"


def embeddings_refresh_ask() -> None:
    """Queue the refresh, unless a run is queued and has not started yet."""
    ask_once(
        _asked(),
        fresh_seconds=ASKED_FRESH_SECONDS,
        enqueue=lambda: _enqueue(),
        what="meaning: the refresh job",
    )


@shared_task(name="archive.jobs.embeddings_refresh", ignore_result=True)
def embeddings_refresh_job() -> str:
    """Cut what is due and embed what waits, for about BUDGET_SECONDS."""
    _asked().unlink(missing_ok=True)
    run = embeddings_refresh(most_chunks=100_000, most_sources=100_000, seconds=BUDGET_SECONDS)
    if run.more:
        embeddings_refresh_ask()
    return run.summary()


# Bound now, to this project's Celery app (see archive/conversations/jobs.py).
_enqueue = functools.partial(embeddings_refresh_job.apply_async, retry=False)

effect_connect(EMBEDDINGS_DUE, embeddings_refresh_ask)
effect_connect(CONVERSATIONS_BUILT, embeddings_refresh_ask)
# A note saved or deleted: its chunks are cut again (a refresh that finds nothing to do is
# one query).
effect_connect(NOTES_INDEX_QUEUED, embeddings_refresh_ask)
