"""WhatsApp chat lines with a date that cannot be, without an author, or repeated word for
word are kept (issue 15), through the real import, and importing again adds nothing. (The
export holds no ids at all: every id is made from the line, never from its position.)"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from archive.store.models import Message
from tests.connectors.conftest import FIXTURES
from tests.connectors.kept_support import (
    FILE_MTIME,
    FILE_TIME,
    NEXT,
    PREVIOUS,
    Kept,
    Run,
    assert_idempotent,
    assert_kept,
    utc,
    with_mtime,
)

pytestmark = pytest.mark.django_db

FIXTURE = FIXTURES / "whatsapp" / "WhatsApp Chat with Odd Fields.txt"
NOTICE = (
    "Messages and calls are end-to-end encrypted. No one outside of this chat, not even"
    " WhatsApp, can read or listen to them. Tap to learn more."
)

CASES = [
    # 30.02.24 cannot be: the time of the message after it (the first in the file).
    Kept("written on a day that does not exist", sent_at=utc("2024-03-01T10:00"),
         estimated_from=NEXT, sender="Ann"),
    # 31.04.24 cannot be: the time of the message before it.
    Kept("another day that does not exist", sent_at=utc("2024-03-01T10:01"),
         estimated_from=PREVIOUS, sender="Ben"),
    # No author (a system line): kept with no sender.
    Kept(NOTICE, sent_at=utc("2024-03-01T10:00"), sender=None),
    # The same words by the same author in the same minute: both kept, told apart by an
    # ordinal among identical lines.
    Kept("hello", sent_at=utc("2024-03-01T10:01"), sender="Ann", count=2),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[case.text[:40] for case in CASES])
def test_a_message_missing_a_field_is_kept(run_import: Run, tmp_path: Path, case: Kept) -> None:
    job = run_import(with_mtime(FIXTURE, tmp_path / FIXTURE.name))
    assert (job.status, job.added, job.estimated, job.skipped) == ("done", 5, 2, {})
    assert_kept(case)


def test_identical_lines_get_ids_from_what_they_say(run_import: Run, tmp_path: Path) -> None:
    run_import(with_mtime(FIXTURE, tmp_path / FIXTURE.name))
    ids = sorted(Message.objects.filter(text="hello").values_list("external_id", flat=True))
    stem = ids[0].rsplit("-", 1)[0]
    assert stem.startswith("20240301T100100-") and ids == [f"{stem}-0", f"{stem}-1"]
    impossible = Message.objects.get(text="written on a day that does not exist")
    assert impossible.external_id.startswith("30.2.24T090000-")


def test_a_chat_of_impossible_dates_alone_takes_the_zip_members_time(
    run_import: Run, tmp_path: Path
) -> None:
    archive = tmp_path / "WhatsApp Chat - Odd.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        info = zipfile.ZipInfo("_chat.txt", date_time=FILE_MTIME.timetuple()[:6])
        zipped.writestr(info, "[30.02.24, 09:00:00] Ann: only this\r\n")
    job = run_import(archive)
    assert (job.status, job.added, job.estimated) == ("done", 1, 1), job.errors
    assert_kept(Kept("only this", sent_at=FILE_MTIME, estimated_from=FILE_TIME, sender="Ann"))


def test_importing_again_adds_nothing(run_import: Run, tmp_path: Path) -> None:
    assert_idempotent(run_import, with_mtime(FIXTURE, tmp_path / FIXTURE.name))
