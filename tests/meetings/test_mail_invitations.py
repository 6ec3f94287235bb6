"""Invitations inside mail (issue 17, "In"): a text/calendar part (METHOD REQUEST, CANCEL,
REPLY) of an imported or synced mail creates or updates its meeting, and the mail is linked
to it. Real-format fixtures in tests/fixtures/mail/invitations/: an Outlook REQUEST with a
Windows zone and a VTIMEZONE from 1601, a Google series REQUEST (the calendar inline and as
invite.ics), a Google CANCEL of one occurrence, an Apple Mail REPLY accepting (quoted-
printable), and a booking mail whose calendar parts are broken."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from archive.connectors.mail.export import mail_item
from archive.store.domain import AccountRecord, Batch, IdentityRecord
from archive.store.effects import CALENDAR_STORED, Effect
from archive.store.models import Attachment, Message
from archive.store.sink import batch_record
from archive.store.staging import batch_staged
from meetings.models import Calendar, Event, Meeting, MeetingLink, Participant
from wirecat.celery import app

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mail"
INVITATIONS = FIXTURES / "invitations"
OWNER = "owner@example.org"
OUTLOOK_UID = (
    "040000008200E00074C5B7101A82E00800000000A0B1C2D3E4F5DA01000000000000000"
    "010000000ABCDEF0123456789ABCDEF0123456789"
)
GOOGLE_UID = "5v8k2q1m3n4o6p7r9s0t1u2v3w@google.com"

Capture = Callable[..., AbstractContextManager[list[Callable[[], object]]]]


@pytest.fixture
def celery_inline() -> Iterator[None]:
    """Celery runs a job where it is enqueued (as tests/archive/conftest.py does)."""
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


@pytest.fixture
def run(celery_inline: None, django_capture_on_commit_callbacks: Capture) -> Callable[..., str]:
    """`wirecat import` of the given paths, the jobs its commits ask for run at once."""

    def importing(*paths: Path) -> str:
        out = StringIO()
        with django_capture_on_commit_callbacks(execute=True):
            call_command(
                "import", *(str(p) for p in paths), "--account", OWNER, stdout=out, stderr=out
            )
        return out.getvalue()

    return importing


def folder(tmp_path: Path, *names: str) -> Path:
    target = tmp_path / "mail"
    target.mkdir(exist_ok=True)
    for name in names:
        shutil.copy(INVITATIONS / name, target / name)
    return target


def by_id(message_id: str) -> Message:
    """The stored mail of that Message-ID."""
    found = [m for m in Message.objects.all() if message_id in m.external_id]
    assert len(found) == 1, [m.external_id for m in Message.objects.all()]
    return found[0]


def linked(message: Message) -> set[str]:
    return set(
        MeetingLink.objects.filter(kind="message", target_id=message.pk).values_list(
            "meeting__public_id", flat=True
        )
    )


def state() -> dict[str, Any]:
    """Everything the invitations may write, to compare before and after a re-import."""
    return {
        "calendars": list(Calendar.objects.values_list("kind", "key", "name").order_by("pk")),
        "events": list(Event.objects.values_list("uid", "sequence", "status").order_by("pk")),
        "meetings": list(
            Meeting.objects.values_list("public_id", "start", "status", "updated_at").order_by("pk")
        ),
        "participants": list(
            Participant.objects.values_list("meeting_id", "email", "response").order_by("pk")
        ),
        "links": list(
            MeetingLink.objects.values_list("meeting_id", "kind", "target_id", "actor").order_by(
                "pk"
            )
        ),
        "messages": Message.objects.count(),
    }


ALL = (
    "01_outlook_request.eml",
    "02_google_series_request.eml",
    "03_google_cancel_occurrence.eml",
    "04_apple_reply.eml",
    "05_broken_invitation.eml",
)


def test_an_outlook_request_creates_its_meeting_in_its_zone_and_links_the_mail(
    run: Callable[..., str], tmp_path: Path
) -> None:
    run(folder(tmp_path, "01_outlook_request.eml"))
    calendar = Calendar.objects.get()
    assert (calendar.kind, calendar.key) == ("mail", f"mail:{OWNER}")
    meeting = Meeting.objects.get()
    # W. Europe Standard Time in March is UTC+1: 10:00 there is 09:00 UTC.
    assert (meeting.start, meeting.end) == (
        datetime(2026, 3, 10, 9, 0, tzinfo=UTC),
        datetime(2026, 3, 10, 10, 0, tzinfo=UTC),
    )
    assert meeting.event is not None
    assert (meeting.title, meeting.event.uid, meeting.status) == (
        "Budget planning",
        OUTLOOK_UID,
        "confirmed",
    )
    assert meeting.join_url.startswith("https://teams.microsoft.com/l/meetup-join/")
    responses = dict(meeting.participants.values_list("email", "response"))
    assert responses[OWNER] == "needs-action" and "dave@example.com" in responses
    mail = Message.objects.get()
    link = MeetingLink.objects.get()
    assert (link.meeting_id, link.kind, link.target_id, link.actor) == (
        meeting.pk,
        "message",
        mail.pk,
        "system",
    )


def test_a_folder_of_invitations_creates_cancels_answers_and_a_reimport_changes_nothing(
    run: Callable[..., str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    export = folder(tmp_path, *ALL)
    run(export)
    # Every mail is imported, the broken booking too (its two calendar parts kept as files).
    assert Message.objects.count() == 5
    booking = by_id("booking-7731-mail@example.com")
    assert booking.attachments.filter(mime_type="text/calendar").count() == 2

    # The Google series: six Mondays in Berlin time (CET: 09:00 is 08:00 UTC), the one of
    # January 19th cancelled by the CANCEL, the others kept.
    series = Meeting.objects.filter(event__uid=GOOGLE_UID).order_by("start")
    assert [m.start.day for m in series] == [5, 12, 19, 26, 2, 9]
    assert series[0].start == datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
    cancelled = {m.start.date().isoformat() for m in series if m.status == "cancelled"}
    assert cancelled == {"2026-01-19"}
    assert series[0].join_url == "https://meet.google.com/abc-defg-hij"
    # Its invitation is linked to its meetings (inline and invite.ics: one link each), the
    # cancellation to the one occurrence it cancels.
    invitation = by_id("calendar-0b7c1f52")
    assert linked(invitation) == {m.public_id for m in series}
    cancellation = by_id("calendar-8d2e6f10")
    assert linked(cancellation) == {series[2].public_id}

    # The Apple reply sets the owner's response on the Outlook meeting and is linked to it.
    budget = Meeting.objects.get(event__uid=OUTLOOK_UID)
    assert budget.participants.get(email=OWNER).response == "accepted"
    assert budget.participants.get(email="dave@example.com").response == "needs-action"
    assert linked(by_id("6F7E8D9C-0B1A")) == {budget.public_id}
    assert linked(by_id("DM6PR01MB4444B2C3D4E5F6A7B8C9")) == {budget.public_id}

    # The broken booking: nothing made of it, said in the log with the mail's id.
    assert not Event.objects.filter(uid="booking-7731@example.com").exists()
    assert linked(booking) == set()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert booking.public_id in logged
    assert "booking-7731@example.com" in logged  # the VEVENT without a start, by its UID

    before = state()
    run(export)
    assert state() == before


def test_an_invitation_read_twice_links_once_and_writes_nothing_new(
    run: Callable[..., str], tmp_path: Path
) -> None:
    """The Google mail holds its calendar twice (inline and invite.ics): two jobs, the same
    meetings, one link per meeting."""
    run(folder(tmp_path, "02_google_series_request.eml"))
    invitation = Message.objects.get()
    parts = invitation.attachments.values_list("mime_type", flat=True)
    assert sorted(parts) == ["application/ics", "text/calendar"]
    assert MeetingLink.objects.filter(target_id=invitation.pk).count() == 6


def test_a_cancel_read_before_its_request_cancels_nothing_and_breaks_nothing(
    run: Callable[..., str], tmp_path: Path
) -> None:
    run(folder(tmp_path, "03_google_cancel_occurrence.eml"))
    assert Message.objects.count() == 1
    assert not Meeting.objects.exists()
    assert not MeetingLink.objects.exists()


def test_the_outlook_invite_whose_date_has_no_year_now_makes_its_meeting(
    run: Callable[..., str],
) -> None:
    """Issue 15's fixture: kept with an estimated date; its invitation is read."""
    run(FIXTURES / "outlook_invite_no_year.eml")
    mail = Message.objects.get()
    meeting = Meeting.objects.get()
    # GMT Standard Time on March 8th 2024 is UTC+0.
    assert (meeting.title, meeting.start, meeting.location) == (
        "Quarterly review",
        datetime(2024, 3, 8, 14, 0, tzinfo=UTC),
        "Room 4",
    )
    assert linked(mail) == {meeting.public_id}


def test_mail_arriving_by_live_sync_is_read_the_same_way(
    celery_inline: None, django_capture_on_commit_callbacks: Capture
) -> None:
    """What the IMAP connector hands the sink (archive/connectors/mail/imap.py: mail_item,
    Batch.from_items, staged like account_sync does): the same effect, the same meeting."""
    raw = (INVITATIONS / "01_outlook_request.eml").read_bytes()
    item = mail_item(raw, source="imap://mail.example.org/INBOX", number=7, owner=OWNER)
    assert not isinstance(item, str)
    account = AccountRecord(
        provider="mail",
        external_id=OWNER,
        name=OWNER,
        owner=IdentityRecord(external_id=OWNER, email=OWNER),
    )
    batch = Batch.from_items(account, [item], cursor={"folders": {}}, cursor_stream="imap")
    staged, unreadable = batch_staged(batch)
    assert unreadable == 0
    with django_capture_on_commit_callbacks(execute=True):
        batch_record(batch=staged)
    meeting = Meeting.objects.get()
    assert meeting.event is not None and meeting.event.uid == OUTLOOK_UID
    assert Calendar.objects.get().key == f"mail:{OWNER}"
    assert linked(Message.objects.get()) == {meeting.public_id}
    # The same mail fetched again (a recreated folder): nothing asked, nothing changed.
    before = state()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        batch_record(batch=batch_staged(batch)[0])
    assert not [c for c in callbacks if isinstance(c, Effect) and c.name == CALENDAR_STORED]
    assert state() == before


def test_only_calendar_files_are_announced(
    celery_inline: None, django_capture_on_commit_callbacks: Capture
) -> None:
    """The invite.eml of the mail fixtures holds a calendar part, an image, a binary and a
    text file: only the calendar is handed to the meetings."""
    raw = (FIXTURES / "invite.eml").read_bytes()
    item = mail_item(raw, source="imap://mail.example.org/INBOX", number=1, owner=OWNER)
    assert not isinstance(item, str)
    account = AccountRecord(provider="mail", external_id=OWNER, name=OWNER)
    staged, _ = batch_staged(Batch.from_items(account, [item]))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        batch_record(batch=staged)
    announced = [c for c in callbacks if isinstance(c, Effect) and c.name == CALENDAR_STORED]
    calendars = Attachment.objects.filter(mime_type="text/calendar")
    assert len(announced) == 1 == calendars.count()
    assert dict(announced[0].args) == {"public_id": calendars.get().public_id}
