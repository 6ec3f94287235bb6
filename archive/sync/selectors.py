"""What the Sync page shows of each live account."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from archive.connectors.live import live_connector_class
from archive.store.models import ConnectorState
from archive.sync.models import SyncAccount, SyncRun


@dataclass(frozen=True)
class SyncRow:
    sync: SyncAccount
    label: str
    running: bool
    last_run: SyncRun | None
    current: SyncRun | None  # the run in progress
    next_run_at: datetime | None
    cursor: dict[str, Any]


CURSOR_SHOWN = 120  # characters of a cursor's value the page shows


def _shown(value: Any) -> Any:
    """A cursor value as the page shows it: a long one (a calendar's map of its objects)
    by its size."""
    if isinstance(value, (dict, list)) and len(str(value)) > CURSOR_SHOWN:
        return f"{len(value)} entries"
    return value


def sync_row(sync: SyncAccount) -> SyncRow:
    runs = list(sync.runs.all()[:2])
    running = bool(sync.lease_owner)
    current = runs[0] if running and runs and runs[0].ended_at is None else None
    finished = [run for run in runs if run.ended_at is not None]
    cursors = ConnectorState.objects.filter(account=sync.account, stream=sync.kind).first()
    next_run = None
    if sync.enabled and sync.state != "failed":
        base = (sync.schedule.last_run_at if sync.schedule else None) or sync.last_run_at
        next_run = base + timedelta(seconds=sync.interval_seconds) if base else None
    kind = live_connector_class(sync.kind)
    return SyncRow(
        sync=sync,
        label=kind.label if kind else sync.kind,
        running=running,
        last_run=finished[0] if finished else None,
        current=current,
        next_run_at=next_run,
        cursor={k: _shown(v) for k, v in cursors.cursor.items()} if cursors else {},
    )


def sync_rows() -> list[SyncRow]:
    return [sync_row(sync) for sync in SyncAccount.objects.select_related("account", "schedule")]


def on_macos() -> bool:
    """Whether this machine is a Mac: the Sync page words the Apple Messages form for it
    (Messages' own chat.db here) or for a copy (a chat.db from a Mac, an iPhone backup's
    sms.db)."""
    return sys.platform == "darwin"
