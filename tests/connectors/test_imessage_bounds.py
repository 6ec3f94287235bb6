"""Apple Messages databases at their bounds: the export is never written to, messages still
in the WAL are read from a private copy, damaged databases fail naming where, and the
decoding of dates and attributedBody holds on any input."""

from __future__ import annotations

import gc
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import typedstream
from hypothesis import given, settings
from hypothesis import strategies as st
from typedstream.types.foundation import NSString

from archive.connectors.base import ReadOptions
from archive.connectors.imessage.attributed_body import attributed_text
from archive.connectors.imessage.export import READER
from archive.connectors.imessage.translation import apple_time
from archive.store.models import Message
from tests.connectors.imessage_support import (
    DM_GUID,
    PHONE,
    RunImport,
    at,
    snapshot,
)
from tests.fixtures.imessage.chatdb import (
    OLD_SCHEMA,
    ChatDb,
    apple_ns,
)
from tests.fixtures.imessage.typedstream_writer import attributed_body

# -- the export is only ever read ---------------------------------------------------------


def test_the_database_folder_is_left_untouched(run_import: RunImport, modern: Path) -> None:
    database = modern / "chat.db"
    assert database.read_bytes()[18:20] == b"\x02\x02"  # really a WAL-mode database
    before = snapshot(modern)
    job = run_import(modern)
    assert job.status == "done", job.errors
    assert snapshot(modern) == before
    assert not list(modern.glob("chat.db-*"))

    # The control: an ordinary read-only open does write beside the database.
    control = modern.parent / "control"
    control.mkdir()
    shutil.copyfile(database, control / "chat.db")
    connection = sqlite3.connect(f"file:{control / 'chat.db'}?mode=ro", uri=True)
    connection.execute("SELECT COUNT(*) FROM message").fetchone()
    connection.close()
    assert {p.name for p in control.iterdir()} > {"chat.db"}


def test_messages_still_in_the_wal_are_read(
    run_import: RunImport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live database keeps its latest messages in chat.db-wal; they are read from a copy."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    live = tmp_path / "live"
    db = ChatDb(live / "chat.db")
    chat = db.chat(DM_GUID, identifier=PHONE)
    db.message("W-OLD", chat=chat, at=at(0), text="checkpointed")
    db.close()
    writer = sqlite3.connect(live / "chat.db")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute(
        "INSERT INTO message (guid, text, date) VALUES ('W-NEW', 'only in the WAL', ?)",
        (apple_ns(at(5)),),
    )
    writer.execute("INSERT INTO chat_message_join (chat_id, message_id) VALUES (1, 2)")
    writer.commit()
    export = tmp_path / "export"
    export.mkdir()
    for name in ("chat.db", "chat.db-wal"):
        shutil.copyfile(live / name, export / name)
    writer.close()
    before = snapshot(export)

    job = run_import(export / "chat.db")
    assert job.status == "done", job.errors
    assert Message.objects.get(external_id="W-NEW").text == "only in the WAL"
    assert Message.objects.count() == 2
    assert snapshot(export) == before
    assert not list((tmp_path / "tmp").iterdir())  # the private copy is gone

    # A stream dropped before it is read removes its copy too.
    stream = READER.open(export, ReadOptions())
    assert len(list((tmp_path / "tmp").iterdir())) == 1
    del stream
    gc.collect()
    assert not list((tmp_path / "tmp").iterdir())


# -- bad input -----------------------------------------------------------------------------


def test_not_a_database_fails_naming_the_file(run_import: RunImport, tmp_path: Path) -> None:
    bogus = tmp_path / "chat.db"
    bogus.write_bytes(b"SQLite format 3\x00" + b"\xab" * 8192)
    job = run_import(bogus, format_name="imessage")
    assert job.status == "failed"
    assert "chat.db" in job.errors[0]
    assert "not an SQLite database" in job.errors[0] or "malformed" in job.errors[0]


def test_missing_tables_fail_naming_the_file(run_import: RunImport, tmp_path: Path) -> None:
    database = tmp_path / "notes.db"
    connection = sqlite3.connect(database)
    connection.execute("CREATE TABLE message (id INTEGER)")
    connection.close()
    job = run_import(database, format_name="imessage")
    assert job.status == "failed"
    assert job.errors == [
        "notes.db, schema: no handle or chat table: not an Apple Messages database"
    ]


def table_leaf_pages(database: Path, table: str) -> list[int]:
    """The leaf pages of `table`, in key order, read from its b-tree (root interior page)."""
    connection = sqlite3.connect(database)
    ((root,),) = connection.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,))
    connection.close()
    data = database.read_bytes()
    page_size = int.from_bytes(data[16:18], "big")
    page = data[(root - 1) * page_size : root * page_size]
    assert page[0] == 0x05, "expected an interior table page as the root"
    cells = int.from_bytes(page[3:5], "big")
    pointers = [int.from_bytes(page[12 + 2 * i : 14 + 2 * i], "big") for i in range(cells)]
    children = [int.from_bytes(page[p : p + 4], "big") for p in pointers]
    return [*children, int.from_bytes(page[8:12], "big")]


def test_corrupt_pages_fail_naming_the_file_and_position(
    run_import: RunImport, tmp_path: Path
) -> None:
    database = tmp_path / "chat.db"
    db = ChatDb(database, OLD_SCHEMA)
    chat = db.chat(DM_GUID, identifier=PHONE)
    for number in range(1, 301):
        db.message(f"C-{number}", chat=None, at=at(number), seconds=True, text="x" * 200)
    for number in range(1, 301):
        db.insert("chat_message_join", chat_id=chat, message_id=number)
    db.close()
    leaves = table_leaf_pages(database, "message")
    assert len(leaves) > 5
    # Break the message table's second-last leaf page: its page-type byte becomes invalid.
    # (Garbled cells are not reliably caught: SQLite may read them as rows of garbage.)
    data = bytearray(database.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    start = (leaves[-2] - 1) * page_size
    assert data[start] == 0x0D  # a table b-tree leaf page
    data[start] = 0x00
    database.write_bytes(bytes(data))
    assert READER.detect(database)  # the schema is still readable

    job = run_import(database, batch_size=50)
    assert job.status == "failed"
    assert len(job.errors) == 1
    error = job.errors[0]
    assert error.startswith("chat.db, message after ROWID ")
    assert "malformed" in error
    assert 200 <= job.added < 300  # the batches before the damage are kept


# -- the pieces ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, None),
        (None, None),
        (704_628_000, datetime(2023, 5, 1, 10, 0, tzinfo=UTC)),
        (704_628_000_123_456_789, datetime(2023, 5, 1, 10, 0, 0, 123_456, tzinfo=UTC)),
        (704_628_000.5, datetime(2023, 5, 1, 10, 0, 0, 500_000, tzinfo=UTC)),
        (10**30, None),
        ("2023", None),
    ],
)
def test_apple_time(value: Any, expected: datetime | None) -> None:
    assert apple_time(value) == expected


def decoded_by_typedstream(blob: bytes) -> str:
    root = typedstream.unarchive_from_data(blob)
    first = root.contents[0].value
    assert isinstance(first, NSString)
    return first.value


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300), mutable=st.booleans())
def test_attributed_text_agrees_with_the_typedstream_parser(text: str, mutable: bool) -> None:
    blob = attributed_body(text, mutable=mutable)
    assert decoded_by_typedstream(blob) == text
    assert attributed_text(blob) == text


def test_attributed_text_round_trips_and_survives_garbage() -> None:
    for text in ("", "a", "Zoë 👩‍👩‍👧 ∑", "x" * 127, "x" * 128, "x" * 200, "x" * 70_000):
        for mutable in (False, True):
            assert attributed_text(attributed_body(text, mutable=mutable)) == text
    # Another system version: not the shape read directly, so the general parser reads it.
    other = attributed_body("via typedstream").replace(b"\x81\xe8\x03", b"\x81\xe9\x03", 1)
    assert attributed_text(other) == "via typedstream"
    blob = attributed_body("hello world")
    # Cut inside the attribute runs, after the string: the string is still read.
    assert attributed_text(blob[:-5]) == "hello world"
    # Cut inside the string, or a string whose bytes are not UTF-8: unreadable.
    cut = blob.index(b"hello world") + 5
    assert attributed_text(blob[:cut]) is None
    assert attributed_text(blob.replace(b"hello world", b"hello\xffworld")) is None
    assert attributed_text(other[: other.index(b"via") + 2]) is None
    assert attributed_text(b"") is None
    assert attributed_text(b"\x04\x0bstreamtyped\x81\xe8\x03\x84\x01@\xff\xff") is None
    assert attributed_text(bytes(range(256))) is None
