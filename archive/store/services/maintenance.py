"""FTS upkeep: merges deferred during bulk writes, the backlog merged after, the nightly
optimise."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction

from archive.store.sink import FTS_TABLES
from archive.store.sink.repack import raw_json_repack

# FTS5's merge settings as the store runs with them (FTS5's own defaults): after each
# write, merge a level once it holds 4 segments, and at once when it holds 16.
FTS_AUTOMERGE = 4
FTS_CRISISMERGE = 16
# While a bulk import writes: no merging after each batch, and a level is merged only
# once it holds 60 segments. Each posting is then rewritten about twice instead of once
# per level (a million messages: the trigram index 19.5 s instead of 25.8 s).
BULK_CRISISMERGE = 60
# Merge work per transaction when the backlog is worked off (FTS5 pages written).
MERGE_PAGES = 4_000


def _fts_merging(automerge: int, crisismerge: int) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        for table in FTS_TABLES:
            cursor.execute(
                f"INSERT INTO {table}({table}, rank) VALUES ('automerge', %s)", [automerge]
            )
            cursor.execute(
                f"INSERT INTO {table}({table}, rank) VALUES ('crisismerge', %s)", [crisismerge]
            )


def fts_merge_backlog(*, pages: int = MERGE_PAGES) -> int:
    """Merge what FTS5's automerge would have merged, `pages` at a time, each step its own
    short transaction (other writers wait for one step, not the whole merge). Returns
    the number of steps that merged something."""
    steps = 0
    with connection.cursor() as cursor:
        for table in FTS_TABLES:
            while True:
                with transaction.atomic():
                    before = connection.connection.total_changes
                    cursor.execute(
                        f"INSERT INTO {table}({table}, rank) VALUES ('merge', %s)", [pages]
                    )
                    merged = connection.connection.total_changes - before >= 2  # FTS5's own test
                if not merged:
                    break
                steps += 1
    return steps


@contextmanager
def fts_bulk_writes() -> Iterator[None]:
    """Within: the FTS indexes take batches without merging after each one. Afterwards
    (whatever happened) the usual merging is back and the backlog is merged. Should the
    process be killed within, the nightly optimise puts the settings back."""
    _fts_merging(0, BULK_CRISISMERGE)
    try:
        yield
    finally:
        _fts_merging(FTS_AUTOMERGE, FTS_CRISISMERGE)
        fts_merge_backlog()


def store_optimize() -> list[str]:
    """Merge FTS segments and let SQLite refresh its statistics; pack a bounded share of
    the raw JSON still stored as text. Returns what it did."""
    done = [f"raw JSON packed: {raw_json_repack()}"]
    _fts_merging(FTS_AUTOMERGE, FTS_CRISISMERGE)  # in case an import was killed mid-way
    with connection.cursor() as cursor:
        for table in (*FTS_TABLES, "message_stems"):
            cursor.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            done.append(f"{table}: optimize")
        cursor.execute("PRAGMA optimize")
        done.append("PRAGMA optimize")
    return done
