"""The store's faults that are not bugs: a read-only state folder, a full disk, a store that
was never migrated. Each is one sentence (what, where, what to do) on the command line
(`wirecat/__main__.py`), on the page (`archive/web/middleware.py`, `wirecat/urls.py`'s 500
handler), in the API (`wirecat/api.py`) and in a failed import's reason.

The backend raises them in place of SQLite's own errors (`wirecat/db/base.py`); an `OSError`
from a file write (blobs, uploads, static files) is recognised by `store_fault`. Each is a
`WireCatError` (so pages and the API map it like any other) and a Django `OperationalError`
(so code that catches database errors still does).
"""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

from django.conf import settings
from django.db.utils import OperationalError

from wirecat.errors import WireCatError

# SQLite's primary result codes (the low byte of an extended code).
SQLITE_READONLY = 8
SQLITE_FULL = 13
SQLITE_CANTOPEN = 14

_READ_ONLY_ERRNOS = {errno.EROFS, errno.EACCES, errno.EPERM}
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


class StoreFault(WireCatError, OperationalError):
    """The store cannot do what was asked, and the owner, not the code, can fix it."""

    http_status = 503


class StoreReadOnly(StoreFault):
    http_status = 503


class StoreFull(StoreFault):
    http_status = 507  # Insufficient Storage


class StoreNotMigrated(StoreFault):
    http_status = 503


def _state_folder() -> Path | None:
    folder = getattr(settings, "STATE_DIR", None) if settings.configured else None
    return Path(folder) if folder else None


def writable(path: Path) -> bool:
    """True when this process may write `path` (a folder: make files in it)."""
    return os.access(path, os.W_OK)


def read_only(where: Path) -> StoreReadOnly:
    """The sentence for a store (or a file of the state folder) that cannot be written."""
    folder = where if where.is_dir() else where.parent
    state = _state_folder()
    if state is not None and (folder == state or state in folder.parents):
        folder, setting = state, "WIRECAT_STATE_DIR"
    else:
        setting = "WIRECAT_DB" if where.suffix == ".db" else "WIRECAT_STATE_DIR"
    if writable(folder) and where.exists() and not writable(where):
        return StoreReadOnly(
            f"The store {where} is read-only: WireCat can read the archive but must write"
            f" that file to save anything. Make it writable (or set {setting}) and try again."
        )
    return StoreReadOnly(
        f"The state folder {folder} is read-only: WireCat can read the archive but needs to"
        f" write its store there to save anything. Make it writable (or set {setting})"
        " and try again."
    )


def full(where: Path, detail: str) -> StoreFull:
    """The sentence for a write that found no room."""
    return StoreFull(
        f"The disk holding {where} is full ({detail}): WireCat could not save there. Free"
        " some space on it (or move the state folder with WIRECAT_STATE_DIR) and try again;"
        " an interrupted import resumes where it stopped."
    )


def not_migrated(database: Path, missing: str, *, empty: bool) -> StoreNotMigrated:
    if empty:
        return StoreNotMigrated(
            f"The store at {database} has no tables yet: run `wirecat migrate`"
            " (or `make run`) first."
        )
    return StoreNotMigrated(
        f"The store at {database} is older than this WireCat ({missing}): run"
        " `wirecat migrate` (or `make run`) first."
    )


def database_fault(
    exc: BaseException, database: Path, connection: object = None
) -> StoreFault | None:
    """The fault a SQLite driver error (`sqlite_errorcode`) stands for, if it is one."""
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(code, int):
        return None
    primary = code & 0xFF
    if primary == SQLITE_FULL:
        return full(database, str(exc))
    if primary == SQLITE_READONLY:
        return read_only(database)
    if primary == SQLITE_CANTOPEN and not writable(database.parent):
        return read_only(database)
    message = str(exc)
    if message.startswith("no such table:") and connection is not None:
        return not_migrated(database, message, empty=not _has_migrations(connection))
    return None


def _has_migrations(connection: object) -> bool:
    try:
        found = connection.execute(  # type: ignore[attr-defined]
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'django_migrations'"
        ).fetchone()
    except Exception:  # a second fault while naming the first: say the first
        return True
    return found is not None


def _ours_unwritable(where: Path) -> bool:
    """`where` is the store or in the state folder, and cannot be written (an export the
    process may not read is the export's problem, not the folder's)."""
    state, database = _state_folder(), _database()
    ours = where.parent == database.parent and where.name.startswith(database.name)
    ours = ours or (state is not None and (where == state or state in where.parents))
    target = where if where.exists() else where.parent
    return ours and not writable(target)


def _database() -> Path:
    name = settings.DATABASES["default"]["NAME"] if settings.configured else ""
    return Path(str(name))


def store_fault(exc: BaseException) -> StoreFault | None:
    """The store fault `exc` is or was caused by (a read-only or full file system, a store
    without its tables), or None for anything else (a bug stays a bug)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, StoreFault):
            return current
        if isinstance(current, OSError) and current.errno is not None:
            where = Path(current.filename) if current.filename else _state_folder()
            where = where or _database()
            if current.errno in _FULL_ERRNOS:
                return full(where, current.strerror or "no space left")
            if current.errno in _READ_ONLY_ERRNOS and _ours_unwritable(where):
                return read_only(where)
        fault = database_fault(current, _database())
        if fault is not None:
            return fault
        current = current.__cause__ or current.__context__
    return None


def store_preflight() -> StoreFault | None:
    """What would stop a long-running process that writes (the Celery worker and beat)
    before it starts: a state folder or store it cannot write, a store without all of its
    migrations. None when it can start."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    state = _state_folder()
    if state is not None and state.exists() and not writable(state):
        return read_only(state)
    database = _database()
    try:
        connection.ensure_connection()
        if getattr(connection, "read_only", False):
            return read_only(database)
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:
        return store_fault(exc)
    if plan:
        migration, _ = plan[0]
        empty = not executor.loader.applied_migrations
        return not_migrated(database, f"{migration.app_label}.{migration.name}", empty=empty)
    return None


class OneLine(logging.Filter):
    """A logged store fault is its sentence, not a traceback (Django logs what a middleware
    raises with its traceback before the 500 handler answers with the sentence)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            fault = store_fault(record.exc_info[1])
            if fault is not None:
                record.msg = f"{record.getMessage()}: {fault}"
                record.args = ()
                record.exc_info = None
                record.exc_text = None
        return True
