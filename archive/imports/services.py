"""Importing export files: one ImportJob per file, read by the format's connector, written
in bounded batches through the single write path, resumable from the last batch.

The job's `position` (messages of the export already recorded) and its counters advance in
the same transaction as each batch, so an import killed at any point and started again
ends exactly as an uninterrupted run would: the reader is read again from the start and
the first `position` messages are passed over without writing.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import logging
import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from archive.connectors.base import ExportStream, FormatError, ImportItem, ReadOptions
from archive.connectors.registry import reader_for
from archive.imports.models import ImportJob, ImportStatus
from archive.imports.reading import ExportItems
from archive.store.domain import Batch, BatchResult
from archive.store.models import Chat
from archive.store.services.maintenance import fts_bulk_writes
from archive.store.sink import batch_record, quiet_changes
from archive.store.staging import message_staged
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


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def import_job_create(
    *,
    source: Path,
    source_name: str = "",
    format_name: str | None = None,
    account_name: str | None = None,
    resume: bool = True,
) -> ImportJob:
    """A job for `source`, or the unfinished job of the same export to resume.

    Refuses, naming the accepted formats, a file no reader recognises.
    """
    reader = reader_for(source, format_name)
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
            earlier.status == ImportStatus.RUNNING and _pid_alive(earlier.worker_pid)
        ):
            return earlier
    return ImportJob.objects.create(
        source=str(source),
        source_name=source_name or source.name,
        fingerprint=fingerprint,
        format=reader.format,
        account_name=account_name or "",
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


def _claim(job_id: int) -> ImportJob:
    with transaction.atomic():
        job = ImportJob.objects.filter(pk=job_id).first()
        if job is None:
            raise NotFound(f"import job {job_id} does not exist")
        if (
            job.status == ImportStatus.RUNNING
            and job.worker_pid != os.getpid()
            and _pid_alive(job.worker_pid)
        ):
            raise Conflict(f"import {job.public_id} is already running (process {job.worker_pid})")
        job.status = ImportStatus.RUNNING
        job.worker_pid = os.getpid()
        job.started_at = job.started_at or timezone.now()
        job.finished_at = None
        job.save(update_fields=["status", "worker_pid", "started_at", "finished_at", "updated_at"])
    return job


# What the import calls an attachment whose bytes could not be read (archive.store.staging).
SKIP_UNREADABLE = "attachment file missing from the export"


def _staged(item: ImportItem, counts: Counter[str]) -> ImportItem:
    """The item with its attachment bytes already in the blob store, so a batch never
    holds more than one message's bytes in memory."""
    message, unreadable = message_staged(item.message)
    if unreadable:
        counts[SKIP_UNREADABLE] += unreadable
    return item if message is item.message else dataclasses.replace(item, message=message)


def _merged(reader: Mapping[str, int], staged: Mapping[str, int]) -> dict[str, int]:
    total = Counter(reader)
    total.update(staged)
    return dict(total)


def _write(
    job: ImportJob,
    stream: ExportStream,
    items: list[ImportItem],
    position: int,
    staged: Counter[str],
    read_skips: Mapping[str, int],
) -> None:
    batch = Batch.from_items(stream.account, items)

    def progress(result: BatchResult) -> None:  # in the batch's transaction
        before = ImportJob.objects.filter(pk=job.pk).values_list("staged_skips", flat=True)[0]
        staged_total = dict(Counter(before) + staged)
        ImportJob.objects.filter(pk=job.pk).update(
            position=position,
            added=F("added") + result.added,
            updated=F("updated") + result.updated,
            unchanged=F("unchanged") + result.unchanged,
            tombstoned=F("tombstoned") + result.tombstoned,
            staged_skips=staged_total,
            skipped=_merged(read_skips, staged_total),
            updated_at=timezone.now(),
        )
        chat_ids = Chat.objects.filter(
            account__provider=stream.account.provider,
            account__external_id=stream.account.external_id,
            external_id__in=[c.external_id for c in batch.chats],
        ).values_list("id", flat=True)
        job.chats.add(*chat_ids)

    batch_record(batch=batch, then=progress)


def import_run(
    *, job_id: int, progress: Progress | None = None, batch_size: int | None = None
) -> ImportJob:
    """Run (or resume) one import to its end, failure or cancellation."""
    size = min(batch_size or settings.IMPORT_BATCH_SIZE, 5_000)
    job = _claim(job_id)
    if job.cancel_requested:
        return _finish(job, ImportStatus.CANCELLED)
    # History is not news: imported messages reach the changes feed, not the webhooks.
    with _bulk_writes(), fts_bulk_writes(), quiet_changes():
        return _import(job, size, progress)


# SQLite copies the WAL back into the database every 1,000 pages by default: after almost
# every import batch, rewriting index pages the next batch changes again. An import lets
# the WAL grow to 64 MB between checkpoints instead.
IMPORT_CHECKPOINT_PAGES = 16_384
# SQLite's page cache for the import's connection (KiB; the default is 2 MB): the index
# pages a batch touches stay in memory for the next batch instead of being read back.
IMPORT_CACHE_KIB = 32_768
# Python's cycle collector, while an import runs: a batch makes some hundred thousand
# objects, none of them in a cycle, and every collection of the oldest generation walked
# all of them and the whole of Django besides. What exists before the import is frozen
# (never walked) and collections come 20 times less often; both are undone afterwards.
IMPORT_GC_THRESHOLD = 20


@contextmanager
def _bulk_writes() -> Iterator[None]:
    """A bulk import's settings for this process and its connection, restored afterwards."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        checkpoint = int(cursor.fetchone()[0])
        cursor.execute("PRAGMA cache_size")
        cache = int(cursor.fetchone()[0])
        cursor.execute(f"PRAGMA wal_autocheckpoint = {IMPORT_CHECKPOINT_PAGES}")
        cursor.execute(f"PRAGMA cache_size = -{IMPORT_CACHE_KIB}")
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(thresholds[0] * IMPORT_GC_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA cache_size = {cache}")
            cursor.execute(f"PRAGMA wal_autocheckpoint = {checkpoint}")


def _import(job: ImportJob, size: int, progress: Progress | None) -> ImportJob:
    stream: ExportStream | None = None
    source: ExportItems | None = None
    try:
        reader = reader_for(Path(job.source), job.format or None)
        stream = reader.open(
            Path(job.source),
            ReadOptions(account_name=job.account_name or None, source_name=job.source_name),
        )
        ImportJob.objects.filter(pk=job.pk).update(total=stream.total, format=stream.format)
        job.refresh_from_db()
        if progress:
            progress(job)
        pending: list[ImportItem] = []
        staged: Counter[str] = Counter()
        failure: FormatError | None = None
        # Read in a child process while this one writes; the first `position` messages
        # (recorded by an earlier run) are read again but not handed over.
        source = ExportItems(stream, skip=job.position, in_child=settings.IMPORT_READER_PROCESS)
        items = iter(source)
        while True:
            try:
                item = next(items)
            except StopIteration:
                break
            except FormatError as exc:
                # Everything read before the fault is sound: keep it, then report.
                failure = exc
                break
            pending.append(_staged(item, staged))
            if len(pending) >= size:
                _write(job, stream, pending, source.read, staged, source.skipped)
                pending, staged = [], Counter()
                job.refresh_from_db()
                _save_skips(job, source.skipped)
                if progress:
                    progress(job)
                # Asked from the page (or anywhere) while this batch was being written?
                if ImportJob.objects.filter(pk=job.pk, cancel_requested=True).exists():
                    return _finish(job, ImportStatus.CANCELLED, source.skipped)
        if pending:
            _write(job, stream, pending, source.read, staged, source.skipped)
        if failure is not None:
            raise failure
        job.refresh_from_db()
        seen = source.read
        if stream.total is None or stream.total < seen:
            ImportJob.objects.filter(pk=job.pk).update(total=seen)
        return _finish(job, ImportStatus.DONE, source.skipped, progress)
    except (FormatError, Invalid) as exc:
        return _fail(job, str(exc), _skips(stream, source), progress)
    except (OSError, UnicodeError, ValueError, sqlite3.DatabaseError) as exc:
        return _fail(
            job,
            f"{Path(job.source).name}: {type(exc).__name__}: {exc}",
            _skips(stream, source),
            progress,
        )
    finally:
        if source is not None:
            source.close()
        if stream is not None and stream.close is not None:
            stream.close()


def _skips(stream: ExportStream | None, source: ExportItems | None) -> Mapping[str, int] | None:
    """The reader's skip counts as far as they are known (None before the export opened)."""
    if source is not None:
        return source.skipped
    return dict(stream.skipped) if stream is not None else None


def _save_skips(job: ImportJob, read_skips: Mapping[str, int]) -> None:
    ImportJob.objects.filter(pk=job.pk).update(skipped=_merged(read_skips, job.staged_skips))


def _finish(
    job: ImportJob,
    status: ImportStatus,
    read_skips: Mapping[str, int] | None = None,
    progress: Progress | None = None,
) -> ImportJob:
    fields: dict[str, object] = {"status": status, "finished_at": timezone.now()}
    if read_skips is not None:
        job.refresh_from_db(fields=["staged_skips"])
        fields["skipped"] = _merged(read_skips, job.staged_skips)
    ImportJob.objects.filter(pk=job.pk).update(**fields)
    job.refresh_from_db()
    if progress:
        progress(job)
    return job


def _fail(
    job: ImportJob,
    message: str,
    read_skips: Mapping[str, int] | None,
    progress: Progress | None,
) -> ImportJob:
    log.warning("import %s failed: %s", job.public_id, message)
    job.refresh_from_db()
    ImportJob.objects.filter(pk=job.pk).update(errors=[*job.errors, message][-50:])
    return _finish(job, ImportStatus.FAILED, read_skips, progress)
