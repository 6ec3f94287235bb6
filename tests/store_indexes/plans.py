"""What SQLite does with the statements the store's code really issues: each statement a
call makes (caught as it runs, never a copy of its text) with its `EXPLAIN QUERY PLAN`,
and a small store recorded through the sink to run them on.

A user's store is planned for in two states, and the tests take both (`STATES`): fresh
from an import, with no statistics (SQLite plans from the schema alone, the same for
these few rows as for a million), and after the nightly store_optimize, whose PRAGMA
optimize analyzes every table with an index never analyzed. For that state the test store
is given the statistics that job gave the 1.1M-message benchmark store (`MILLION`), so the
planner sees a million messages' shape, as it does in a user's store from its first night.

`proves` ties a test to the indexes its plans show in use; the test of every index
(test_every_index.py) holds that each index of the tables an import writes per message
has one."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db import connection

from archive.store.domain import AttachmentRecord, MessageRecord
from archive.store.services.maintenance import store_optimize
from archive.store.sink import batch_record
from tests.factories import batch, message

# The tables an import writes a row to for each message (or each attachment).
TABLES = ("archive_message", "archive_attachment", "archive_change", "archive_stem_queue")

# Index key (its name; for an index SQLite made for a UNIQUE, "table(columns)") -> the
# tests whose plans use it.
PROVEN: dict[str, list[str]] = {}

Test = TypeVar("Test", bound=Callable[..., Any])


def proves(*keys: str) -> Callable[[Test], Test]:
    """Mark a test as the proof that its plans use these indexes."""

    def mark(test: Test) -> Test:
        for key in keys:
            PROVEN.setdefault(key, []).append(test.__name__)
        return test

    return mark


@dataclass(frozen=True)
class Statement:
    sql: str
    params: Any
    plan: tuple[str, ...]

    def uses(self, index: str) -> bool:
        pattern = rf"USING (COVERING )?INDEX {re.escape(index)}( |$)"
        return any(re.search(pattern, step) for step in self.plan)

    def step(self, index: str) -> str:
        """The plan's step that reads `index` (e.g. `... (chat_id=? AND sent_at>?)`)."""
        found = [s for s in self.plan if re.search(rf"INDEX {re.escape(index)}( |$)", s)]
        assert found, f"{index} is not in the plan {self.plan} of {self.sql[:200]}"
        return found[0]

    @property
    def sorts(self) -> bool:
        """Whether SQLite sorts the rows itself instead of reading them in index order."""
        return any("TEMP B-TREE FOR ORDER BY" in step for step in self.plan)


@dataclass
class Caught:
    statements: list[Statement] = field(default_factory=list)

    def using(self, index: str) -> list[Statement]:
        return [s for s in self.statements if s.uses(index)]

    def containing(self, *parts: str) -> list[Statement]:
        return [s for s in self.statements if all(part in s.sql for part in parts)]


_READS = ("SELECT", "WITH", "UPDATE", "DELETE")


@contextmanager
def statements() -> Iterator[Caught]:
    """The reads, updates and deletes of TABLES issued inside the block, each explained
    when the block ends (on the same connection, with the same parameters)."""
    raw: list[tuple[str, Any]] = []

    def catch(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if not many and sql.lstrip().upper().startswith(_READS) and any(t in sql for t in TABLES):
            raw.append((sql, params))
        return execute(sql, params, many, context)

    caught = Caught()
    with connection.execute_wrapper(catch):
        yield caught
    with connection.cursor() as cursor:
        for sql, params in raw:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
            plan = tuple(str(row[3]) for row in cursor.fetchall())
            caught.statements.append(Statement(sql, params, plan))


def index_key(table: str, name: str) -> str:
    """An index's name, or for one SQLite made for a UNIQUE (its name a counter that a
    rebuilt table may renumber) its table and columns."""
    if not name.startswith("sqlite_autoindex_"):
        return name
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM pragma_index_info(%s) ORDER BY seqno", [name])
        columns = ", ".join(str(row[0]) for row in cursor.fetchall())
    return f"{table}({columns})"


def index_named(key: str) -> str:
    """The index SQLite knows by this key (see `index_key`)."""
    for table, name in indexes():
        if index_key(table, name) == key:
            return name
    raise AssertionError(f"no index {key}")


def indexes() -> list[tuple[str, str]]:
    """(table, index) of every index of TABLES, as sqlite_master lists them."""
    marks = ", ".join(["%s"] * len(TABLES))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tbl_name, name FROM sqlite_master WHERE type = 'index'"
            f" AND tbl_name IN ({marks}) ORDER BY tbl_name, name",
            list(TABLES),
        )
        return [(str(row[0]), str(row[1])) for row in cursor.fetchall()]


# -- the store ------------------------------------------------------------------------------

CHATS = {"chat-1": 60, "chat-2": 30, "chat-3": 20}
SENDERS = ("alice", "bob", "me")


def said(chat: str, n: int, text: str = "the build is green again") -> MessageRecord:
    """Message `n` of `chat`: every third one the owner's, every seventh a reply to the
    one before, every fifth with a file; about an hour and a half apart."""
    sender = SENDERS[n % 3]
    files = (AttachmentRecord(external_id=f"{chat}-f{n}", file_name=f"scan {n}.pdf"),)
    return message(
        f"{chat}-{n}",
        f"message {n} of {chat}: {text}",
        chat=chat,
        sender=sender,
        minutes=n * 97 + int(chat[-1]) * 7,
        direction="out" if sender == "me" else "in",
        reply_to_external_id=f"{chat}-{n - 1}" if n and n % 7 == 0 else "",
        attachments=files if n % 5 == 0 else (),
    )


def store() -> None:
    """Three chats of 60, 30 and 20 messages from Alice, Bob and the owner over a few
    days, replies and files among them, and one reply whose parent ("chat-1-late") has
    not been recorded yet."""
    records = [said(chat, n) for chat, count in CHATS.items() for n in range(count)]
    records.append(
        message(
            "chat-1-orphan",
            "answering a message that has not come",
            reply_to_external_id="chat-1-late",
            minutes=-5,
        )
    )
    batch_record(batch=batch(*records))


def late_parent() -> MessageRecord:
    """The parent the waiting reply names, arriving in a later export."""
    return message("chat-1-late", "the earlier message", minutes=-10)


# -- the store's two states -----------------------------------------------------------------

STATES = ("fresh", "optimized")

# sqlite_stat1 of a store of 1.1M messages (bench/stats_bench.py's: the import benchmark's
# IRC lines and one chat of 100,000; a file added to one message in five) after
# store_optimize, for the tables the tested statements read.
MILLION = (
    ("archive_account", "archive_account_owner_identity_id_d4e629bf", "1 1"),
    ("archive_account", "sqlite_autoindex_archive_account_1", "1 1 1"),
    ("archive_attachment", "sqlite_autoindex_archive_attachment_1", "219200 1"),
    ("archive_attachment", "sqlite_autoindex_archive_attachment_2", "219200 1 1"),
    ("archive_chat", "archive_chat_account_id_fbfd5c80", "691 676"),
    ("archive_chat", "archive_chat_last_message_at_1d3b7b7a", "691 1"),
    ("archive_chat", "sqlite_autoindex_archive_chat_1", "691 676 1"),
    ("archive_identity", "archive_identity_person_id_141c9dc4", "15754 339"),
    ("archive_identity", "sqlite_autoindex_archive_identity_1", "15754 676 1"),
    ("archive_message", "archive_message_reply_to_id_028c86b0", "1096000 3"),
    ("archive_message", "message_chat_time_idx", "1096000 676 1 1"),
    ("archive_message", "message_reply_waiting_idx", "0 0 0"),
    ("archive_message", "message_sender_time_idx", "1096000 271 1"),
    ("archive_message", "message_sent_at_idx", "1096000 1"),
    ("archive_message", "sqlite_autoindex_archive_message_1", "1096000 1"),
    ("archive_message", "sqlite_autoindex_archive_message_2", "1096000 676 676 1"),
)


def optimized() -> None:
    """The store as the nightly job leaves it (the real store_optimize), with MILLION's
    statistics in place of the small store's for those tables (their stat4 samples, of
    this store's few rows, dropped), loaded by the connection."""
    store_optimize()
    tables = sorted({table for table, _, _ in MILLION})
    marks = ", ".join(["%s"] * len(tables))
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM sqlite_stat1 WHERE tbl IN ({marks})", tables)
        cursor.execute(f"DELETE FROM sqlite_stat4 WHERE tbl IN ({marks})", tables)
        cursor.executemany(
            "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (%s, %s, %s)", list(MILLION)
        )
        cursor.execute("ANALYZE sqlite_schema")


def store_in(state: str) -> None:
    """The test store in one of STATES."""
    store()
    if state == "optimized":
        optimized()
