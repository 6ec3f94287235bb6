"""Reads for the import pages: jobs with their progress, rate and time left."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet
from django.utils import timezone

from archive.imports.models import ImportJob, ImportStatus
from archive.store.models import Chat
from wirecat.errors import NotFound


@dataclass(frozen=True)
class ImportProgress:
    job: ImportJob
    percent: int | None  # None when the total is unknown
    rate: float | None  # messages per second
    eta_seconds: int | None


def import_progress(job: ImportJob) -> ImportProgress:
    percent = None
    if job.total:
        percent = min(100, int(job.position * 100 / job.total))
    elif job.status == ImportStatus.DONE:
        percent = 100
    rate = eta = None
    if job.started_at and job.position:
        end = job.finished_at or timezone.now()
        elapsed = max((end - job.started_at).total_seconds(), 0.001)
        rate = job.position / elapsed
        if job.total and job.status == ImportStatus.RUNNING and rate > 0:
            eta = max(0, int((job.total - job.position) / rate))
    return ImportProgress(job=job, percent=percent, rate=rate, eta_seconds=eta)


def import_list(*, limit: int = 50) -> list[ImportProgress]:
    return [import_progress(job) for job in ImportJob.objects.all()[:limit]]


def import_get(*, public_id: str) -> ImportJob:
    job = ImportJob.objects.filter(public_id=public_id).first()
    if job is None:
        raise NotFound(f"import {public_id!r} does not exist")
    return job


def import_chats(job: ImportJob, *, limit: int = 100) -> QuerySet[Chat]:
    return job.chats.select_related("account").order_by("-last_message_at")[:limit]
