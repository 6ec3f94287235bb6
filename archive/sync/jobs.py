"""The sync jobs: one account's run, and the daily repair pass of every account."""

from __future__ import annotations

import logging

from celery import shared_task

from archive.sync.services.run import account_sync as account_sync_service
from archive.sync.services.run import accounts_repair as accounts_repair_service
from wirecat.errors import NotFound

log = logging.getLogger(__name__)


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
