"""The SQLite backend: capability check, per-connection PRAGMAs, IMMEDIATE transactions."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, connections, transaction

from wirecat.db import capabilities
from wirecat.db.base import DatabaseWrapper
from wirecat.db.driver import Database
from wirecat.db.pragmas import connection_report

EXPECTED = {
    "journal_mode": "wal",
    "foreign_keys": 1,
    "synchronous": 1,  # NORMAL
    "transaction_mode": "IMMEDIATE",
}


def assert_store_settings(report: dict[str, Any]) -> None:
    for key, value in EXPECTED.items():
        assert report[key] == value, key
    assert report["busy_timeout"] >= 5000
    assert tuple(int(p) for p in report["sqlite_version"].split(".")) >= (3, 45, 0)


def test_bundled_sqlite_has_every_capability() -> None:
    assert capabilities.missing_capabilities(Database) == []


def test_missing_capability_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    impossible = capabilities.Capability(
        "FTS5 tokenizer 'wirecat_does_not_exist'",
        ("CREATE VIRTUAL TABLE temp.nope USING fts5(x, tokenize='wirecat_does_not_exist')",),
    )
    monkeypatch.setattr(capabilities, "REQUIRED", [*capabilities.REQUIRED, impossible])
    capabilities.reset_for_tests()
    wrapper = DatabaseWrapper(connection.settings_dict, alias="capability-probe")
    try:
        with pytest.raises(ImproperlyConfigured) as excinfo:
            wrapper.connect()
        message = str(excinfo.value)
        assert "wirecat_does_not_exist" in message
        assert "pip install" in message
    finally:
        wrapper.close()
        capabilities.reset_for_tests()


def test_a_too_old_sqlite_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    future = capabilities.Capability("SQLite 99.0 or newer", (), min_version=(99, 0, 0))
    assert capabilities.missing_capabilities(Database, [future]) == ["SQLite 99.0 or newer"]


@pytest.mark.django_db
def test_pragmas_on_the_web_connection() -> None:
    assert_store_settings(connection_report())
    assert connection_report()["driver"] == Database.__name__


@pytest.mark.django_db(transaction=True)
def test_pragmas_on_every_new_connection() -> None:
    reports: list[dict[str, Any]] = []

    def in_thread() -> None:
        try:
            reports.append(connection_report())
        finally:
            connections.close_all()

    worker = threading.Thread(target=in_thread)
    worker.start()
    worker.join()
    assert len(reports) == 1
    assert_store_settings(reports[0])


@pytest.mark.django_db(transaction=True)
def test_transactions_take_the_write_lock_at_begin() -> None:
    """With DEFERRED, a read-then-write transaction fails under contention; IMMEDIATE takes
    the write lock at BEGIN, so a second writer sees the lock before doing anything."""
    name = connection.settings_dict["NAME"]
    other = Database.connect(name, timeout=0, isolation_level=None)
    try:
        with transaction.atomic():
            connection.cursor().execute("SELECT 1")  # only a read so far
            with pytest.raises(Database.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
    finally:
        other.close()
