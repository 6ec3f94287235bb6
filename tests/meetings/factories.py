"""Meetings rows for page tests, written straight with the ORM (the services that import
calendars and transcripts are tested on their own)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from meetings.models import Calendar, Event, Meeting, Participant, Segment, Transcript


def calendar(key: str = "work.ics", name: str = "Work") -> Calendar:
    found, _ = Calendar.objects.get_or_create(
        kind=Calendar.Kind.FILE, key=key, defaults={"name": name, "time_zone": "Europe/Berlin"}
    )
    return found


def event(uid: str = "weekly@example.com", *, title: str = "Team sync", **fields: Any) -> Event:
    return Event.objects.create(calendar=calendar(), uid=uid, title=title, **fields)


def meeting(
    title: str,
    start: datetime,
    *,
    minutes: int = 60,
    ev: Event | None = None,
    **fields: Any,
) -> Meeting:
    """A timed meeting (`start` aware), or an all-day one (`all_day=True`, `start` midnight
    UTC of its first day, `minutes` a multiple of a day)."""
    fields.setdefault("recurrence_id", start if ev is not None else None)
    return Meeting.objects.create(
        calendar=ev.calendar if ev is not None else calendar(),
        event=ev,
        title=title,
        start=start,
        end=start + timedelta(minutes=minutes),
        **fields,
    )


def all_day(
    title: str, year: int, month: int, day: int, *, days: int = 1, **fields: Any
) -> Meeting:
    start = datetime(year, month, day, tzinfo=UTC)
    return meeting(title, start, minutes=days * 24 * 60, all_day=True, **fields)


def transcript(
    of: Meeting, lines: list[tuple[str, int, str]], *, source_name: str = "sync.vtt"
) -> Transcript:
    """`lines`: (speaker, start in seconds, text); each line lasts until the next."""
    made = Transcript.objects.create(
        meeting=of, origin=Transcript.Origin.FILE, kind="vtt", source_name=source_name
    )
    Segment.objects.bulk_create(
        Segment(
            transcript=made,
            seq=n,
            start_ms=at * 1000,
            end_ms=(lines[n + 1][1] * 1000 if n + 1 < len(lines) else at * 1000 + 4000),
            speaker=speaker,
            text=text,
        )
        for n, (speaker, at, text) in enumerate(lines)
    )
    return made


def participant(of: Meeting, name: str, email: str = "", **fields: Any) -> Participant:
    return Participant.objects.create(meeting=of, name=name, email=email, **fields)
