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
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import F
from django.utils import timezone

from archive.connectors.base import (
    ExportStream,
    FormatError,
    ImportItem,
    ReadOptions,
    import_preflight,
    item_weight,
)
from archive.connectors.registry import (
    MeetingReader,
    import_reader_for,
    meeting_reader_for,
    reader_for,
)
from archive.imports.meetings import meeting_file_import, meeting_picked
from archive.imports.models import ImportJob, ImportStatus
from archive.imports.reading import ExportItems
from archive.store.domain import Batch, BatchResult
from archive.store.models import Chat
from archive.store.services.maintenance import fts_bulk_writes
from archive.store.sink import batch_record, quiet_changes
from archive.store.staging import message_staged
from wirecat.db.faults import store_fault
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
    # Kept with an estimated date (the export gave none usable): counted, not skipped.
    estimated = sum(message.date_estimated for message in batch.messages)

    def progress(result: BatchResult) -> None:  # in the batch's transaction
        before = ImportJob.objects.filter(pk=job.pk).values_list("staged_skips", flat=True)[0]
        staged_total = dict(Counter(before) + staged)
        ImportJob.objects.filter(pk=job.pk).update(
            position=position,
            added=F("added") + result.added,
            updated=F("updated") + result.updated,
            unchanged=F("unchanged") + result.unchanged,
            tombstoned=F("tombstoned") + result.tombstoned,
            estimated=F("estimated") + estimated,
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


def _next_batch_size(most: int, written: int, seconds: float) -> int:
    """How many messages the next batch holds so that its transaction (which every other
    writer waits for, the API's included) stays within WIRECAT_IMPORT_TRANSACTION_MS, from
    what the last one took: at least IMPORT_MIN_BATCH, at most `most`, and never more than
    twice the last (one quick batch is no promise). No budget (0): always `most`."""
    budget = settings.IMPORT_TRANSACTION_MS / 1000
    if budget <= 0:
        return most
    fits = int(written * budget / max(seconds, 1e-6))
    return max(min(IMPORT_MIN_BATCH, most), min(fits, written * 2, most))


def background_priority() -> int:
    """Lower this process's CPU priority to WIRECAT_BACKGROUND_NICE (never raise it: an
    unprivileged process cannot take it back), so that what it does and every process it
    forks from now on (an import's reader) yields the cores to pages and the API. Returns
    the nice level it runs at."""
    target = max(0, min(settings.BACKGROUND_NICE, 19))
    try:
        current = os.getpriority(os.PRIO_PROCESS, 0)
        if target > current:
            os.setpriority(os.PRIO_PROCESS, 0, target)
        return os.getpriority(os.PRIO_PROCESS, 0)
    except OSError as exc:  # not allowed here (a container's seccomp, say): run as is
        log.info("background priority not set: %s", exc)
        return 0


def import_run(
    *, job_id: int, progress: Progress | None = None, batch_size: int | None = None
) -> ImportJob:
    """Run (or resume) one import to its end, failure or cancellation, at the background
    priority (WIRECAT_BACKGROUND_NICE)."""
    background_priority()
    size = min(batch_size or settings.IMPORT_BATCH_SIZE, 5_000)
    job = _claim(job_id)
    if job.cancel_requested:
        return _finish(job, ImportStatus.CANCELLED)
    meeting_file = meeting_reader_for(Path(job.source), job.format) if job.format else None
    if meeting_file is not None:
        return _meeting_import(job, meeting_file, progress)
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
# The fewest messages a batch holds however slow its transaction was (each transaction
# has a fixed cost: the commit, a segment in each FTS index, the job's progress).
IMPORT_MIN_BATCH = 500


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
        import_preflight(Path(job.source))  # within WIRECAT_IMPORT_MAX_BYTES, room on disk
        stream = reader.open(
            Path(job.source),
            ReadOptions(account_name=job.account_name or None, source_name=job.source_name),
        )
        ImportJob.objects.filter(pk=job.pk).update(total=stream.total, format=stream.format)
        job.refresh_from_db()
        if progress:
            progress(job)
        pending: list[ImportItem] = []
        pending_bytes = 0  # a batch is also written once its text reaches IMPORT_BATCH_BYTES
        staged: Counter[str] = Counter()
        failure: FormatError | None = None
        # Read in a child process while this one writes; the first `position` messages
        # (recorded by an earlier run) are read again but not handed over.
        source = ExportItems(stream, skip=job.position, in_child=settings.IMPORT_READER_PROCESS)
        items = iter(source)
        # Messages in the next batch: with a transaction budget, from a small first batch
        # up to what fits in the budget (never above `size`).
        batch = min(size, IMPORT_MIN_BATCH) if settings.IMPORT_TRANSACTION_MS > 0 else size
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
            pending_bytes += item_weight(item)
            if len(pending) >= batch or pending_bytes >= settings.IMPORT_BATCH_BYTES:
                began = time.perf_counter()
                _write(job, stream, pending, source.read, staged, source.skipped)
                batch = _next_batch_size(size, len(pending), time.perf_counter() - began)
                pending, staged, pending_bytes = [], Counter(), 0
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
    except (OSError, UnicodeError, ValueError, sqlite3.DatabaseError, DatabaseError) as exc:
        # A read-only or full state folder is its sentence (what, where, what to do).
        fault = store_fault(exc)
        reason = str(fault) if fault else f"{Path(job.source).name}: {type(exc).__name__}: {exc}"
        return _fail(job, reason, _skips(stream, source), progress)
    except Exception as exc:  # a bug: the job is failed with it, never left "running"
        _fail(job, f"{type(exc).__name__}: {exc}", _skips(stream, source), progress)
        raise
    finally:
        if source is not None:
            source.close()
        if stream is not None and stream.close is not None:
            stream.close()


def _meeting_import(job: ImportJob, reader: MeetingReader, progress: Progress | None) -> ImportJob:
    """A calendar or transcript file read and stored in one go (archive/imports/meetings.py)."""
    try:
        import_preflight(Path(job.source))
        outcome, problems = meeting_file_import(job, reader)
    except (FormatError, Invalid, NotFound) as exc:
        return _fail(job, str(exc), None, progress)
    except (OSError, UnicodeError, ValueError, sqlite3.DatabaseError, DatabaseError) as exc:
        fault = store_fault(exc)
        reason = str(fault) if fault else f"{job.source_name}: {type(exc).__name__}: {exc}"
        return _fail(job, reason, None, progress)
    except Exception as exc:  # a bug: the job is failed with it, never left "running"
        _fail(job, f"{type(exc).__name__}: {exc}", None, progress)
        raise
    done = outcome.get("meetings", outcome.get("segments", 0))
    ImportJob.objects.filter(pk=job.pk).update(
        outcome=outcome,
        errors=problems,
        total=done,
        position=done,
        added=outcome.get("meetings_added", 0),
        updated=outcome.get("meetings_updated", 0),
    )
    return _finish(job, ImportStatus.DONE, None, progress)


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
    try:
        job.refresh_from_db()
        ImportJob.objects.filter(pk=job.pk).update(errors=[*job.errors, message][-50:])
        return _finish(job, ImportStatus.FAILED, read_skips, progress)
    except DatabaseError as exc:  # a full disk may refuse the longer row: the status alone
        log.warning("import %s: recording the failure in full failed: %s", job.public_id, exc)
        ImportJob.objects.filter(pk=job.pk).update(
            status=ImportStatus.FAILED, finished_at=timezone.now()
        )
        job.refresh_from_db()
        job.errors = [*job.errors, message][-50:]  # shown by the command, if not kept
        return job
