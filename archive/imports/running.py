"""Running imports: one file, or several as one run, read in a child process and written
in bounded batches through the single write path, each batch with the job's progress.

Several files run as one (`import_run_many`, what `wirecat import` does with many paths):
the next file's reader starts as the one before starts being written, so its messages
are ready when the writer gets to it; batches keep the size they grew to; the
bulk settings and the FTS backlog's merge come once for the run, not once per file.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
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
    MEETING_FORMATS,
    MeetingReader,
    meeting_reader_for,
    reader_for,
)
from archive.imports.meetings import meeting_file_import
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


def pid_alive(pid: int | None) -> bool:
    """Whether process `pid` is running (an import's worker, say)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _claim(job_id: int) -> ImportJob:
    with transaction.atomic():
        job = ImportJob.objects.filter(pk=job_id).first()
        if job is None:
            raise NotFound(f"import job {job_id} does not exist")
        if (
            job.status == ImportStatus.RUNNING
            and job.worker_pid != os.getpid()
            and pid_alive(job.worker_pid)
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
    return import_run_many(job_ids=[job_id], progress=progress, batch_size=batch_size)[0]


def import_run_many(
    *, job_ids: Sequence[int], progress: Progress | None = None, batch_size: int | None = None
) -> list[ImportJob]:
    """Run (or resume) several imports one after the other as one run: a file's reader
    starts while the one before is still being written, batches keep the size they grew
    to, and the FTS backlog is merged once at the end. Each job still ends, fails or is
    cancelled on its own. Returns the jobs as they ended."""
    background_priority()
    run = _Run(size=min(batch_size or settings.IMPORT_BATCH_SIZE, 5_000))
    done: list[ImportJob] = []
    # History is not news: imported messages reach the changes feed, not the webhooks.
    with _bulk_writes(), fts_bulk_writes(), quiet_changes():
        try:
            for index, job_id in enumerate(job_ids):
                run.after = job_ids[index + 1] if index + 1 < len(job_ids) else None
                done.append(_job_run(job_id, run, progress))
        finally:
            run.close()
    return done


def _job_run(job_id: int, run: _Run, progress: Progress | None) -> ImportJob:
    job = _claim(job_id)
    if job.cancel_requested:
        return _finish(job, ImportStatus.CANCELLED)
    meeting_file = meeting_reader_for(Path(job.source), job.format) if job.format else None
    if meeting_file is not None:
        return _meeting_import(job, meeting_file, progress)
    return _import(job, run, progress)


@dataclass
class _Opened:
    """An export opened and its reader started (in a child process)."""

    job_id: int
    stream: ExportStream
    source: ExportItems
    items: Iterator[ImportItem]

    def close(self) -> None:
        self.source.close()
        if self.stream.close is not None:
            self.stream.close()


def _open(job: ImportJob) -> _Opened:
    """The job's export opened and its reader started: from the first message the job has
    not recorded yet (an earlier run's `position` is read again but not handed over)."""
    source_path = Path(job.source)
    reader = reader_for(source_path, job.format or None)
    import_preflight(source_path)  # within WIRECAT_IMPORT_MAX_BYTES, room on disk
    stream = reader.open(
        source_path,
        ReadOptions(account_name=job.account_name or None, source_name=job.source_name),
    )
    try:
        # A file parsed whole is read here: measured on 145,000 messages in 29 files, a
        # forked reader per file (its pickling, the pages fork makes copy) cost 15.0 s
        # against 12.5 s read in this process. A streamed one is read in a child.
        in_child = settings.IMPORT_READER_PROCESS and not stream.held_whole
        source = ExportItems(stream, skip=job.position, in_child=in_child)
        return _Opened(job.pk, stream, source, iter(source))
    except BaseException:
        if stream.close is not None:
            stream.close()
        raise


@dataclass
class _Run:
    """What the imports of one run share: the batch size reached so far, and the next
    job's export, opened ahead while this one is written."""

    size: int
    batch: int = 0
    after: int | None = None  # the job that comes next
    ahead: _Opened | None = None

    def __post_init__(self) -> None:
        # With a transaction budget, from a small first batch up to what fits in it.
        self.batch = (
            min(self.size, IMPORT_MIN_BATCH) if settings.IMPORT_TRANSACTION_MS > 0 else self.size
        )

    def open_ahead(self) -> None:
        """Open the next job's export and start its reader, once (a fault there is left
        for that job's own turn, which opens it again and reports it)."""
        if self.after is None or self.ahead is not None:
            return
        job = ImportJob.objects.filter(pk=self.after).first()
        if job is None or job.finished or job.format in MEETING_FORMATS:
            return
        try:
            self.ahead = _open(job)
        except Exception as exc:
            log.info("import %s not opened ahead: %s", job.public_id, exc)
            self.after = None

    def take(self, job: ImportJob) -> _Opened | None:
        """The job's export if it was opened ahead (and the job still starts there)."""
        opened, self.ahead = self.ahead, None
        if opened is not None and opened.job_id == job.pk and opened.source.skip == job.position:
            return opened
        if opened is not None:
            opened.close()
        return None

    def close(self) -> None:
        if self.ahead is not None:
            self.ahead.close()
            self.ahead = None


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


def _import(job: ImportJob, run: _Run, progress: Progress | None) -> ImportJob:
    opened: _Opened | None = None
    try:
        opened = run.take(job) or _open(job)
        # The next file's reader starts now: its bounded queue fills while this file is
        # written, so the writer never waits at a file's start.
        run.open_ahead()
        stream, source, items = opened.stream, opened.source, opened.items
        ImportJob.objects.filter(pk=job.pk).update(total=stream.total, format=stream.format)
        job.refresh_from_db()
        if progress:
            progress(job)
        pending: list[ImportItem] = []
        pending_bytes = 0  # a batch is also written once its text reaches IMPORT_BATCH_BYTES
        staged: Counter[str] = Counter()
        failure: FormatError | None = None
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
            if len(pending) >= run.batch or pending_bytes >= settings.IMPORT_BATCH_BYTES:
                began = time.perf_counter()
                _write(job, stream, pending, source.read, staged, source.skipped)
                run.batch = _next_batch_size(run.size, len(pending), time.perf_counter() - began)
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
        return _fail(job, str(exc), _skips(opened), progress)
    except (OSError, UnicodeError, ValueError, sqlite3.DatabaseError, DatabaseError) as exc:
        # A read-only or full state folder is its sentence (what, where, what to do).
        fault = store_fault(exc)
        reason = str(fault) if fault else f"{Path(job.source).name}: {type(exc).__name__}: {exc}"
        return _fail(job, reason, _skips(opened), progress)
    except Exception as exc:  # a bug: the job is failed with it, never left "running"
        _fail(job, f"{type(exc).__name__}: {exc}", _skips(opened), progress)
        raise
    finally:
        if opened is not None:
            opened.close()


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


def _skips(opened: _Opened | None) -> Mapping[str, int] | None:
    """The reader's skip counts as far as they are known (None before the export opened)."""
    return opened.source.skipped if opened is not None else None


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
