"""The nightly backup (beat, wirecat/celery.py): an archive into `<state>/backups/`, then
only the newest WIRECAT_BACKUP_KEEP kept. A failure is recorded with its sentence (the
dashboard shows it) and logged; it is not retried until the next night."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from archive.backups.services.backup import (
    BackupFailed,
    backup_folder,
    backup_make,
    backups_prune,
)

log = logging.getLogger(__name__)


@shared_task(name="archive.jobs.backup_nightly", ignore_result=True)
def backup_nightly() -> str:
    try:
        made = backup_make(trigger="nightly")
    except BackupFailed as failed:
        return f"failed: {failed}"
    gone = backups_prune(backup_folder(), settings.BACKUP_KEEP)
    for path in gone:
        log.info("backup %s deleted (WIRECAT_BACKUP_KEEP=%d)", path.name, settings.BACKUP_KEEP)
    return f"{made.path.name}: {made.size:,} bytes, {len(gone)} older deleted"
