"""Celery jobs of the archive: each fetches, calls one service and returns a short status."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from archive.services.imports import import_run as import_run_service
from archive.services.search_index import stems_drain, vocabulary_refresh
from archive.services.sends import send_deliver as send_deliver_service
from archive.services.store import heartbeat_record
from archive.services.store import store_optimize as store_optimize_service
from archive.services.sync import account_sync as account_sync_service
from archive.services.sync import accounts_repair as accounts_repair_service
from archive.services.tags import tag_bulk_fail
from archive.services.tags import tag_bulk_run as tag_bulk_run_service
from archive.services.webhooks import deliver_due
from wirecat.errors import Conflict, NotFound, WireCatError

log = logging.getLogger(__name__)


@shared_task(name="archive.jobs.heartbeat", ignore_result=True)
def heartbeat() -> str:
    """Tell the dashboard a worker is alive (scheduled by beat every few seconds)."""
    beat = heartbeat_record()
    return f"heartbeat {beat.hostname} {beat.seen_at.isoformat()}"


@shared_task(name="archive.jobs.store_optimize", ignore_result=True)
def store_optimize() -> str:
    """Nightly: FTS optimize on every index, then PRAGMA optimize."""
    return "; ".join(store_optimize_service())


# A run ends well before the next one (beat, every minute) starts.
STEMS_DRAIN_BUDGET_SECONDS = 50.0


@shared_task(name="archive.jobs.search_stems_drain", ignore_result=True)
def search_stems_drain() -> str:
    """Every minute: index the stems of messages queued since (imports, edits, purges), and
    rebuild the typo vocabulary once the archive has grown by 5 %."""
    result = stems_drain(budget_seconds=STEMS_DRAIN_BUDGET_SECONDS)
    rebuilt = ", rebuilding for a new analyzer" if result.rebuilt else ""
    terms = vocabulary_refresh()
    vocabulary = f"; typo vocabulary rebuilt: {terms} terms" if terms is not None else ""
    return f"stems: {result.indexed} indexed, {result.left} queued{rebuilt}{vocabulary}"


@worker_ready.connect
def _heartbeat_when_ready(**_: Any) -> None:
    """A freshly started worker shows on the dashboard at once, not a beat later."""
    heartbeat.delay()


@shared_task(name="archive.jobs.import_run", ignore_result=True, acks_late=True)
def import_run(job_id: int) -> str:
    """Run one ImportJob. Redelivered after a worker crash, it resumes from the last batch."""
    try:
        job = import_run_service(job_id=job_id)
    except NotFound:
        log.info("import job %s is gone; skipped", job_id)
        return "gone"
    except Conflict as exc:
        log.info("%s", exc)
        return "already running"
    return f"{job.public_id} {job.status}"


@shared_task(name="archive.jobs.tag_bulk_run", ignore_result=True, acks_late=True)
def tag_bulk_run(bulk_id: int) -> str:
    """Tag every result of a search recorded as a TagBulk (too many to do in the request).
    Redelivered, it tags again what is missing: taggings are unique."""
    try:
        bulk = tag_bulk_run_service(bulk_id=bulk_id)
    except NotFound:
        log.info("tag-all run %s is gone; skipped", bulk_id)
        return "gone"
    except WireCatError as exc:
        tag_bulk_fail(bulk_id=bulk_id, error=str(exc))
        return f"failed: {exc}"
    return f"tag-all {bulk.pk}: {bulk.added} added of {bulk.total}"


@shared_task(name="archive.jobs.send_deliver", ignore_result=True, acks_late=True)
def send_deliver(attempt_id: int) -> str:
    """Hand one allowed send to its connector. Redelivered, a send already out stays out."""
    try:
        attempt = send_deliver_service(attempt_id=attempt_id)
    except NotFound:
        log.info("send %s is gone; skipped", attempt_id)
        return "gone"
    return f"{attempt.public_id} {attempt.outcome}"


@shared_task(name="archive.jobs.webhooks_deliver", ignore_result=True)
def webhooks_deliver() -> str:
    """Every few seconds (beat): POST the webhook deliveries that are due."""
    return f"webhooks: {deliver_due()} attempted"


@shared_task(name="archive.jobs.account_sync", ignore_result=True, acks_late=True)
def account_sync(sync_account_id: int, force: bool = False) -> str:
    """One live sync run of one account (beat, per the account's interval; or "Sync now")."""
    try:
        run = account_sync_service(sync_account_id=sync_account_id, force=force)
    except NotFound:
        return f"live account {sync_account_id} is gone"
    if run is None:
        return f"live account {sync_account_id}: skipped (busy, failed or paused)"
    return f"sync {sync_account_id}: {run.outcome}, {run.added} added, {run.updated} updated"


@shared_task(name="archive.jobs.accounts_repair", ignore_result=True)
def accounts_repair() -> str:
    """Daily: re-read each live account's last two days for edits the live pass missed."""
    runs = accounts_repair_service()
    done = [run for run in runs if run.outcome != "no-repair"]
    return f"repair: {len(done)} accounts re-read, {sum(run.updated for run in done)} updated"
