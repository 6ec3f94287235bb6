"""Mail messages missing a date, a sender or an id are kept (issue 15), through the real
import: the Thunderbird mbox without dates, the Outlook invitation without a year, the
order of evidence, and a re-import that adds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from archive.connectors.mail.export import FROM_CALENDAR, FROM_ENVELOPE, FROM_RECEIVED
from archive.store.models import Chat, Message
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

MAIL = FIXTURES / "mail"

CASES = [
    # A missing or unusable date: the best evidence there is, in order.
    ("thunderbird_no_dates.mbox", Kept(
        "Shall we? No Date header, and the separator above has no date either.",
        sent_at=FILE_MTIME, estimated_from=FILE_TIME, sender="ann@example.org",
        external_id="tb-1@example.org",
    )),
    ("thunderbird_no_dates.mbox", Kept(
        "Yes! Kept, though nothing in this file says when.",
        sent_at=FILE_MTIME, estimated_from=FILE_TIME, sender="owner@example.org",
        external_id="tb-2@example.org",
    )),
    ("undated_evidence.mbox", Kept(
        "No Date, no Received, a bare separator: the time of the message after it.",
        sent_at=utc("2024-03-02T08:00"), estimated_from=NEXT,
    )),
    ("undated_evidence.mbox", Kept(
        "No Date header: the date of its From line.",
        sent_at=utc("2024-03-02T08:00"), estimated_from=FROM_ENVELOPE,
    )),
    ("undated_evidence.mbox", Kept(
        "An unreadable Date: the newest (topmost) Received header.",
        sent_at=utc("2024-03-03T08:30"), estimated_from=FROM_RECEIVED,
    )),
    ("undated_evidence.mbox", Kept(
        "Nothing again: the time of the message before it.",
        sent_at=utc("2024-03-03T08:30"), estimated_from=PREVIOUS,
    )),
    # "Date: Thu Jan 01 00:00:10 +0000" has no year: no usable date; the invitation's
    # DTSTAMP says when it was made.
    ("outlook_invite_no_year.eml", Kept(
        "When: Friday, March 8, 2024 2:00 PM-3:00 PM (UTC+00:00) Dublin, Edinburgh, Lisbon,"
        " London.\nWhere: Room 4\n\nQuarterly review of the roadmap.",
        sent_at=utc("2024-03-04T09:15"), estimated_from=FROM_CALENDAR,
        sender="carol@example.com",
        external_id="DM6PR01MB4444A1B2C3D4E5F6A7B8C9D0E1F2@DM6PR01MB4444.prod.exchangelabs.com",
    )),
    # No sender: kept with none. No id: a hash of what the message says.
    ("odd_fields.mbox", Kept(
        "No From and no Sender header: kept, with no sender.",
        sent_at=utc("2024-03-04T10:00"), sender=None, external_id="bounce-1@mail.example.org",
    )),
    ("odd_fields.mbox", Kept(
        "No Message-ID: kept, its id a hash of its Date, From, Subject and body.",
        sent_at=utc("2024-03-04T11:00"), sender="ann@example.org",
    )),
]  # fmt: skip


@pytest.mark.parametrize(("name", "case"), CASES, ids=[c[1].text[:40] for c in CASES])
def test_a_message_missing_a_field_is_kept(
    run_import: Run, tmp_path: Path, name: str, case: Kept
) -> None:
    job = run_import(with_mtime(MAIL / name, tmp_path / name))
    assert job.status == "done", job.errors
    assert job.skipped == {}
    assert_kept(case)


def test_no_usable_date_is_kept_estimated_and_a_bad_date_falls_back(run_import: Run) -> None:
    job = run_import(MAIL / "threads.mbox")
    assert (job.status, job.added, job.estimated, job.skipped) == ("done", 13, 2, {})
    # "Date: the day after tomorrow" → the date of its "From " line, marked estimated.
    bad = Kept(
        "Its Date is not a date: the From line's date is used.",
        sent_at=utc("2024-02-04T08:30"),
        estimated_from=FROM_ENVELOPE,
        external_id="bad-date@threads.test",
    )
    assert_kept(bad)
    # No date anywhere (a bare Takeout separator): the message before it in the file.
    undated = Kept(
        "No Date header, no date in the From line, no Received header.",
        sent_at=bad.sent_at,
        estimated_from=PREVIOUS,
        external_id="no-date@threads.test",
    )
    assert_kept(undated)


def test_the_thunderbird_mbox_without_dates_keeps_both(run_import: Run, tmp_path: Path) -> None:
    job = run_import(with_mtime(MAIL / "thunderbird_no_dates.mbox", tmp_path / "Inbox"))
    assert (job.status, job.added, job.estimated, job.skipped) == ("done", 2, 2, {})


@pytest.mark.parametrize(
    "name", ["thunderbird_no_dates.mbox", "undated_evidence.mbox", "odd_fields.mbox"]
)
def test_importing_again_adds_nothing(run_import: Run, tmp_path: Path, name: str) -> None:
    assert_idempotent(run_import, with_mtime(MAIL / name, tmp_path / name))


def test_an_estimate_gives_way_to_a_real_date_later(run_import: Run, tmp_path: Path) -> None:
    """The same message found later with its Date (another copy of the mailbox): the real
    date replaces the estimate, and the thread's latest time follows."""
    undated = with_mtime(MAIL / "thunderbird_no_dates.mbox", tmp_path / "a" / "Inbox")
    assert run_import(undated).estimated == 2
    dated = tmp_path / "b" / "Inbox"
    dated.parent.mkdir()
    dated.write_bytes(
        undated.read_bytes().replace(
            b"Message-ID: <tb-2@example.org>\n",
            b"Message-ID: <tb-2@example.org>\nDate: Tue, 02 Jul 2024 13:00:00 +0000\n",
        )
    )
    again = run_import(dated)
    assert (again.added, again.updated, again.estimated) == (0, 1, 1)
    reply = Message.objects.get(external_id="tb-2@example.org")
    assert not reply.date_estimated and reply.sent_at == utc("2024-07-02T13:00")
    assert "date_estimated_from" not in reply.provider_metadata
    assert Chat.objects.get(pk=reply.chat_id).last_message_at == utc("2024-07-02T13:00")
