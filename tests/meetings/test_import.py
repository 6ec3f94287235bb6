"""`wirecat import` and the Import page take calendars (.ics) and transcripts (.vtt, .srt, a
Zoom chat .txt) like any export, detected from their content (archive/imports/meetings.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

from archive.connectors.registry import import_reader_for, meeting_reader_for, recording_start
from archive.imports.jobs import import_run as import_run_job
from archive.imports.models import ImportJob
from archive.store.models import Message
from meetings.models import Calendar, Event, Meeting, Participant, Segment, Transcript

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SAMPLES = Path("/work/shared/samples")
CALENDARS = sorted((FIXTURES / "ical").glob("*.ics")) + sorted((SAMPLES / "ical").glob("*.ics"))
TRANSCRIPTS = {
    **{path: "vtt" for path in (FIXTURES / "transcripts").glob("*.vtt") if path.stat().st_size},
    **{path: "srt" for path in (FIXTURES / "transcripts").glob("*.srt")},
    FIXTURES / "transcripts" / "meeting_saved_chat_old.txt": "zoom_chat",
    FIXTURES / "transcripts" / "meeting_saved_chat_new.txt": "zoom_chat",
    FIXTURES / "transcripts" / "recording_chat.txt": "zoom_chat",
    **{path: "vtt" for path in (SAMPLES / "transcripts").glob("*.vtt")},
}


def run_import(*args: Any) -> tuple[ImportJob, str]:
    out = StringIO()
    call_command("import", *[str(a) for a in args], stdout=out, stderr=StringIO())
    return ImportJob.objects.order_by("-pk").first(), out.getvalue()  # type: ignore[return-value]


def counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (Calendar, Event, Meeting, Participant, Transcript, Segment)
    }


def ics(at: datetime) -> bytes:
    """A calendar of our own around `at`: a weekly series of 10 (its third occurrence
    cancelled by an override written before its master), a single event, a broken one."""
    stamp = "%Y%m%dT%H%M%SZ"
    first = at.replace(hour=9, minute=0, second=0, microsecond=0)
    third = first + timedelta(weeks=2)
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//WireCat tests//EN",
        "X-WR-CALNAME:Team",
        "BEGIN:VEVENT",
        "UID:weekly@example.org",
        f"RECURRENCE-ID:{third.strftime(stamp)}",
        f"DTSTART:{third.strftime(stamp)}",
        f"DTEND:{(third + timedelta(minutes=30)).strftime(stamp)}",
        "SEQUENCE:1",
        "STATUS:CANCELLED",
        "SUMMARY:Weekly sync",
        "END:VEVENT",
        "BEGIN:VEVENT",
        "UID:weekly@example.org",
        f"DTSTART:{first.strftime(stamp)}",
        f"DTEND:{(first + timedelta(minutes=30)).strftime(stamp)}",
        "RRULE:FREQ=WEEKLY;COUNT=10",
        "SUMMARY:Weekly sync",
        "ATTENDEE;CN=Alice Walker:mailto:alice@example.org",
        "END:VEVENT",
        "BEGIN:VEVENT",
        "UID:review@example.org",
        f"DTSTART:{(first + timedelta(days=1)).strftime(stamp)}",
        f"DTEND:{(first + timedelta(days=1, hours=1)).strftime(stamp)}",
        "SUMMARY:Budget review",
        "END:VEVENT",
        "BEGIN:VEVENT",
        "UID:no-start@example.org",
        "SUMMARY:Never placed",
        "END:VEVENT",
        "END:VCALENDAR",
    ]
    return ("\r\n".join(lines) + "\r\n").encode()


VTT = b"""WEBVTT

00:00:01.000 --> 00:00:04.000
<v Alice Walker>The quarterly budget looks fine.

00:00:05.000 --> 00:00:08.000
<v Bob Lee>Then we ship the marmalade release on Friday.
"""


@pytest.mark.parametrize("path", CALENDARS, ids=lambda p: p.name)
def test_every_calendar_imports_and_again_changes_nothing(path: Path) -> None:
    job, out = run_import(path)
    assert (job.status, job.format) == ("done", "ical"), job.errors
    assert job.outcome["kind"] == "calendar"
    assert Calendar.objects.filter(kind="file", key=path.name).exists()
    if job.outcome["meetings_added"]:
        assert Meeting.objects.filter(calendar__key=path.name).count() >= 1
    assert f"{job.outcome['events']:,} event" in out
    assert len(job.errors) == job.outcome["problems"]  # each problem listed
    before = counts()

    again, out = run_import(path)
    assert again.pk != job.pk and again.status == "done"
    assert counts() == before
    assert (again.outcome["meetings_added"], again.outcome["meetings_updated"]) == (0, 0)
    assert "Nothing changed" in out


@pytest.mark.parametrize(("path", "kind"), TRANSCRIPTS.items(), ids=lambda p: str(p))
def test_every_transcript_imports_and_again_changes_nothing(path: Path, kind: str) -> None:
    job, out = run_import(path)
    assert (job.status, job.format) == ("done", kind), job.errors
    transcript = Transcript.objects.get(source_name=path.name)
    assert transcript.kind == kind
    assert transcript.segments.count() == job.outcome["segments"] > 0
    assert f"A transcript of {job.outcome['segments']:,} segment" in out
    assert f"/meetings/{transcript.meeting.public_id}/" in out
    before = counts()

    again, _out = run_import(path)
    assert again.status == "done" and counts() == before
    assert again.outcome["meeting"] == transcript.meeting.public_id


def test_the_summary_says_events_meetings_cancelled_and_problems(tmp_path: Path) -> None:
    path = tmp_path / "team.ics"
    path.write_bytes(ics(datetime.now(UTC) - timedelta(days=20)))
    job, out = run_import(path)
    assert job.status == "done"
    assert "2 events, 11 meetings (1 cancelled), 1 problem" in out
    assert "11 meetings added." in out
    assert "no-start@example.org: no DTSTART" in out
    assert job.errors == [e for e in job.errors if "no-start@example.org" in e]
    assert Meeting.objects.filter(calendar__key="team.ics", status="cancelled").count() == 1

    _again, out = run_import(path)
    assert "2 events, 11 meetings (1 cancelled), 1 problem" in out
    assert "Nothing changed" in out


def test_a_broken_calendar_fails_with_its_sentence(tmp_path: Path) -> None:
    path = tmp_path / "broken.ics"
    path.write_bytes(
        b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:x\r\nEND:VCALENDAR\r\n"
    )
    with pytest.raises(CommandError, match="1 of 1 imports did not finish"):
        run_import(path)
    job = ImportJob.objects.get()
    assert (job.status, job.format) == ("failed", "ical")
    assert job.errors and job.errors[0].startswith("broken.ics")
    assert not Meeting.objects.exists()


def test_a_calendar_over_the_cap_fails_naming_the_setting(tmp_path: Path, settings: Any) -> None:
    settings.MEETINGS_MAX_ICS_BYTES = 200
    path = tmp_path / "big.ics"
    path.write_bytes(ics(datetime.now(UTC)))
    with pytest.raises(CommandError):
        run_import(path)
    job = ImportJob.objects.get()
    assert job.status == "failed" and "WIRECAT_MEETINGS_MAX_ICS_BYTES" in job.errors[0]


def test_whatsapp_txt_stays_whatsapp_and_zoom_chat_is_a_transcript() -> None:
    for name in ("whatsapp_android.txt", "whatsapp_ios.txt"):
        path = FIXTURES / "transcripts" / name
        assert meeting_reader_for(path) is None
        job, _out = run_import(path)
        assert (job.status, job.format, job.outcome) == ("done", "whatsapp", {})
    assert Message.objects.count() == 4 and not Transcript.objects.exists()

    chat = FIXTURES / "transcripts" / "meeting_saved_chat_old.txt"
    assert import_reader_for(chat).format == "zoom_chat"
    job, _out = run_import(chat)
    assert job.format == "zoom_chat" and Transcript.objects.get().kind == "zoom_chat"
    assert Message.objects.count() == 4  # nothing went to the message sink


def test_a_transcript_joins_the_meeting_it_overlaps_or_the_one_named(tmp_path: Path) -> None:
    at = datetime.now(UTC) - timedelta(days=20)
    calendar = tmp_path / "team.ics"
    calendar.write_bytes(ics(at))
    run_import(calendar)
    review = Meeting.objects.get(title="Budget review")
    talk = tmp_path / "talk.vtt"
    talk.write_bytes(VTT)

    start = (review.start + timedelta(minutes=5)).isoformat()
    job, out = run_import(talk, "--start", start)
    assert Transcript.objects.get().meeting == review
    assert "attached to Budget review" in out
    assert job.outcome["own_meeting"] is False

    weekly = Meeting.objects.filter(title="Weekly sync").order_by("start").first()
    assert weekly is not None
    job, out = run_import(talk, "--meeting", weekly.public_id)
    assert job.outcome["meeting"] == weekly.public_id
    assert weekly.transcripts.get().segments.count() == 2

    with pytest.raises(CommandError, match="no meeting 'mtg_nope'"):
        run_import(talk, "--meeting", "mtg_nope")
    with pytest.raises(CommandError, match="only a transcript"):
        run_import(calendar, "--meeting", weekly.public_id)


def test_a_zoom_recordings_name_says_when_it_began(tmp_path: Path) -> None:
    assert recording_start("GMT20240105-150012_Recording.transcript.vtt") == datetime(
        2024, 1, 5, 15, 0, 12, tzinfo=UTC
    )
    assert recording_start("GMT20241345-990000_x.vtt") is None  # no such moment
    assert recording_start("standup.vtt") is None
    calendar = Calendar.objects.create(kind="file", key="x.ics")
    held = Meeting.objects.create(
        calendar=calendar,
        start=datetime(2024, 1, 5, 15, tzinfo=UTC),
        end=datetime(2024, 1, 5, 16, tzinfo=UTC),
        title="Kickoff",
    )
    path = tmp_path / "GMT20240105-150012_Recording.transcript.vtt"
    path.write_bytes(VTT)
    job, out = run_import(path)
    assert job.outcome["meeting"] == held.public_id and job.outcome["timed"] is True
    assert "attached to Kickoff" in out


def test_an_empty_file_is_refused_naming_every_format() -> None:
    with pytest.raises(CommandError, match=r"not an export WireCat can read.*ical.*vtt.*srt"):
        run_import(FIXTURES / "transcripts" / "empty.vtt")


def test_the_import_page_takes_a_calendar_and_shows_its_counts(
    owner_client: Client, django_capture_on_commit_callbacks: Any, monkeypatch: Any
) -> None:
    sent: list[str] = []
    monkeypatch.setattr(
        "archive.imports.jobs.current_app.send_task", lambda name, **kw: sent.append(name)
    )
    upload = SimpleUploadedFile("team.ics", ics(datetime.now(UTC) - timedelta(days=20)))
    with django_capture_on_commit_callbacks() as callbacks:
        response = owner_client.post("/imports/", {"file": upload, "path": "", "format": ""})
    assert response.status_code == 302 and len(callbacks) == 1
    job = ImportJob.objects.get()
    assert (job.format, job.status) == ("ical", "queued")

    import_run_job.run(job.pk)  # what the worker runs
    assert sent == ["archive.jobs.meetings_stems_drain"]  # its words stemmed now
    page = owner_client.get(f"/imports/{job.public_id}/").content.decode()
    assert "Done" in page and 'hx-trigger="every 1s"' not in page
    assert "2 events, 11 meetings (1 cancelled), 1 problem." in page
    assert "11 meetings added." in page and 'href="/meetings/"' in page
    assert "Problems" in page and "no-start@example.org: no DTSTART" in page
    listing = owner_client.get("/imports/").content.decode()
    assert "2 events, 11 meetings (1 cancelled), 1 problem" in listing


def test_the_import_page_attaches_a_transcript_to_the_meeting_named(
    owner_client: Client,
) -> None:
    calendar = Calendar.objects.create(kind="file", key="x.ics", name="X")
    now = datetime.now(UTC)
    meeting = Meeting.objects.create(
        calendar=calendar, start=now, end=now + timedelta(hours=1), title="Planning <b>day</b>"
    )
    form = owner_client.get(f"/imports/?meeting={meeting.public_id}").content.decode()
    assert f'value="{meeting.public_id}"' in form
    upload = SimpleUploadedFile("talk.vtt", VTT)
    response = owner_client.post(
        "/imports/",
        {
            "file": upload,
            "path": "",
            "format": "",
            "meeting": f"http://wirecat.local/meetings/{meeting.public_id}/?q=x#transcript",
        },
    )
    assert response.status_code == 302
    job = ImportJob.objects.get()
    import_run_job.run(job.pk)
    page = owner_client.get(f"/imports/{job.public_id}/").content.decode()
    assert "A transcript of <strong>2</strong> segments attached to" in page
    assert f'href="/meetings/{meeting.public_id}/"' in page
    assert "Planning &lt;b&gt;day&lt;/b&gt;" in page  # a title is text, never markup
    assert meeting.transcripts.get().segments.count() == 2


def test_the_import_page_explains_an_unknown_meeting(owner_client: Client) -> None:
    upload = SimpleUploadedFile("talk.vtt", VTT)
    response = owner_client.post(
        "/imports/", {"file": upload, "path": "", "format": "", "meeting": "mtg_gone"}
    )
    assert response.status_code == 422
    assert "There is no meeting" in response.content.decode()
    assert not ImportJob.objects.exists()
