"""The conversations' job (queue `index`): build the chats that need it after an import, a
sync or an agent's answers touched them, and every five minutes (beat).

An import commits a batch every second or so and each asks for a build: the job is queued
once for all the asks made until it starts (a marker file in the state folder says one is
queued), and when it ends it asks again if chats were marked meanwhile."""

from __future__ import annotations

import functools
from pathlib import Path

from celery import shared_task
from django.conf import settings

from archive.conversations.services.builds import (
    builder_lock,
    chats_due,
    conversations_build_due,
)
from archive.conversations.services.state import CONVERSATIONS_DUE
from archive.store.effects import ask_once, effect_connect

# One run builds chats for about this long (the chat being built is finished), then
# queues the next run while chats wait, so other jobs on the queue get their turn.
BUDGET_SECONDS = 120.0
# An ask made this long after the last queued run is not taken as a duplicate (that run
# was lost: a broker restarted empty).
ASKED_FRESH_SECONDS = 120.0
# Another builder holds the lock (`wirecat conversations build`): look again this much later.
BUSY_RETRY_SECONDS = 30.0


def _asked() -> Path:
    return Path(settings.STATE_DIR) / "conversations-build.asked"


def conversations_build_ask(*, countdown: float = 0.0) -> None:
    """Queue the build job, unless a run is queued and has not started yet."""
    ask_once(
        _asked(),
        fresh_seconds=ASKED_FRESH_SECONDS,
        enqueue=lambda: _enqueue(countdown=countdown or None),
        what="conversations: the build job",
    )


@shared_task(name="archive.jobs.conversations_build", ignore_result=True)
def conversations_build() -> str:
    """Build the chats whose conversations need it, the most recent first."""
    _asked().unlink(missing_ok=True)  # asks from here on queue the next run
    with builder_lock(wait=False) as mine:
        if not mine:
            conversations_build_ask(countdown=BUSY_RETRY_SECONDS)
            return "conversations: another build is running"
        run = conversations_build_due(budget_seconds=BUDGET_SECONDS)
    # Chats marked while this run built (a chat whose build failed waits for beat).
    if run.left or set(chats_due()) - set(run.failed):
        conversations_build_ask()
    messages = sum(b.messages for b in run.built)
    failed = f", {len(run.failed)} failed" if run.failed else ""
    chats = f"{len(run.built)} chat{'' if len(run.built) == 1 else 's'}"
    return f"conversations: {chats} built ({messages} messages){failed}, {run.left} waiting"


# Bound now, to this project's Celery app (a task proxy looks up the current app at each
# call, and another app made in the same process would become current).
_enqueue = functools.partial(conversations_build.apply_async, retry=False)

# A write marked chats as needing a build (archive/conversations/services/state.py).
effect_connect(CONVERSATIONS_DUE, conversations_build_ask)
