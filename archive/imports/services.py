"""Importing export files: one ImportJob per file, read by the format's connector, written
in bounded batches through the single write path, resumable from the last batch.

The job's `position` (messages of the export already recorded) and its counters advance in
the same transaction as each batch, so an import killed at any point and started again
ends exactly as an uninterrupted run would: the reader is read again from the start and
the first `position` messages are passed over without writing.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from archive.connectors.registry import (
    MeetingReader,
    import_reader_for,
)
from archive.imports.meetings import meeting_picked
from archive.imports.models import ImportJob, ImportStatus
from archive.imports.running import (
    IMPORT_MIN_BATCH,
    SKIP_UNREADABLE,
    background_priority,
    import_run,
    import_run_many,
    pid_alive,
)
from wirecat.errors import Conflict, Invalid, NotFound

log = logging.getLogger(__name__)

Progress = Callable[[ImportJob], None]
RESUMABLE = (ImportStatus.QUEUED, ImportStatus.RUNNING, ImportStatus.FAILED, ImportStatus.CANCELLED)


def _fingerprint(path: Path) -> str:
    """Identifies "the same export again": its absolute path, size and modification time."""
    resolved = path.resolve()
    parts = [str(resolved)]
    entries = sorted(resolved.rglob("*")) if resolved.is_dir() else [resolved]
    for entry in entries[:10_000]:
        try:
            stat = entry.stat()
        except OSError:
            continue
        parts.append(f"{entry.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def import_path_allowed(path: Path) -> Path:
    """`path` resolved (symlinks followed), when it lies under one of the configured import
    roots (WIRECAT_IMPORT_ROOTS, default the owner's home) and outside the state folder, and
    no link in a folder it names leads out of them; Invalid otherwise, naming the setting.
    For the Imports page: a path typed in a browser is read with the server's rights. (The
    `wirecat import` command is the owner at a shell, who reads what they like anyway.)"""
    roots = [Path(root).expanduser().resolve() for root in settings.IMPORT_ROOTS]
    state = Path(settings.STATE_DIR).resolve()

    def inside(candidate: Path) -> bool:
        if candidate == state or state in candidate.parents:
            return False
        return any(candidate == root or root in candidate.parents for root in roots)

    resolved = path.expanduser().resolve()
    where = ", ".join(str(root) for root in roots) or "none configured"
    if not inside(resolved):
        raise Invalid(
            f"{path}: imports from this server are allowed only under WIRECAT_IMPORT_ROOTS"
            f" ({where}), outside the state folder; upload the file instead, or add its"
            " folder to WIRECAT_IMPORT_ROOTS"
        )
    if resolved.is_dir():
        for folder, folders, files in os.walk(resolved):
            for name in folders + files:
                entry = Path(folder) / name
                if entry.is_symlink() and not inside(entry.resolve()):
                    raise Invalid(
                        f"{entry}: a link out of WIRECAT_IMPORT_ROOTS ({where}); an import"
                        " from this server reads nothing outside them"
                    )
    return resolved


def import_job_create(
    *,
    source: Path,
    source_name: str = "",
    format_name: str | None = None,
    account_name: str | None = None,
    resume: bool = True,
    meeting: str = "",
    recording_start: datetime | None = None,
) -> ImportJob:
    """A job for `source`, or the unfinished job of the same export to resume.

    Refuses, naming the accepted formats, a file no reader recognises. A meeting file (a
    calendar or a transcript, `meeting_reader_for`) is detected after the message exports;
    `meeting` (a meeting's id) and `recording_start` say where a transcript belongs when
    the owner knows better than its times.
    """
    reader = import_reader_for(source, format_name)
    if isinstance(reader, MeetingReader):
        return _meeting_job_create(
            source=source,
            source_name=source_name,
            reader=reader,
            meeting=meeting,
            recording_start=recording_start,
        )
    fingerprint = _fingerprint(source)
    if resume:
        earlier = (
            ImportJob.objects.filter(
                fingerprint=fingerprint, format=reader.format, status__in=RESUMABLE
            )
            .order_by("-created_at")
            .first()
        )
        if earlier is not None and not (
            earlier.status == ImportStatus.RUNNING and pid_alive(earlier.worker_pid)
        ):
            return earlier
    return ImportJob.objects.create(
        source=str(source),
        source_name=source_name or source.name,
        fingerprint=fingerprint,
        format=reader.format,
        account_name=account_name or "",
    )


def _meeting_job_create(
    *,
    source: Path,
    source_name: str,
    reader: MeetingReader,
    meeting: str,
    recording_start: datetime | None,
) -> ImportJob:
    """A job for one meeting file. Always a new one: the file is read whole, and storing
    it again changes nothing, so there is nothing to resume."""
    if meeting and reader.kind != "transcript":
        raise Invalid(f"{source_name or source.name}: only a transcript is attached to a meeting")
    if meeting:
        meeting = meeting_picked(meeting).public_id
    return ImportJob.objects.create(
        source=str(source),
        source_name=source_name or source.name,
        fingerprint=_fingerprint(source),
        format=reader.format,
        meeting=meeting,
        recording_start=recording_start if reader.kind == "transcript" else None,
    )


def import_job_cancel(*, public_id: str) -> ImportJob:
    """Ask a running import to stop after its current batch (a queued one stops at once)."""
    job = ImportJob.objects.filter(public_id=public_id).first()
    if job is None:
        raise NotFound(f"import {public_id!r} does not exist")
    if job.finished:
        raise Conflict(f"import {public_id} has already ended ({job.get_status_display()})")
    ImportJob.objects.filter(pk=job.pk).update(cancel_requested=True)
    if job.status == ImportStatus.QUEUED:
        ImportJob.objects.filter(pk=job.pk).update(
            status=ImportStatus.CANCELLED, finished_at=timezone.now()
        )
    job.refresh_from_db()
    return job


def import_job_resume(*, public_id: str) -> ImportJob:
    """Put a failed or cancelled import back in the queue; it continues where it stopped."""
    job = ImportJob.objects.filter(public_id=public_id).first()
    if job is None:
        raise NotFound(f"import {public_id!r} does not exist")
    if job.status not in (ImportStatus.FAILED, ImportStatus.CANCELLED):
        raise Conflict(f"import {public_id} is {job.get_status_display().lower()}, not resumable")
    ImportJob.objects.filter(pk=job.pk).update(
        status=ImportStatus.QUEUED, cancel_requested=False, finished_at=None
    )
    job.refresh_from_db()
    return job


__all__ = [
    "IMPORT_MIN_BATCH",
    "SKIP_UNREADABLE",
    "background_priority",
    "import_run",
    "import_run_many",
]
