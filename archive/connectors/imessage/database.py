"""The Messages database: finding it in a folder, opening it without touching it, and
reading its schema.

The database is only ever read. It is in WAL mode, and even a read-only connection opens
`-wal`/`-shm` files beside it, so it is opened `immutable=1`: SQLite then takes no locks and
writes nothing. A database with a non-empty `-wal` holds committed messages only that file
knows; it is copied (database and WAL) to a private temporary folder and the copy is read.
Its triggers call functions that exist only inside Messages.app; a reader never fires them.

Schemas differ between macOS and iOS versions: columns and whole tables may be missing, so
the schema is read first (`schema_of`) and every query is built from what is there. A
database is one when it has a `message` table and a `handle` or `chat` table beside it (an
iOS backup's `sms.db` trimmed to `handle` and `message` is still one: `missing_tables`).
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from itertools import islice
from pathlib import Path
from urllib.parse import quote

from archive.connectors.base import read_head

_SQLITE_HEADER = b"SQLite format 3\x00"
REQUIRED_TABLES = ("message",)
# Beside `message`, at least one of these (a lone `message` table is too common to tell).
ONE_OF_TABLES = ("handle", "chat")
_DATABASE_NAMES = ("chat.db", "sms.db")
_MAX_FOLDER_CANDIDATES = 20
_MAX_FOLDER_ENTRIES = 1000


def _is_sqlite(path: Path) -> bool:
    return path.is_file() and read_head(path, len(_SQLITE_HEADER)) == _SQLITE_HEADER


def _connect_immutable(database: Path) -> sqlite3.Connection:
    """A connection that can neither write nor create files beside `database`."""
    uri = f"file:{quote(database.resolve().as_posix())}?immutable=1"
    connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
    _prepare(connection)
    return connection


def _prepare(connection: sqlite3.Connection) -> None:
    connection.text_factory = _text
    connection.execute("PRAGMA query_only = 1")


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def schema_of(connection: sqlite3.Connection) -> dict[str, set[str]]:
    """Table name → its column names (lower case)."""
    names = [
        str(row[0]).lower()
        for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    ]
    return {
        name: {str(row[1]).lower() for row in connection.execute(f'PRAGMA table_info("{name}")')}
        for name in names
        if '"' not in name
    }


def missing_tables(tables: dict[str, set[str]]) -> str:
    """What a schema lacks to be a Messages database, in words ("" when nothing)."""
    missing = [name for name in REQUIRED_TABLES if name not in tables]
    if not any(name in tables for name in ONE_OF_TABLES):
        missing.append(" or ".join(ONE_OF_TABLES))
    return ", ".join(missing)


# What a `message` row needs to be a message at all, each a column or one of several (its
# values may still be missing, row by row: archive/connectors/estimates.py).
MESSAGE_NEEDS = (("text", "attributedBody"), ("date",), ("handle_id", "is_from_me"))


def missing_columns(tables: dict[str, set[str]]) -> str:
    """The columns a `message` table lacks to hold messages, in words ("" when none): a
    table of that name with other columns is some other program's."""
    columns = tables.get("message", set())
    missing = [
        " or ".join(names)
        for names in MESSAGE_NEEDS
        if not any(name.lower() in columns for name in names)
    ]
    return "; ".join(missing)


def holds_messages(path: Path) -> bool:
    if not _is_sqlite(path):
        return False
    try:
        connection = _connect_immutable(path)
        try:
            tables = schema_of(connection)
        finally:
            connection.close()
    except (sqlite3.Error, OSError):
        return False
    return not missing_tables(tables)


def database_in(folder: Path) -> Path | None:
    """The Messages database inside `folder`: chat.db / sms.db first, then any SQLite file."""
    named = [folder / name for name in _DATABASE_NAMES]
    try:
        entries = sorted(islice(folder.iterdir(), _MAX_FOLDER_ENTRIES))
    except OSError:
        return None
    others = [p for p in entries if p not in named and _is_sqlite(p)]
    for candidate in [*named, *others[:_MAX_FOLDER_CANDIDATES]]:
        if holds_messages(candidate):
            return candidate
    return None


def attachments_folder(path: Path, database: Path) -> Path | None:
    for folder in (path, database.parent):
        candidate = folder / "Attachments"
        if folder.is_dir() and candidate.is_dir():
            return candidate
    return None


class Database:
    """The open database, and the private copy to remove when it was read from one."""

    def __init__(self, database: Path) -> None:
        self.path = database
        self.copy_dir: Path | None = None
        wal = database.with_name(database.name + "-wal")
        try:
            pending_wal = wal.is_file() and wal.stat().st_size > 0
        except OSError:
            pending_wal = False
        if not pending_wal:
            self.connection = _connect_immutable(database)
            return
        # Committed messages still in the WAL: immutable=1 would not see them. Read a copy.
        self.copy_dir = Path(tempfile.mkdtemp(prefix="wirecat-imessage-"))
        try:
            copy = self.copy_dir / "chat.db"
            shutil.copyfile(database, copy)
            shutil.copyfile(wal, self.copy_dir / "chat.db-wal")
            self.connection = sqlite3.connect(copy, check_same_thread=False)
            _prepare(self.connection)
        except BaseException:
            shutil.rmtree(self.copy_dir, ignore_errors=True)
            raise

    def closer(self) -> Callable[[], None]:
        connection, copy_dir = self.connection, self.copy_dir

        def close() -> None:
            connection.close()
            if copy_dir is not None:
                shutil.rmtree(copy_dir, ignore_errors=True)

        return close
