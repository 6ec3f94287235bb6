"""What a calendar or transcript file holds, as the readers hand it over: plain frozen
records, no Django. The readers (archive/connectors/ical/, archive/connectors/transcripts/)
make them; meetings' services write them.

Times are timezone-aware UTC datetimes, except an all-day occurrence, whose start and end
are midnight UTC of its dates (and `all_day` says so). `time_zone` is the IANA name the
event was written in ("" when floating or UTC), kept to show local times.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


class Response:
    """A participant's answer (iCalendar PARTSTAT, lower-cased)."""

    ACCEPTED = "accepted"
    DECLINED = "declined"
    TENTATIVE = "tentative"
    NEEDS_ACTION = "needs-action"
    DELEGATED = "delegated"
    UNKNOWN = ""


class Status:
    """A meeting's status (iCalendar STATUS, lower-cased)."""

    CONFIRMED = "confirmed"
    TENTATIVE = "tentative"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class ParticipantRecord:
    email: str  # lower-cased; "" when only a name is known
    name: str = ""
    response: str = Response.UNKNOWN
    role: str = ""  # organizer | chair | required | optional | non-participant | ""


@dataclass(frozen=True)
class OccurrenceRecord:
    """One occurrence of an event within the expansion window, cancelled ones included."""

    recurrence_id: datetime  # the occurrence's original start (its start, for a single event)
    start: datetime
    end: datetime
    all_day: bool = False
    status: str = Status.CONFIRMED
    moved: bool = False  # an override (RECURRENCE-ID) changed its time
    title: str = ""
    description: str = ""
    location: str = ""
    join_url: str = ""
    sequence: int = 0
    # None: the event's participants; a tuple: this occurrence's own (an override's).
    participants: tuple[ParticipantRecord, ...] | None = None


@dataclass(frozen=True)
class EventRecord:
    """A VEVENT with its overrides: a single event or a recurring series."""

    uid: str
    title: str = ""
    description: str = ""
    location: str = ""
    join_url: str = ""  # a meeting link found in URL, LOCATION, DESCRIPTION or X- fields
    time_zone: str = ""
    sequence: int = 0
    status: str = Status.CONFIRMED
    rrule: str = ""  # the RRULE as written ("" for a single event)
    organizer: ParticipantRecord | None = None
    participants: tuple[ParticipantRecord, ...] = ()
    occurrences: tuple[OccurrenceRecord, ...] = ()


@dataclass(frozen=True)
class CalendarRead:
    """What one calendar file (or feed, or mail part) holds."""

    name: str = ""  # X-WR-CALNAME
    time_zone: str = ""  # X-WR-TIMEZONE, as an IANA name
    method: str = ""  # PUBLISH | REQUEST | CANCEL | REPLY | "" (an invitation's METHOD)
    events: tuple[EventRecord, ...] = ()
    # What could not be read, one sentence each naming the file, line or UID, and what
    # was kept ("invite.ics, UID abc: no DTSTART; the event was skipped").
    problems: tuple[str, ...] = ()
    # The window the occurrences were expanded for (UTC). A stored occurrence of an event
    # in this read that lies inside it and is no longer read is marked cancelled. None:
    # the span of the event's occurrences in the read (nothing outside it is cancelled).
    window_start: datetime | None = None
    window_end: datetime | None = None


@dataclass(frozen=True)
class SegmentRecord:
    """One cue of a transcript: who spoke, from when to when (ms from the start), what."""

    start_ms: int
    end_ms: int
    text: str
    speaker: str = ""


@dataclass(frozen=True)
class TranscriptRead:
    """What one transcript file holds."""

    kind: str  # vtt | srt | zoom_chat
    segments: tuple[SegmentRecord, ...] = ()
    problems: tuple[str, ...] = ()
    language: str = ""
    # The wall-clock start when the file says it (a Zoom chat's times are of the day).
    started_at: datetime | None = None
    notes: dict[str, str] = field(default_factory=dict)
