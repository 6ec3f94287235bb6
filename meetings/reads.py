"""The meetings API's reads: meetings in a window of days, and one meeting with its
participants, transcripts and a page of one transcript's segments."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db.models import Count, Q

from meetings.models import Meeting, Participant, Segment, Transcript
from wirecat.db.values import without_surrogates
from wirecat.errors import NotFound

WINDOW_DEFAULT_DAYS = 31
WINDOW_MAX_DAYS = 366
LIST_MAX = 500
SEGMENTS_MAX = 2_000
SEQ_MAX = 2**31 - 1
QUERY_MAX = 200


@dataclass(frozen=True)
class Window:
    after: datetime
    before: datetime
    meetings: list[Meeting]
    next_offset: int | None


def _days_from(day: date, days: int) -> date:
    """`day` moved by `days`, held within the calendar's first and last days."""
    try:
        return day + timedelta(days=days)
    except OverflowError:
        return date.max if days > 0 else date.min


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def meetings_window(
    *,
    after: date | None,
    before: date | None,
    q: str = "",
    calendar: str = "",
    limit: int = 100,
    offset: int = 0,
    today: date | None = None,
) -> Window:
    """The meetings starting on or after `after` and before `before` (days, UTC), earliest
    first: without `after`, today (or `before` less 31 days); without `before`, 31 days
    after `after`. A window longer than 366 days is cut to 366 days from `after` (the
    answer's `before` says where it ends); `before` not after `after` is an empty window.
    `q` narrows to titles, descriptions and locations holding it; `calendar` to one
    calendar (its cal_… id)."""
    if after is None:
        after = (
            _days_from(before, -WINDOW_DEFAULT_DAYS)
            if before is not None
            else (today or datetime.now(UTC).date())
        )
    if before is None:
        before = _days_from(after, WINDOW_DEFAULT_DAYS)
    before = min(before, _days_from(after, WINDOW_MAX_DAYS))
    if before <= after:
        start = end = _midnight(after)
        return Window(start, end, [], None)
    start, end = _midnight(after), _midnight(before)
    found = Meeting.objects.filter(start__gte=start, start__lt=end)
    words = " ".join(without_surrogates(q).replace("\x00", " ").split())[:QUERY_MAX]
    if words:
        found = found.filter(
            Q(title__icontains=words)
            | Q(description__icontains=words)
            | Q(location__icontains=words)
        )
    if calendar:
        found = found.filter(calendar__public_id=calendar)
    rows = list(
        found.select_related("calendar", "event").order_by("start", "id")[
            offset : offset + limit + 1
        ]
    )
    more = len(rows) > limit
    return Window(start, end, rows[:limit], offset + limit if more else None)


@dataclass(frozen=True)
class MeetingDetail:
    meeting: Meeting
    participants: list[Participant]
    transcripts: Sequence[Transcript]  # each annotated with `segment_count`
    transcript: Transcript | None  # whose segments these are
    segments: list[Segment]
    next_after: int | None


def meeting_detail(
    *, public_id: str, transcript: int | None = None, after: int = -1, limit: int = 500
) -> MeetingDetail:
    """A meeting by its mtg_… id, with one page of one transcript's segments (the latest
    transcript unless `transcript` names one of its own): those with a seq above `after`."""
    meeting = (
        Meeting.objects.select_related("calendar", "event").filter(public_id=public_id).first()
    )
    if meeting is None:
        raise NotFound(f"no meeting {public_id}")
    transcripts = list(
        Transcript.objects.filter(meeting=meeting)
        .annotate(segment_count=Count("segments"))
        .order_by("created_at", "id")
    )
    chosen = transcripts[-1] if transcripts else None
    if transcript is not None:
        chosen = next((t for t in transcripts if t.pk == transcript), None)
        if chosen is None:
            raise NotFound(f"meeting {public_id} has no transcript {transcript}")
    segments: list[Segment] = []
    if chosen is not None:
        segments = list(
            Segment.objects.filter(transcript=chosen, seq__gt=after).order_by("seq")[: limit + 1]
        )
    more = len(segments) > limit
    segments = segments[:limit]
    return MeetingDetail(
        meeting=meeting,
        participants=list(meeting.participants.order_by("id")),
        transcripts=transcripts,
        transcript=chosen,
        segments=segments,
        next_after=segments[-1].seq if more else None,
    )
