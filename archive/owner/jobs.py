"""The workers' heartbeat, and one as soon as a worker is ready."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from archive.owner.services import heartbeat_record

log = logging.getLogger(__name__)


@shared_task(name="archive.jobs.heartbeat", ignore_result=True)
def heartbeat() -> str:
    """Tell the dashboard a worker is alive (scheduled by beat every few seconds)."""
    beat = heartbeat_record()
    return f"heartbeat {beat.hostname} {beat.seen_at.isoformat()}"


@worker_ready.connect
def _heartbeat_when_ready(**_: Any) -> None:
    """A freshly started worker shows on the dashboard at once, not a beat later."""
    heartbeat.delay()
