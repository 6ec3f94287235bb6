"""What a backup archive holds and how its parts are checked, for making and restoring.

An archive is one tar stream (gzip), its members in this order: `wirecat.db` (the store's
snapshot, a rollback-journal file with no -wal beside it), `blobs/aa/bb/<sha256>` (every
blob the snapshot's attachments name), `keys/credentials.key` and `keys/secret_key` (only
when asked), and last `manifest.json`: when, which WireCat and schema, the counts of the
snapshot, and the size and SHA-256 of every other part.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from wirecat.db.driver import Database

FORMAT = "wirecat-backup"
FORMAT_VERSION = 1
STORE_PART = "wirecat.db"
MANIFEST_PART = "manifest.json"
# The two keys of a state folder: the sealed credentials' (archive/sync/credentials.py)
# and the one that signs sessions and token handovers (wirecat/settings.py).
KEY_FILES = ("credentials.key", "secret_key")
ARCHIVE_PREFIX = "wirecat-backup-"
ARCHIVE_SUFFIX = ".tar.gz"

_BLOB_PART = re.compile(r"^blobs/([0-9a-f]{2})/([0-9a-f]{2})/([0-9a-f]{64})$")
# The tables counted into the manifest, and counted again after a restore.
COUNTED = {
    "messages": "archive_message",
    "chats": "archive_chat",
    "people": "archive_person",
    "notes": "notes_note",
    "meetings": "meetings_meeting",
    "tasks": "tasks_task",
    "attachments": "archive_attachment",
}

Progress = Callable[[str, int, int], None]  # (phase, done, total)


def wirecat_version() -> str:
    try:
        return metadata.version("wirecat")
    except metadata.PackageNotFoundError:  # run from a checkout never installed
        return "unknown"


def blob_part(name: str) -> str | None:
    """The SHA-256 a blob part's name claims, or None when `name` is not a blob part."""
    found = _BLOB_PART.match(name)
    if found is None or not found[3].startswith(found[1] + found[2]):
        return None
    return found[3]


def part_allowed(name: str) -> bool:
    """Only the names a backup writes: anything else (a path with `..`, an absolute one, a
    file beside the store) is no part of a backup."""
    return (
        name == STORE_PART
        or blob_part(name) is not None
        or name in {f"keys/{key}" for key in KEY_FILES}
    )


def store_open(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
    return Database.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


def _table_exists(db: sqlite3.Connection, table: str) -> bool:
    row = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,))
    return row.fetchone() is not None


def store_counts(db: sqlite3.Connection) -> dict[str, int]:
    """The rows of each counted table (0 for a table an older schema lacks)."""
    return {
        name: (
            int(db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])
            if _table_exists(db, table)
            else 0
        )
        for name, table in COUNTED.items()
    }


def schema_versions(db: sqlite3.Connection) -> dict[str, str]:
    """The latest migration applied per app (names are numbered, so the greatest is it)."""
    rows = db.execute("SELECT app, max(name) FROM django_migrations GROUP BY app ORDER BY app")
    return {str(app): str(name) for app, name in rows}


def blob_paths(db: sqlite3.Connection) -> list[str]:
    """Every blob path the store's attachments name, each once, sorted."""
    rows = db.execute(
        "SELECT DISTINCT path FROM archive_attachment WHERE path IS NOT NULL AND path != ''"
        " ORDER BY path"
    )
    return [str(path) for (path,) in rows]


def fts_tables(db: sqlite3.Connection) -> list[str]:
    """The FTS5 tables of the store (their vocabulary views excluded)."""
    rows = db.execute(
        "SELECT name FROM sqlite_master WHERE type='table'"
        " AND lower(sql) LIKE 'create virtual table%using fts5(%' ORDER BY name"
    )
    return [str(name) for (name,) in rows]


def store_faults(db: sqlite3.Connection) -> list[str]:
    """What SQLite's own checks find wrong with a store: `PRAGMA integrity_check`, then
    each FTS5 index's `integrity-check` (against its content table too). Empty: sound."""
    faults = [
        str(row[0]) for row in db.execute("PRAGMA integrity_check(20)") if str(row[0]) != "ok"
    ]
    for table in fts_tables(db):
        try:
            db.execute(f'INSERT INTO "{table}"("{table}", rank) VALUES (\'integrity-check\', 1)')
        except Database.Error as exc:
            faults.append(f"full-text index {table}: {exc}")
    return faults
