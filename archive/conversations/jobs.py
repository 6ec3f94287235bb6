"""The conversations' job (queue `index`): build the chats that need it after an import, a
sync or an agent's answers touched them, and every five minutes (beat)."""

from __future__ import annotations

import functools

from celery import shared_task

from archive.conversations.services.builds import builder_lock, conversations_build_due
from archive.conversations.services.state import CONVERSATIONS_DUE
from archive.store.effects import effect_connect

# One run builds chats for about this long (the chat being built is finished), then
# queues the next run while chats wait, so other jobs on the queue get their turn.
BUDGET_SECONDS = 120.0


@shared_task(name="archive.jobs.conversations_build", ignore_result=True)
def conversations_build() -> str:
    """Build the chats whose conversations need it, the most recent first."""
    with builder_lock(wait=False) as mine:
        if not mine:
            return "conversations: another build is running"
        run = conversations_build_due(budget_seconds=BUDGET_SECONDS)
    if run.left:
        conversations_build.apply_async(retry=False)
    messages = sum(b.messages for b in run.built)
    failed = f", {len(run.failed)} failed" if run.failed else ""
    return (
        f"conversations: {len(run.built)} chats built ({messages} messages){failed},"
        f" {run.left} waiting"
    )


# A write marked chats as needing a build (archive/conversations/services/state.py).
effect_connect(CONVERSATIONS_DUE, functools.partial(conversations_build.apply_async, retry=False))
