"""Which SQLite driver module the backend uses.

A PyPI wheel bundling a modern SQLite comes first, so every machine runs the same engine
with FTS5, trigram and contentless-delete; the interpreter's own `sqlite3` is the last
resort, and the capability check then says what is missing.
"""

from __future__ import annotations

from types import ModuleType


def load_driver() -> ModuleType:
    try:
        import sqlean.dbapi2 as driver  # Linux, macOS, Windows
    except ImportError:  # pragma: no cover - depends on the platform's wheels
        try:
            import pysqlite3.dbapi2 as driver
        except ImportError:
            import sqlite3 as driver
    return driver


Database = load_driver()
