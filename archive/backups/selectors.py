"""What the dashboard shows of backups: the last good one, and a failure since."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from archive.backups.models import BackupRun

# A nightly backup older than this means the nights' backups are not being made.
STALE_AFTER = timedelta(hours=48)


@dataclass(frozen=True)
class BackupStatus:
    last_good: BackupRun | None
    failure: BackupRun | None  # the newest failed run, when none succeeded after it
    stale: bool  # the last good one is older than STALE_AFTER


def backup_status() -> BackupStatus:
    good = BackupRun.objects.filter(ok=True).order_by("-finished_at", "-id").first()
    failed = BackupRun.objects.filter(ok=False, finished_at__isnull=False)
    if good is not None and good.finished_at is not None:
        failed = failed.filter(finished_at__gt=good.finished_at)
    stale = (
        good is not None
        and good.finished_at is not None
        and timezone.now() - good.finished_at > STALE_AFTER
    )
    return BackupStatus(
        last_good=good, failure=failed.order_by("-finished_at", "-id").first(), stale=stale
    )
