"""Reads of the meetings: the calendar (a month, a week, an agenda) in the owner's time zone,
and a meeting's page (its series, participants and their people, the transcript as speaker
turns, the messages with its participants around it, the tasks that link here, the recording
its lines play from and the audio and video the owner may pick as one).

Times: a timed meeting is shown in the owner's time zone (settings.TIME_ZONE, the current
time zone); an all-day one is on its own dates, which `domain.py` stores as midnight UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString

from archive.store.models import Attachment, Identity, Message, Person
from meetings.models import Meeting, MeetingLink, Participant, Segment, Status, Transcript
from meetings.search import MeetingHit as MeetingHit  # the search's public face
from meetings.search import MeetingSearchPage as MeetingSearchPage
from meetings.search import meeting_search as meeting_search
from tasks.models import Task
from wirecat.errors import NotFound

VIEWS = ("month", "week", "agenda")
MONTH_CELL_ITEMS = 3  # a month's day shows this many, then "+N more"
AGENDA_DAYS = 14
CALENDAR_LIMIT = 3000  # meetings read for one page of the calendar, at most
QUERY_MAX = 200  # the search inside a transcript reads this much of ?q=
SEGMENT_LIMIT = 5000  # transcript lines shown on one page
NEARBY = 3  # a series' occurrences shown before and after this one
MESSAGES_AROUND = timedelta(days=2)
MESSAGES_LIMIT = 50
WEEK_FIRST_HOUR, WEEK_LAST_HOUR = 8, 19  # the week view's hours when nothing is earlier/later
MAX_LANES = 3  # side-by-side meetings in a week's day column
CANDIDATES_LIMIT = 50  # recordings the owner may pick from on a meeting's page

FIRST_DAY, LAST_DAY = date(1900, 1, 1), date(9000, 12, 31)
DASH = "\u2013"  # an en dash, between the two ends of a range


# --- the calendar ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CalendarItem:
    """A meeting on one day of the calendar, with its times in the owner's zone."""

    meeting: Meeting
    start: datetime  # local; an all-day meeting's first day at midnight
    end: datetime
    all_day: bool
    continues: bool = False  # began on an earlier day
    # The week view's placement: half-hour rows from the view's first hour, and a lane.
    row: int = 0
    span: int = 1
    lane: int = 0

    @property
    def cancelled(self) -> bool:
        return self.meeting.status == Status.CANCELLED

    @property
    def tentative(self) -> bool:
        return self.meeting.status == Status.TENTATIVE


@dataclass
class CalendarDay:
    day: date
    today: bool
    in_range: bool  # in the month shown (a month grid shows the neighbours' days too)
    items: list[CalendarItem] = field(default_factory=list)
    lanes: int = 1

    @property
    def all_day_items(self) -> list[CalendarItem]:
        return [item for item in self.items if item.all_day]

    @property
    def timed_items(self) -> list[CalendarItem]:
        return [item for item in self.items if not item.all_day]

    @property
    def shown(self) -> list[CalendarItem]:
        return self.items[:MONTH_CELL_ITEMS]

    @property
    def hidden(self) -> int:
        return max(0, len(self.items) - MONTH_CELL_ITEMS)

    @property
    def active(self) -> int:
        """Meetings that are not cancelled (the phone's dots)."""
        return sum(1 for item in self.items if not item.cancelled)


@dataclass(frozen=True)
class CalendarPage:
    view: str
    anchor: date  # the day asked for (or today)
    today: date
    title: str
    first: date
    last: date  # inclusive
    days: list[CalendarDay]
    previous: date
    following: date
    hours: list[int] = field(default_factory=list)  # the week view's hour rows
    truncated: bool = False

    @property
    def hour_rows(self) -> list[tuple[int, int]]:
        """(hour, its first half-hour row) for the week view's hour labels."""
        return [(hour, n * 2 + 1) for n, hour in enumerate(self.hours)]

    @property
    def weeks(self) -> list[list[CalendarDay]]:
        return [self.days[i : i + 7] for i in range(0, len(self.days), 7)]

    @property
    def selected(self) -> CalendarDay | None:
        """The anchor's day in the month grid (the phone shows its agenda below the dots)."""
        return next((day for day in self.days if day.day == self.anchor), None)

    @property
    def agenda(self) -> list[CalendarDay]:
        """Days with meetings, and today even when it has none."""
        return [day for day in self.days if day.items or day.today]

    @property
    def count(self) -> int:
        return sum(len(day.items) for day in self.days if day.in_range)


def parse_day(value: str | None, *, today: date) -> date:
    """?date=2026-12-01 (or 2026-12): the day; anything else is today."""
    text = (value or "").strip()[:10]
    for pattern in ("%Y-%m-%d", "%Y-%m"):
        try:
            day = datetime.strptime(text, pattern).date()
        except ValueError:
            continue
        return min(max(day, FIRST_DAY), LAST_DAY)
    return today


def calendar_page(*, view: str, anchor: date, today: date | None = None) -> CalendarPage:
    """The month, week or agenda around `anchor`, every occurrence in it (cancelled ones
    too), read in one query."""
    today = today or timezone.localdate()
    if view not in VIEWS:
        view = "month"
    if view == "month":
        start_of_month = anchor.replace(day=1)
        first = start_of_month - timedelta(days=start_of_month.weekday())
        next_month = _add_months(start_of_month, 1)
        last = next_month - timedelta(days=1)
        last = last + timedelta(days=6 - last.weekday())
        in_range = (start_of_month, next_month - timedelta(days=1))
        previous, following = _add_months(start_of_month, -1), next_month
        title = f"{start_of_month:%B %Y}"
    elif view == "week":
        first = anchor - timedelta(days=anchor.weekday())
        last = first + timedelta(days=6)
        in_range = (first, last)
        previous, following = first - timedelta(days=7), first + timedelta(days=7)
        title = _range_title(first, last)
    else:
        first, last = anchor, anchor + timedelta(days=AGENDA_DAYS - 1)
        in_range = (first, last)
        previous, following = first - timedelta(days=AGENDA_DAYS), last + timedelta(days=1)
        title = _range_title(first, last)
    previous, following = max(previous, FIRST_DAY), min(following, LAST_DAY)

    days = {
        first + timedelta(days=n): CalendarDay(
            day=first + timedelta(days=n),
            today=first + timedelta(days=n) == today,
            in_range=in_range[0] <= first + timedelta(days=n) <= in_range[1],
        )
        for n in range((last - first).days + 1)
    }
    meetings = list(_meetings_between(first, last)[: CALENDAR_LIMIT + 1])
    truncated = len(meetings) > CALENDAR_LIMIT
    for meeting in meetings[:CALENDAR_LIMIT]:
        for day, item in _placements(meeting, first, last):
            days[day].items.append(item)
    for cell in days.values():
        cell.items.sort(key=lambda item: (not item.all_day, item.start, item.meeting.pk))
    hours: list[int] = []
    if view == "week":
        hours = _place_in_hours(list(days.values()))
    return CalendarPage(
        view=view,
        anchor=anchor,
        today=today,
        title=title,
        first=first,
        last=last,
        days=list(days.values()),
        previous=previous,
        following=following,
        hours=hours,
        truncated=truncated,
    )


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    year = min(max(year, FIRST_DAY.year), LAST_DAY.year)
    return date(year, month + 1, 1)


def _range_title(first: date, last: date) -> str:
    if first.year != last.year:
        return f"{first:%-d %b %Y} {DASH} {last:%-d %b %Y}"
    if first.month != last.month:
        return f"{first:%-d %b} {DASH} {last:%-d %b %Y}"
    return f"{first:%-d} {DASH} {last:%-d %B %Y}"


def _local_midnight(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())


def _meetings_between(first: date, last: date) -> QuerySet[Meeting]:
    # Local midnights bound the timed meetings; the day either side of them takes in the
    # all-day ones, whose dates are midnight UTC (filtered exactly in `_placements`).
    start = _local_midnight(first) - timedelta(days=1)
    end = _local_midnight(last + timedelta(days=1)) + timedelta(days=1)
    return (
        Meeting.objects.filter(start__lt=end, end__gt=start)
        .only(
            "public_id",
            "start",
            "end",
            "all_day",
            "status",
            "moved",
            "title",
            "location",
            "time_zone",
        )
        .order_by("start", "id")
    )


def _placements(meeting: Meeting, first: date, last: date) -> list[tuple[date, CalendarItem]]:
    """The days of [first, last] the meeting is on: all of an all-day one's dates (its end
    is the day after, as in iCalendar), every day a timed one overlaps."""
    if meeting.all_day:
        start_day = meeting.start.astimezone(UTC).date()
        end_day = meeting.end.astimezone(UTC).date()
        last_day = max(start_day, end_day - timedelta(days=1))
        start = datetime.combine(start_day, time.min)
        end = datetime.combine(last_day, time.max)
    else:
        start = timezone.localtime(meeting.start)
        end = timezone.localtime(meeting.end)
        start_day = start.date()
        # A meeting ending at midnight is not on the next day.
        last_day = (end - timedelta(microseconds=1)).date() if end > start else start_day
    placed = []
    day = max(start_day, first)
    while day <= min(last_day, last):
        placed.append(
            (
                day,
                CalendarItem(
                    meeting=meeting,
                    start=start,
                    end=end,
                    all_day=meeting.all_day,
                    continues=day != start_day,
                ),
            )
        )
        day += timedelta(days=1)
    return placed


def _place_in_hours(days: list[CalendarDay]) -> list[int]:
    """The week view's hours (at least 8:00 to 20:00, more when a meeting is earlier or
    later), each timed item's half-hour row and span, and lanes for overlapping ones."""
    first_hour, last_hour = WEEK_FIRST_HOUR, WEEK_LAST_HOUR
    for day in days:
        for item in day.timed_items:
            start_hour = 0 if item.continues else item.start.hour
            first_hour = min(first_hour, start_hour)
            if item.end.date() == day.day:
                last_hour = max(last_hour, item.end.hour - (1 if item.end.minute == 0 else 0))
            else:
                last_hour = 23
    for day in days:
        placed: list[CalendarItem] = []
        lane_ends: list[int] = []
        for item in day.timed_items:
            start_slot = 0 if item.continues else item.start.hour * 2 + item.start.minute // 30
            if item.end.date() == day.day:
                end_slot = item.end.hour * 2 + (item.end.minute + 29) // 30
            else:
                end_slot = 48
            row = max(0, start_slot - first_hour * 2)
            span = max(1, min(end_slot, (last_hour + 1) * 2) - max(start_slot, first_hour * 2))
            lane = next((n for n, ends in enumerate(lane_ends) if ends <= row), len(lane_ends))
            if lane < MAX_LANES:
                if lane == len(lane_ends):
                    lane_ends.append(row + span)
                else:
                    lane_ends[lane] = row + span
            else:
                lane = MAX_LANES - 1  # drawn over the last lane: rare, and still listed
            placed.append(_moved(item, row=row + 1, span=min(span, 48), lane=lane))
        day.lanes = max(1, min(len(lane_ends), MAX_LANES))
        timed = iter(placed)
        day.items = [item if item.all_day else next(timed) for item in day.items]
    return list(range(first_hour, last_hour + 1))


def _moved(item: CalendarItem, *, row: int, span: int, lane: int) -> CalendarItem:
    return CalendarItem(
        meeting=item.meeting,
        start=item.start,
        end=item.end,
        all_day=item.all_day,
        continues=item.continues,
        row=row,
        span=span,
        lane=lane,
    )


# --- a meeting's page --------------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    """One transcript segment, its text escaped (and the search's words marked)."""

    segment: Segment
    html: SafeString
    at: str  # "12:05" or "1:02:05"
    # The stored recording of the line's transcript, and the line's start in it as a
    # media fragment's seconds ("2", "2.5"): the line plays from there.
    recording: Attachment | None = None
    seconds: str = ""


@dataclass
class Turn:
    """Consecutive lines of one speaker."""

    speaker: str
    at: str
    lines: list[Line] = field(default_factory=list)


@dataclass(frozen=True)
class TranscriptView:
    turns: list[Turn]
    total: int  # lines in the transcript
    matches: int  # lines that match ?q= (= total without one)
    query: str
    truncated: bool
    sources: list[str]
    starts_later: bool = False  # opened at a line past the first SEGMENT_LIMIT lines


@dataclass(frozen=True)
class Recording:
    """A stored recording of the meeting's transcripts, played on its page."""

    attachment: Attachment
    video: bool  # a <video> (a video/ type), else an <audio>

    @property
    def element_id(self) -> str:
        return f"rec-{self.attachment.public_id}"


@dataclass(frozen=True)
class Nearby:
    """Another occurrence of the same series, with its time in words."""

    meeting: Meeting
    when: str


@dataclass(frozen=True)
class MeetingPage:
    meeting: Meeting
    when: str  # in the owner's zone (an all-day meeting: its dates)
    when_own: str  # in the meeting's own zone when that differs, else ""
    moved_from: str  # a moved occurrence's usual time, else ""
    participants: list[Participant]
    series_rule: str  # in plain words, or the rule as written
    earlier: list[Nearby]
    later: list[Nearby]
    transcript: TranscriptView
    messages: list[Message]
    tasks: list[Task]
    owner_zone: str
    own_zone: str  # the meeting's own zone when it differs from the owner's, else ""
    recordings: list[Recording] = field(default_factory=list)
    transcripts: list[Transcript] = field(default_factory=list)  # for the recording's form
    candidates: list[Attachment] = field(default_factory=list)  # audio and video to pick

    @property
    def when_short(self) -> str:
        return short_when(self.meeting)

    @property
    def join_ok(self) -> bool:
        """The join link is a web address (http or https), safe to make a link of."""
        url = self.meeting.join_url.strip().lower()
        return url.startswith(("https://", "http://")) and len(url) > 8


def meeting_page(*, public_id: str, q: str = "", line: int | None = None) -> MeetingPage:
    """Everything a meeting's page shows, in a bounded number of queries."""
    meeting = (
        Meeting.objects.select_related("calendar", "event").filter(public_id=public_id[:40]).first()
    )
    if meeting is None:
        raise NotFound("There is no such meeting. It may have been removed from its calendar.")
    participants = list(
        Participant.objects.filter(meeting=meeting)
        .select_related("identity__person")
        .order_by("name", "email")
    )
    earlier: list[Meeting] = []
    later: list[Meeting] = []
    if meeting.event_id is not None:
        siblings = Meeting.objects.filter(event_id=meeting.event_id).exclude(pk=meeting.pk)
        earlier = list(siblings.filter(start__lte=meeting.start).order_by("-start", "-id")[:NEARBY])
        earlier.reverse()
        later = list(siblings.filter(start__gt=meeting.start).order_by("start", "id")[:NEARBY])
    owner_zone = timezone.get_current_timezone_name()
    own_zone = meeting.time_zone if _other_zone(meeting.time_zone, owner_zone) else ""
    moved_from = ""
    if meeting.moved and meeting.recurrence_id is not None and not meeting.all_day:
        moved_from = when_text(meeting.recurrence_id, meeting.recurrence_id, all_day=False)
        moved_from = moved_from.rsplit(f" {DASH} ", 1)[0]
    elif meeting.moved and meeting.recurrence_id is not None:
        moved_from = when_text(meeting.recurrence_id, meeting.recurrence_id, all_day=True)
    messages = messages_around(meeting=meeting, participants=participants)
    transcripts = list(
        Transcript.objects.filter(meeting=meeting).select_related("recording").order_by("pk")
    )
    return MeetingPage(
        meeting=meeting,
        when=when_text(meeting.start, meeting.end, all_day=meeting.all_day),
        when_own=(
            when_text(meeting.start, meeting.end, all_day=False, zone=own_zone)
            if own_zone and not meeting.all_day
            else ""
        ),
        moved_from=moved_from,
        participants=participants,
        series_rule=rrule_text(meeting.event.rrule if meeting.event else ""),
        earlier=[Nearby(m, short_when(m)) for m in earlier],
        later=[Nearby(m, short_when(m)) for m in later],
        transcript=transcript_view(meeting=meeting, q=q, line=line),
        messages=messages,
        tasks=tasks_linked(meeting=meeting),
        owner_zone=owner_zone,
        own_zone=own_zone,
        recordings=recordings_of(transcripts),
        transcripts=transcripts,
        candidates=recording_candidates(meeting=meeting, messages=messages),
    )


def _other_zone(zone: str, owner_zone: str) -> bool:
    if not zone or zone == owner_zone:
        return False
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def short_when(meeting: Meeting) -> str:
    """An occurrence in a list: "Tue 8 Dec 2026, 10:00" (an all-day one: its first date)."""
    if meeting.all_day:
        return f"{meeting.start.astimezone(UTC).date():%a %-d %b %Y}, all day"
    return f"{timezone.localtime(meeting.start):%a %-d %b %Y, %H:%M}"


def when_text(start: datetime, end: datetime, *, all_day: bool, zone: str = "") -> str:
    """A meeting's time in words: "Tuesday 8 December 2026, 10:00 to 11:00" in the owner's
    zone (or `zone`); an all-day one's dates ("Tuesday 8 December 2026, all day")."""
    if all_day:
        first = start.astimezone(UTC).date()
        last = max(first, end.astimezone(UTC).date() - timedelta(days=1))
        if first == last:
            return f"{first:%A %-d %B %Y}, all day"
        return f"{first:%A %-d %B} {DASH} {last:%A %-d %B %Y}, all day"
    tz = ZoneInfo(zone) if zone else timezone.get_current_timezone()
    local_start, local_end = start.astimezone(tz), end.astimezone(tz)
    if local_start.date() == local_end.date():
        return f"{local_start:%A %-d %B %Y, %H:%M} {DASH} {local_end:%H:%M}"
    return f"{local_start:%a %-d %b %Y, %H:%M} {DASH} {local_end:%a %-d %b %Y, %H:%M}"


def timestamp(ms: int) -> str:
    """A position in a recording: "mm:ss", or "h:mm:ss" from an hour on."""
    seconds = max(0, int(ms)) // 1000
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes:02d}:{seconds:02d}"


def _marked(text: str, pattern: re.Pattern[str] | None) -> SafeString:
    if pattern is None:
        return SafeString(escape(text))
    parts = pattern.split(text)
    # split() with one group: the odd items are the matches.
    return SafeString(
        "".join(
            f"<mark>{escape(part)}</mark>" if n % 2 else str(escape(part))
            for n, part in enumerate(parts)
        )
    )


def _source(transcript: Transcript) -> str:
    if transcript.source_name:
        return transcript.source_name
    if transcript.agent:
        model = f" ({transcript.model})" if transcript.model else ""
        return f"{transcript.agent.removeprefix('agent:')}{model}, an agent"
    return f"a {transcript.kind or 'transcript'} file"


LINES_BEFORE = 50  # lines shown before a line the page is opened at, past the first ones


def transcript_view(*, meeting: Meeting, q: str = "", line: int | None = None) -> TranscriptView:
    """The meeting's transcript lines as speaker turns; with `q`, only the lines holding
    every one of its words (any case), the words marked. Opened at `line` (a segment's id,
    as a search hit links to it) that lies past the first SEGMENT_LIMIT lines, the lines
    start a little before it instead, so that it is on the page."""
    query = " ".join(q.split())[:QUERY_MAX]
    words = [word for word in query.split(" ") if word][:10]
    segments = Segment.objects.filter(transcript__meeting=meeting).select_related(
        "transcript__recording"
    )
    for word in words:
        segments = segments.filter(text__icontains=word)
    starts_later = False
    if line is not None and not words:
        target = segments.filter(pk=line).values_list("transcript_id", "seq").first()
        if target is not None:
            transcript_id, seq = target
            earlier = Q(transcript_id__lt=transcript_id) | Q(
                transcript_id=transcript_id, seq__lt=seq
            )
            if segments.filter(earlier).count() >= SEGMENT_LIMIT - LINES_BEFORE:
                starts_later = True
                segments = segments.filter(
                    Q(transcript_id__gt=transcript_id)
                    | Q(transcript_id=transcript_id, seq__gte=seq - LINES_BEFORE)
                )
    rows = list(segments.order_by("transcript_id", "seq")[: SEGMENT_LIMIT + 1])
    truncated = len(rows) > SEGMENT_LIMIT
    rows = rows[:SEGMENT_LIMIT]
    pattern = (
        re.compile("(" + "|".join(re.escape(w) for w in words) + ")", re.IGNORECASE)
        if words
        else None
    )
    turns: list[Turn] = []
    sources: list[str] = []
    previous: Segment | None = None
    for segment in rows:
        source = _source(segment.transcript)
        if source not in sources:
            sources.append(source)
        recording = segment.transcript.recording
        line = Line(
            segment=segment,
            html=_marked(segment.text, pattern),
            at=timestamp(segment.start_ms),
            recording=recording if recording is not None and recording.path else None,
            seconds=media_seconds(segment.start_ms),
        )
        # A search's hits are not consecutive: each is a turn of its own unless it follows
        # the one before it directly.
        same_turn = (
            previous is not None
            and turns
            and previous.transcript_id == segment.transcript_id
            and previous.speaker == segment.speaker
            and (not words or previous.seq + 1 == segment.seq)
        )
        if same_turn:
            turns[-1].lines.append(line)
        else:
            turns.append(Turn(speaker=segment.speaker, at=line.at, lines=[line]))
        previous = segment
    if words:
        total = Segment.objects.filter(transcript__meeting=meeting).count()
        matches = len(rows)
    elif starts_later:
        total = matches = Segment.objects.filter(transcript__meeting=meeting).count()
    else:
        total = matches = len(rows)
    return TranscriptView(
        turns=turns,
        total=total,
        matches=matches,
        query=query,
        truncated=truncated,
        starts_later=starts_later,
        sources=sources,
    )


def media_seconds(ms: int) -> str:
    """A position as a media fragment's seconds (`#t=2`, `#t=2.5`): no trailing zeros."""
    whole, rest = divmod(max(0, int(ms)), 1000)
    return f"{whole}.{rest:03d}".rstrip("0").rstrip(".") if rest else str(whole)


def _playable(attachment: Attachment) -> bool:
    return bool(attachment.path) and attachment.mime_type.lower().startswith(("audio/", "video/"))


def recordings_of(transcripts: list[Transcript]) -> list[Recording]:
    """The stored recordings of the transcripts (each once, in the transcripts' order)."""
    found: dict[int, Recording] = {}
    for transcript in transcripts:
        attachment = transcript.recording
        if attachment is None or not attachment.path or attachment.pk in found:
            continue
        video = attachment.mime_type.lower().startswith("video/")
        found[attachment.pk] = Recording(attachment=attachment, video=video)
    return list(found.values())


def recording_candidates(*, meeting: Meeting, messages: list[Message]) -> list[Attachment]:
    """The audio and video whose bytes are stored, of the messages linked to the meeting
    and of the messages with its participants around it (`messages`): what the owner may
    pick as a transcript's recording (the recordings already set among them)."""
    linked = MeetingLink.objects.filter(meeting=meeting, kind=MeetingLink.Kind.MESSAGE).values(
        "target_id"
    )
    current = Transcript.objects.filter(meeting=meeting, recording__isnull=False).values(
        "recording_id"
    )
    rows = (
        Attachment.objects.filter(
            Q(message_id__in=linked)
            | Q(message_id__in=[m.pk for m in messages])
            | Q(pk__in=current)
        )
        .filter(path__isnull=False)
        .filter(Q(mime_type__istartswith="audio/") | Q(mime_type__istartswith="video/"))
        .select_related("message")
        .order_by("message__sent_at", "pk")[:CANDIDATES_LIMIT]
    )
    return [row for row in rows if _playable(row)]


def meeting_transcript(*, public_id: str, transcript: str = "") -> Transcript | None:
    """The meeting's transcript `transcript` (its id as text), else its first; None when
    the meeting has no such transcript (a bad id names none)."""
    rows = Transcript.objects.filter(meeting__public_id=public_id[:40]).order_by("pk")
    wanted = transcript.strip()
    if not wanted:
        return rows.first()
    if not wanted.isdigit() or len(wanted) > 18:
        return None
    return rows.filter(pk=int(wanted)).first()


def messages_around(*, meeting: Meeting, participants: list[Participant]) -> list[Message]:
    """Messages from the participants (any identity of their people) within two days of
    the meeting, in one query."""
    identity_ids = {p.identity_id for p in participants if p.identity_id is not None}
    person_ids = {
        p.identity.person_id
        for p in participants
        if p.identity is not None and p.identity.person_id is not None
    }
    if not identity_ids:
        return []
    senders = Identity.objects.filter(Q(pk__in=identity_ids) | Q(person_id__in=person_ids))
    return list(
        Message.objects.filter(
            sender_id__in=senders.values("pk"),
            sent_at__gte=meeting.start - MESSAGES_AROUND,
            sent_at__lte=meeting.end + MESSAGES_AROUND,
            deleted_at__isnull=True,
        )
        .select_related("chat", "sender")
        .order_by("sent_at", "id")[:MESSAGES_LIMIT]
    )


def tasks_linked(*, meeting: Meeting) -> list[Task]:
    """Tasks that link here: the meeting's links of kind task, and tasks whose description
    carries its reference (`meeting:<public id>`, as "make a task from this line" writes)."""
    ids = MeetingLink.objects.filter(meeting=meeting, kind=MeetingLink.Kind.TASK).values(
        "target_id"
    )
    return list(
        Task.objects.filter(Q(pk__in=ids) | Q(description__contains=meeting.reference))
        .select_related("project")
        .order_by("id")[:100]
    )


def segment_line(*, public_id: str, at_ms: int) -> tuple[Meeting, Segment] | None:
    """A meeting's transcript line at `at_ms` (the first one starting there), or None."""
    segment = (
        Segment.objects.filter(transcript__meeting__public_id=public_id[:40], start_ms=at_ms)
        .select_related("transcript__meeting")
        .order_by("transcript_id", "seq")
        .first()
    )
    return (segment.transcript.meeting, segment) if segment is not None else None


def segment_reference(meeting: Meeting, segment: Segment) -> str:
    """A task's description for a transcript line: who said what, when, and a link back
    (markdown), with the meeting's stable reference."""
    who = segment.speaker or "Someone"
    title = meeting.title or "a meeting"
    return (
        f"From [{title}](/meetings/{meeting.public_id}/#seg-{segment.pk}) at "
        f"{timestamp(segment.start_ms)}, {who} said:\n\n> {' '.join(segment.text.split())}\n\n"
        f"({meeting.reference})"
    )


# --- a rule in plain words ---------------------------------------------------------------------

_FREQ = {"DAILY": "day", "WEEKLY": "week", "MONTHLY": "month", "YEARLY": "year"}
_DAYS = {
    "MO": "Monday",
    "TU": "Tuesday",
    "WE": "Wednesday",
    "TH": "Thursday",
    "FR": "Friday",
    "SA": "Saturday",
    "SU": "Sunday",
}
_NTH = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", -1: "last"}
_SIMPLE = {"FREQ", "INTERVAL", "BYDAY", "BYMONTHDAY", "COUNT", "UNTIL", "WKST"}
_BYDAY = re.compile(r"^([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)$")


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def rrule_text(rule: str) -> str:
    """An RRULE in plain words when it is a simple one ("every week on Tuesday"), else the
    rule as written; "" for no rule."""
    rule = rule.strip()
    if rule.upper().startswith("RRULE:"):
        rule = rule[6:]
    if not rule:
        return ""
    try:
        parts = dict(part.split("=", 1) for part in rule.upper().split(";") if part)
    except ValueError:
        return rule
    freq = parts.get("FREQ", "")
    if freq not in _FREQ or not set(parts) <= _SIMPLE:
        return rule
    interval = parts.get("INTERVAL", "1")
    if not interval.isdigit() or int(interval) < 1:
        return rule
    unit = _FREQ[freq]
    words = f"every {unit}" if interval == "1" else f"every {int(interval)} {unit}s"
    if "BYDAY" in parts:
        days: list[str] = []
        for token in parts["BYDAY"].split(","):
            found = _BYDAY.match(token)
            if found is None:
                return rule
            nth, name = found.groups()
            if nth:
                if int(nth) not in _NTH or freq not in ("MONTHLY", "YEARLY"):
                    return rule
                days.append(f"the {_NTH[int(nth)]} {_DAYS[name]}")
            else:
                days.append(_DAYS[name])
        if set(parts["BYDAY"].split(",")) == {"MO", "TU", "WE", "TH", "FR"} and freq == "WEEKLY":
            words += " on weekdays"
        else:
            words += " on " + _and(days)
    if "BYMONTHDAY" in parts:
        numbers = parts["BYMONTHDAY"].split(",")
        if not all(n.lstrip("-").isdigit() for n in numbers):
            return rule
        named = ["the last day" if n == "-1" else f"day {int(n)}" for n in numbers]
        words += " on " + _and(named)
    if "COUNT" in parts:
        if not parts["COUNT"].isdigit():
            return rule
        count = int(parts["COUNT"])
        words += ", once" if count == 1 else f", {count} times"
    if "UNTIL" in parts:
        until = parts["UNTIL"][:8]
        try:
            words += f", until {datetime.strptime(until, '%Y%m%d'):%-d %B %Y}"
        except ValueError:
            return rule
    return words


# --- for the services ---


@dataclass(frozen=True)
class ParticipantPerson:
    """A participant and the person their identity belongs to (None: no person yet)."""

    participant: Participant
    person: Person | None


def meeting_participants(meeting: Meeting) -> list[ParticipantPerson]:
    """The meeting's participants (organizer first, then by name and address), each with
    the person reached through their identity — never through a display name. One query."""
    rows = (
        Participant.objects.filter(meeting=meeting)
        .select_related("identity__person")
        .order_by("name", "email", "pk")
    )
    out = [
        ParticipantPerson(
            participant=row,
            person=row.identity.person if row.identity is not None else None,
        )
        for row in rows
    ]
    out.sort(key=lambda item: item.participant.role != "organizer")
    return out
