"""Meetings, participants and transcripts made with the ORM directly, for the search and
API tests (the services that read calendars and transcripts are tested on their own)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from meetings.models import Calendar, Event, Meeting, Participant, Segment, Transcript

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def calendar(name: str = "Work", key: str = "work.ics") -> Calendar:
    found, _ = Calendar.objects.get_or_create(
        kind=Calendar.Kind.FILE, key=key, defaults={"name": name}
    )
    return found


def meeting(
    title: str = "Weekly sync",
    *,
    description: str = "",
    start: datetime = T0,
    minutes: int = 30,
    cal: Calendar | None = None,
    organizer: tuple[str, str] | None = None,
    participants: Sequence[tuple[str, str]] = (),
) -> Meeting:
    """A meeting (with an event when it has an organizer) and its participants
    (name, e-mail)."""
    cal = cal or calendar()
    event = None
    if organizer is not None:
        event = Event.objects.create(
            calendar=cal,
            uid=f"{title}-{start.isoformat()}@test",
            title=title,
            organizer_name=organizer[0],
            organizer_email=organizer[1],
        )
    found = Meeting.objects.create(
        calendar=cal,
        event=event,
        recurrence_id=start if event else None,
        start=start,
        end=start + timedelta(minutes=minutes),
        title=title,
        description=description,
    )
    for name, email in participants:
        Participant.objects.create(meeting=found, name=name, email=email)
    return found


def transcript(
    of: Meeting,
    lines: Sequence[tuple[str, str] | tuple[str, str, int]],
    *,
    step_ms: int = 5_000,
    origin: str = Transcript.Origin.FILE,
) -> Transcript:
    """A transcript of (speaker, text[, start_ms]) lines, each `step_ms` after the last
    unless it says when."""
    made = Transcript.objects.create(meeting=of, origin=origin, kind="vtt", source_name="t.vtt")
    at = 0
    for seq, line in enumerate(lines):
        speaker, text = line[0], line[1]
        at = line[2] if len(line) == 3 else at
        Segment.objects.create(
            transcript=made,
            seq=seq,
            start_ms=at,
            end_ms=at + step_ms - 1,
            speaker=speaker,
            text=text,
        )
        at += step_ms
    return made
