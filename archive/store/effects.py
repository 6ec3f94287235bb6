"""Side effects of a use case, run once its transaction commits, without the use case knowing
how they are carried out.

A service says what happened and asks for the effect: `on_commit_effect(SEND_QUEUED,
attempt_id=7)`. A delivery module (a capability's `jobs.py`) says what to do about it, once,
when imported: `effect_connect(SEND_QUEUED, send_deliver.delay)`. So services never import
Celery, and a job is never enqueued inside a transaction (a worker could start it before the
rows it needs are committed) nor for a transaction that rolled back.

Every process imports the capabilities' jobs modules when Django starts (`archive.apps`), so
an effect finds its handlers wherever the use case runs: a page, the API, a worker, the CLI.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

log = logging.getLogger(__name__)

# Arguments travel to a job: primitives only.
Arg = str | int | float | bool | None
Handler = Callable[..., object]

_handlers: dict[str, list[Handler]] = {}

# The effects the store asks for.
STEMS_QUEUED = "store.stems_queued"  # messages wait in the stems queue (added, edited, purged)
# A calendar file (an invitation in a mail: text/calendar, .ics) was stored as an
# attachment; args: public_id (the attachment's). Meetings' jobs read it.
CALENDAR_STORED = "store.calendar_stored"
# Attachments with their bytes were stored (an import's or a sync's batch): their text waits
# to be read. The files' jobs read it.
FILES_STORED = "store.files_stored"


def effect_connect(name: str, handler: Handler) -> None:
    """Run `handler(**args)` for every effect `name` that commits (idempotent per handler)."""
    found = _handlers.setdefault(name, [])
    if handler not in found:
        found.append(handler)


def effect_handlers(name: str) -> tuple[Handler, ...]:
    return tuple(_handlers.get(name, ()))


@dataclass(frozen=True)
class Effect:
    """One effect waiting for its transaction to commit (what on-commit callbacks hold)."""

    name: str
    args: tuple[tuple[str, Arg], ...] = field(default=())

    def __post_init__(self) -> None:
        # What Django names a failed on-commit callback by in its log.
        object.__setattr__(self, "__qualname__", f"effect {self.name}")

    def __call__(self) -> None:
        handlers = _handlers.get(self.name)
        if not handlers:
            log.warning("effect %s has no handler; nothing done", self.name)
            return
        for handler in handlers:
            handler(**dict(self.args))


def on_commit_effect(name: str, **args: Arg) -> None:
    """Carry out effect `name` with `args` after the current transaction commits (at once
    when there is none; never when it rolls back). A handler that fails (the broker is
    down) is logged, not raised: the use case has committed, and the periodic jobs catch
    up. The same effect asked for twice in one transaction runs once (a vault import saves
    a hundred notes a transaction: one drain of their index, not a hundred)."""
    effect = Effect(name, tuple(sorted(args.items())))
    connection = transaction.get_connection()
    # Pending callbacks are (savepoint ids, callback, robust); one of a savepoint that rolls
    # back is dropped with it, and so would this one be, asked for inside that savepoint.
    if connection.in_atomic_block and any(
        pending[1] == effect for pending in connection.run_on_commit
    ):
        return
    transaction.on_commit(effect, robust=True)


def ask_once(
    marker: Path, *, fresh_seconds: float, enqueue: Callable[[], object], what: str
) -> None:
    """Queue a job through `enqueue` unless a run asked for less than `fresh_seconds` ago
    has not started yet (it removes `marker` when it starts): an import's thousand batches
    ask a thousand times and queue one run. A broker that does not answer is not waited
    for (the job's beat entry catches up); the ask is then forgotten."""
    try:
        if time.time() - marker.stat().st_mtime < fresh_seconds:
            return
    except FileNotFoundError:
        pass
    marker.touch()
    try:
        enqueue()
    except Exception:  # the broker: whatever it raises, beat's run catches up
        marker.unlink(missing_ok=True)
        log.warning("%s could not be queued", what, exc_info=True)
