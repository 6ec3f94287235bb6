"""Each index of the tables an import writes per message costs every import an entry per
row: it stays only with a test showing a query's plan use it (test_plans.py). A new
index fails here until its query's test is written; an index dropped leaves a proof
naming nothing, which fails too."""

from __future__ import annotations

import pytest
from django.db import connection

from archive.store.services.maintenance import store_optimize
from tests.store_indexes import test_plans  # noqa: F401 - its @proves fill PROVEN
from tests.store_indexes.plans import PROVEN, index_key, indexes, store

pytestmark = pytest.mark.django_db


def test_every_index_of_the_per_message_tables_has_a_plan_test() -> None:
    keys = {index_key(table, name) for table, name in indexes()}
    unproven = sorted(keys - set(PROVEN))
    assert not unproven, f"no EXPLAIN QUERY PLAN test uses {unproven}: prove or drop them"
    stale = sorted(set(PROVEN) - keys)
    assert not stale, f"proofs of indexes the store no longer has: {stale}"


def test_the_dropped_indexes_stay_dropped() -> None:
    """Migration 0034: the attachments' message_id and sha256 indexes, which no plan
    used (the unique (message_id, external_id) serves every message_id lookup)."""
    names = {name for _, name in indexes()}
    assert "archive_attachment_message_id_839391cb" not in names
    assert "archive_attachment_sha256_bae3e1f0" not in names


def test_the_nightly_optimize_gives_the_message_table_statistics() -> None:
    """Why the plans are proven in two states: a store has no statistics until the
    nightly store_optimize, whose PRAGMA optimize then analyzes the message table."""
    store()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'")
        assert cursor.fetchone()[0] == 0
        store_optimize()
        cursor.execute("SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'archive_message'")
        assert cursor.fetchone()[0] == len([t for t, _ in indexes() if t == "archive_message"])
