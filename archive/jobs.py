"""Celery jobs of the archive: each fetches, calls one service and returns a short status."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from archive.services.store import heartbeat_record
from archive.services.store import store_optimize as store_optimize_service


@shared_task(name="archive.jobs.heartbeat", ignore_result=True)
def heartbeat() -> str:
    """Tell the dashboard a worker is alive (scheduled by beat every few seconds)."""
    beat = heartbeat_record()
    return f"heartbeat {beat.hostname} {beat.seen_at.isoformat()}"


@shared_task(name="archive.jobs.store_optimize", ignore_result=True)
def store_optimize() -> str:
    """Nightly: FTS optimize on every index, then PRAGMA optimize."""
    return "; ".join(store_optimize_service())


@worker_ready.connect
def _heartbeat_when_ready(**_: Any) -> None:
    """A freshly started worker shows on the dashboard at once, not a beat later."""
    heartbeat.delay()
