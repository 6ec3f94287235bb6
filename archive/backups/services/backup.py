"""`backup_make`: a consistent snapshot of the live store, the blobs it names and (when
asked) the keys, in one archive file with a manifest; `backups_prune` keeps the newest.

The snapshot uses SQLite's online backup API, page by page, inside one read transaction
held on the source: in WAL mode that transaction pins one version of the store (what was
committed when it began), writers go on committing meanwhile, and the copy never restarts
because of them. (`VACUUM INTO` pins a version the same way but rebuilds every table and
index as it goes, which measured slower, and reports no progress.) The snapshot is a
file of its own first, so the archive is written from something that no longer changes;
the archive is written to a hidden temporary name and renamed when whole, so a failed
backup leaves no half file under an archive's name.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import io
import json
import logging
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import connections
from django.utils import timezone

from archive.backups.models import BackupRun
from archive.backups.services.parts import (
    ARCHIVE_PREFIX,
    ARCHIVE_SUFFIX,
    FORMAT,
    FORMAT_VERSION,
    KEY_FILES,
    MANIFEST_PART,
    STORE_PART,
    Progress,
    blob_paths,
    schema_versions,
    store_counts,
    store_open,
    wirecat_version,
)
from wirecat.errors import WireCatError

log = logging.getLogger(__name__)

PAGES_PER_STEP = 1024  # pages copied per step of the online backup (4 MiB at 4 KiB pages)
CHUNK = 1 << 20
COMPRESS_LEVEL = 3  # gzip: most of the size saved at a fraction of level 9's time
MISSING_LISTED = 100  # blobs named but not on disk, listed by name in the manifest


class BackupFailed(WireCatError):
    """A backup that could not be made; its sentence is recorded with its run."""


@dataclass
class Made:
    """A backup made: its file, size, counts and what it could not include."""

    path: Path
    size: int
    counts: dict[str, int]
    missing_blobs: int = 0
    run: BackupRun | None = None
    parts: list[dict[str, object]] = field(default_factory=list)


def _quiet(_: str, __: int, ___: int) -> None:
    return None


def backup_folder() -> Path:
    return Path(settings.STATE_DIR) / "backups"


def store_path() -> Path:
    """The file of the store Django writes (the test store in a test run)."""
    return Path(str(connections["default"].settings_dict["NAME"]))


def snapshot_take(source: Path, target: Path, progress: Progress = _quiet) -> None:
    """Copy the store at `source` into a new file `target`, as of one moment, while other
    connections keep writing; `target` ends as a rollback-journal database (one file)."""
    if not source.is_file():
        raise BackupFailed(f"there is no store at {source} to back up")
    src = store_open(source)
    dst = store_open(target)
    try:
        src.execute("BEGIN")  # a read transaction: one version of the store, to the end
        src.execute("SELECT count(*) FROM sqlite_master").fetchone()

        def step(_: int, remaining: int, total: int) -> None:
            progress("snapshot", total - remaining, total)

        src.backup(dst, pages=PAGES_PER_STEP, progress=step)
        src.execute("ROLLBACK")
        dst.execute("PRAGMA journal_mode=DELETE").fetchone()
    finally:
        dst.close()
        src.close()


class _Hashing:
    """A file read through, its bytes counted and hashed as tarfile copies them."""

    def __init__(self, handle: BinaryIO, tick: Progress, done: list[int], total: int) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()
        self.tick = tick
        self.done = done
        self.total = total

    def read(self, size: int = -1) -> bytes:
        chunk = self.handle.read(size)
        self.digest.update(chunk)
        self.done[0] += len(chunk)
        self.tick("archive", self.done[0], self.total)
        return chunk


def _part_add(
    tar: tarfile.TarFile,
    name: str,
    path: Path,
    mtime: float,
    tick: Progress,
    done: list[int],
    total: int,
) -> dict[str, object]:
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        info = tarfile.TarInfo(name)
        info.size = size
        info.mtime = int(mtime)
        info.mode = 0o600
        reader = _Hashing(handle, tick, done, total)
        tar.addfile(info, reader)
    return {"name": name, "size": size, "sha256": reader.digest.hexdigest()}


def _archive_name(now: datetime, folder: Path) -> Path:
    stamp = now.strftime("%Y%m%d-%H%M%S")
    path = folder / f"{ARCHIVE_PREFIX}{stamp}{ARCHIVE_SUFFIX}"
    n = 1
    while path.exists():  # two backups in one second
        n += 1
        path = folder / f"{ARCHIVE_PREFIX}{stamp}-{n}{ARCHIVE_SUFFIX}"
    return path


def _archive_write(
    handle: BinaryIO,
    *,
    snapshot: Path,
    blobs: list[Path],
    keys: list[Path],
    manifest: dict[str, object],
    state: Path,
    progress: Progress,
) -> list[dict[str, object]]:
    mtime = timezone.now().timestamp()
    total = sum(p.stat().st_size for p in [snapshot, *blobs, *keys])
    done = [0]
    parts = []
    with (
        gzip.GzipFile(fileobj=handle, mode="wb", compresslevel=COMPRESS_LEVEL, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        parts.append(_part_add(tar, STORE_PART, snapshot, mtime, progress, done, total))
        for blob in blobs:
            name = blob.relative_to(state).as_posix()
            parts.append(_part_add(tar, name, blob, mtime, progress, done, total))
        for key in keys:
            parts.append(_part_add(tar, f"keys/{key.name}", key, mtime, progress, done, total))
        body = json.dumps({**manifest, "parts": parts}, indent=1).encode()
        info = tarfile.TarInfo(MANIFEST_PART)
        info.size = len(body)
        info.mtime = int(mtime)
        info.mode = 0o600
        tar.addfile(info, io.BytesIO(body))
    return parts


def backup_make(
    dest: Path | None = None,
    *,
    with_keys: bool = False,
    trigger: str = "command",
    progress: Progress = _quiet,
) -> Made:
    """Back up the store into a new archive file in `dest` (default `<state>/backups/`),
    recording the run; a failure is recorded with its sentence and raised as BackupFailed."""
    run = BackupRun.objects.create(started_at=timezone.now(), trigger=trigger)
    try:
        made = _backup(dest or backup_folder(), with_keys=with_keys, progress=progress)
    except Exception as exc:
        run.finished_at = timezone.now()
        run.error = _sentence(exc, dest or backup_folder())
        run.save(update_fields=["finished_at", "error"])
        log.warning("backup failed: %s", run.error)
        raise BackupFailed(run.error) from exc
    run.finished_at = timezone.now()
    run.ok = True
    run.path = str(made.path)
    run.size = made.size
    run.save(update_fields=["finished_at", "ok", "path", "size"])
    made.run = run
    return made


def _sentence(exc: Exception, dest: Path) -> str:
    """What went wrong, in one sentence naming where."""
    if isinstance(exc, WireCatError):
        return str(exc)
    if isinstance(exc, OSError):
        if isinstance(exc, FileExistsError | NotADirectoryError) and dest.exists():
            why = "it is a file, not a folder" if not dest.is_dir() else str(exc.strerror)
        elif isinstance(exc, PermissionError):
            why = "permission denied"
        elif exc.errno == errno.ENOSPC:
            why = "the disk is full"
        else:
            why = str(exc.strerror or exc)
        where = f" ({exc.filename})" if exc.filename and Path(exc.filename) != dest else ""
        return f"cannot write the backup into {dest}: {why}{where}"
    return f"the backup stopped: {exc}"


def _backup(dest: Path, *, with_keys: bool, progress: Progress) -> Made:
    state = Path(settings.STATE_DIR)
    dest.mkdir(parents=True, exist_ok=True, mode=0o700)
    now = timezone.now()
    work = Path(tempfile.mkdtemp(prefix=".backup-", dir=dest))
    final = _archive_name(now, dest)
    partial = dest / f".{final.name}.part"
    try:
        snapshot = work / STORE_PART
        snapshot_take(store_path(), snapshot, progress)
        db = store_open(snapshot, readonly=True)
        try:
            counts = store_counts(db)
            schema = schema_versions(db)
            named = blob_paths(db)
        finally:
            db.close()
        blobs = [state / name for name in named if (state / name).is_file()]
        missing = [name for name in named if not (state / name).is_file()]
        keys = [state / key for key in KEY_FILES if (state / key).is_file()] if with_keys else []
        manifest: dict[str, object] = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "created_at": now.isoformat().replace("+00:00", "Z"),
            "wirecat_version": wirecat_version(),
            "schema": schema,
            "counts": {**counts, "blobs": len(blobs)},
            "with_keys": with_keys,
            "missing_blobs": {"count": len(missing), "first": missing[:MISSING_LISTED]},
        }
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            parts = _archive_write(
                handle,
                snapshot=snapshot,
                blobs=blobs,
                keys=keys,
                manifest=manifest,
                state=state,
                progress=progress,
            )
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, final)
        _folder_sync(dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if missing:
        log.warning("backup %s: %d blobs named by attachments are not on disk", final, len(missing))
    return Made(
        path=final,
        size=final.stat().st_size,
        counts={**counts, "blobs": len(blobs)},
        missing_blobs=len(missing),
        parts=parts,
    )


def _folder_sync(folder: Path) -> None:
    """The rename itself on disk (a crash after it keeps the archive's name)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def backups_list(folder: Path) -> list[Path]:
    """The archive files in `folder`, newest first (their names hold their time)."""
    if not folder.is_dir():
        return []
    found = [
        path
        for path in folder.iterdir()
        if path.name.startswith(ARCHIVE_PREFIX)
        and path.name.endswith(ARCHIVE_SUFFIX)
        and path.is_file()
        and not path.is_symlink()
    ]
    return sorted(found, key=lambda p: (p.stat().st_mtime, p.name), reverse=True)


def backups_prune(folder: Path, keep: int) -> list[Path]:
    """Delete all but the newest `keep` archives in `folder`; returns what was deleted."""
    gone = backups_list(folder)[max(keep, 1) :]
    for path in gone:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return gone
