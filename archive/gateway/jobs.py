"""The gateway's jobs: deliver a send the guard allowed, deliver due webhook attempts."""

from __future__ import annotations

import fcntl
import logging
from pathlib import Path

from celery import shared_task
from django.conf import settings

from archive.gateway.services.sends import SEND_QUEUED
from archive.gateway.services.sends import send_deliver as send_deliver_service
from archive.gateway.services.webhooks import deliver_due
from archive.store.effects import effect_connect
from wirecat.errors import NotFound

log = logging.getLogger(__name__)


@shared_task(name="archive.jobs.send_deliver", ignore_result=True, acks_late=True)
def send_deliver(attempt_id: int) -> str:
    """Hand one allowed send to its connector. Redelivered, a send already out stays out."""
    try:
        attempt = send_deliver_service(attempt_id=attempt_id)
    except NotFound:
        log.info("send %s is gone; skipped", attempt_id)
        return "gone"
    return f"{attempt.public_id} {attempt.outcome}"


# A send queued by the service (asked, or approved by the owner) goes out once committed.
effect_connect(SEND_QUEUED, send_deliver.delay)


@shared_task(name="archive.jobs.webhooks_deliver", ignore_result=True)
def webhooks_deliver() -> str:
    """Every few seconds (beat), on the `webhooks` queue: POST the webhook deliveries that
    are due. One run at a time: while a slow receiver keeps one run busy, the next beats
    skip, so webhooks never take more than one of the worker's processes from sends."""
    with Path(settings.STATE_DIR, "webhooks.lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return "webhooks: another run is delivering; skipped"
        try:
            return f"webhooks: {deliver_due()} attempted"
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
