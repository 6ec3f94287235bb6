"""Reads for the import pages: jobs with their progress, rate and time left."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet
from django.utils import timezone

from archive.connectors.registry import MEETING_FORMATS
from archive.imports.models import ImportJob, ImportStatus
from archive.store.models import Chat
from wirecat.errors import NotFound


@dataclass(frozen=True)
class ImportProgress:
    job: ImportJob
    percent: int | None  # None when the total is unknown
    rate: float | None  # messages per second
    eta_seconds: int | None

    @property
    def meeting_file(self) -> bool:
        """A calendar or transcript file, not a message export."""
        return self.job.format in MEETING_FORMATS

    @property
    def summary(self) -> str:
        return meeting_summary(self.job)

    @property
    def changes(self) -> str:
        return meeting_changes(self.job)


def _count(number: int, word: str) -> str:
    return f"{number:,} {word}{'' if number == 1 else 's'}"


def meeting_summary(job: ImportJob) -> str:
    """What a meeting file held, in words ("" before it is read, or for a message export):
    "12 events, 340 meetings (3 cancelled), 2 problems" or "a transcript of 412 segments
    attached to Weekly sync" (pages link the title; see `outcome["meeting"]`)."""
    outcome = job.outcome or {}
    problems = int(outcome.get("problems", 0))
    tail = f", {_count(problems, 'problem')}" if problems else ""
    if outcome.get("kind") == "calendar":
        cancelled = int(outcome.get("cancelled", 0))
        held = f" ({cancelled:,} cancelled)" if cancelled else ""
        return (
            f"{_count(int(outcome.get('events', 0)), 'event')}, "
            f"{_count(int(outcome.get('meetings', 0)), 'meeting')}{held}{tail}"
        )
    if outcome.get("kind") == "transcript":
        segments = _count(int(outcome.get("segments", 0)), "segment")
        title = outcome.get("meeting_title") or "a meeting"
        own = ""
        if outcome.get("own_meeting"):
            own = (
                " (a meeting of its own: no meeting overlaps its time)"
                if outcome.get("timed")
                else " (a meeting of its own: the file does not say when it was recorded;"
                " import it again naming its meeting or its start)"
            )
        return f"a transcript of {segments} attached to {title}{own}{tail}"
    return ""


def meeting_changes(job: ImportJob) -> str:
    """What a calendar file's import changed in the archive ("" for other imports)."""
    outcome = job.outcome or {}
    if outcome.get("kind") != "calendar":
        return ""
    added, updated, cancelled = (
        int(outcome.get(key, 0))
        for key in ("meetings_added", "meetings_updated", "meetings_cancelled")
    )
    parts = [f"{_count(added, 'meeting')} added"] if added else []
    parts += [f"{updated:,} updated"] if updated else []
    parts += [f"{cancelled:,} cancelled since the last import"] if cancelled else []
    if not parts:
        return "Nothing changed: the archive already held all of it."
    text = ", ".join(parts)
    return text[0].upper() + text[1:] + "."


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
