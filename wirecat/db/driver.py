"""Which SQLite driver module the backend uses.

A PyPI wheel bundling a modern SQLite comes first, so every machine runs the same engine
with FTS5, trigram and contentless-delete; the interpreter's own `sqlite3` is the last
resort, and the capability check then says what is missing.
"""

from __future__ import annotations

from types import ModuleType


def load_driver() -> ModuleType:
    try:
        import sqlean.dbapi2 as driver  # type: ignore[import-untyped]  # Linux, macOS, Windows
    except ImportError:  # pragma: no cover - depends on the platform's wheels
        try:
            import pysqlite3.dbapi2 as driver  # type: ignore[import-not-found,no-redef]
        except ImportError:
            import sqlite3 as driver  # type: ignore[no-redef]
    return driver


Database = load_driver()
