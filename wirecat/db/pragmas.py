"""What a live connection is running with, for health pages, heartbeats and tests."""

from __future__ import annotations

from typing import Any

from django.db import connection


def connection_report() -> dict[str, Any]:
    """The SQLite version, PRAGMAs and transaction mode of this process's connection."""
    connection.ensure_connection()
    with connection.cursor() as cursor:
        report: dict[str, Any] = {}
        for pragma in ("journal_mode", "foreign_keys", "busy_timeout", "synchronous"):
            cursor.execute(f"PRAGMA {pragma}")
            report[pragma] = cursor.fetchone()[0]
        cursor.execute("SELECT sqlite_version()")
        report["sqlite_version"] = cursor.fetchone()[0]
    report["transaction_mode"] = getattr(connection, "transaction_mode", None)
    report["driver"] = getattr(connection, "Database", None).__name__  # type: ignore[union-attr]
    return report
