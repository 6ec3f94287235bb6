"""Apple Messages databases with fewer tables, and messages missing a date, a sender, a chat
or an id, are kept (issue 15), through the real import; importing again adds nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from archive.connectors.imessage.export import READER
from archive.store.models import Chat, Message
from tests.connectors.conftest import FIXTURES
from tests.connectors.kept_support import (
    FILE_MTIME,
    FILE_TIME,
    PREVIOUS,
    Kept,
    Run,
    assert_idempotent,
    assert_kept,
    utc,
    with_mtime,
)

pytestmark = pytest.mark.django_db

TRIMMED = FIXTURES / "imessage" / "ios_sms_handle_message_only.sql"
PHONE, DANA = "+447700900456", "dana@example.com"


def build(folder: Path, script: str) -> Path:
    """The sms.db `script` makes, with FILE_MTIME as its time."""
    folder.mkdir(parents=True, exist_ok=True)
    database = folder / "sms.db"
    connection = sqlite3.connect(database)
    connection.executescript(script)
    connection.close()
    return with_mtime(database, database)


CASES = [
    Kept("Are you coming tonight?", sent_at=utc("2024-03-01T18:00"), sender=PHONE),
    Kept("On my way", sent_at=utc("2024-03-01T18:05"), sender="me"),
    # `date` 0: the message before it (by ROWID).
    Kept("The date of this one was lost", sent_at=utc("2024-03-01T18:05"),
         estimated_from=PREVIOUS, sender=DANA),
    # `handle_id` 0 and not mine: no sender, and no conversation to put it in.
    Kept("Your code is 482913", sent_at=utc("2024-03-01T18:10"), sender=None),
    Kept("See you there", sent_at=utc("2024-03-01T18:12"), sender=DANA),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[case.text for case in CASES])
def test_a_trimmed_ios_backup_is_imported(run_import: Run, tmp_path: Path, case: Kept) -> None:
    """Only `handle` and `message`: one chat per handle, nothing refused."""
    database = build(tmp_path / "backup", TRIMMED.read_text())
    assert READER.detect(database) and READER.detect(database.parent)
    job = run_import(database)
    assert (job.status, job.format, job.added, job.estimated) == ("done", "imessage", 5, 1)
    assert job.skipped == {}
    assert_kept(case)
    chats = {chat.external_id: chat for chat in Chat.objects.all()}
    assert set(chats) == {f"handle:{PHONE}", f"handle:{DANA}", "unlinked"}
    assert chats[f"handle:{PHONE}"].message_count == 2  # mine went to the handle I wrote to
    assert Message.objects.get(text="Your code is 482913").chat.external_id == "unlinked"


def test_importing_a_trimmed_backup_again_adds_nothing(run_import: Run, tmp_path: Path) -> None:
    assert_idempotent(run_import, build(tmp_path / "backup", TRIMMED.read_text()))


def loose(script: str) -> str:
    """The trimmed schema without the guid constraint, as a damaged copy may have it."""
    return script.replace("guid TEXT UNIQUE NOT NULL", "guid TEXT")


def test_messages_without_a_guid_get_a_content_hash(run_import: Run, tmp_path: Path) -> None:
    """Two identical messages without a guid are both kept; importing again adds nothing."""
    rows = (
        "INSERT INTO message (ROWID, guid, text, handle_id, date) VALUES"
        " (6, NULL, 'twice', 2, 762552000000000000), (7, NULL, 'twice', 2, 762552000000000000);"
    )
    database = build(tmp_path / "backup", loose(TRIMMED.read_text()) + rows)
    assert_idempotent(run_import, database)
    case = Kept("twice", sent_at=utc("2025-03-01T20:00"), sender=DANA, hashed_id=True, count=2)
    assert_kept(case)


def test_a_database_without_any_date_takes_its_files_time(run_import: Run, tmp_path: Path) -> None:
    script = TRIMMED.read_text() + "UPDATE message SET date = NULL;"
    job = run_import(build(tmp_path / "backup", script))
    assert (job.status, job.added, job.estimated) == ("done", 5, 5)
    assert set(Message.objects.values_list("sent_at", flat=True)) == {FILE_MTIME}
    assert_kept(Kept("On my way", estimated_from=FILE_TIME, sender="me"))
