"""The calendar: a month, a week, an agenda of meetings in the owner's time zone (a
timed meeting in the current time zone; an all-day one on its own dates, which `domain.py`
stores as midnight UTC)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from django.db.models import QuerySet
from django.utils import timezone

from meetings.models import Meeting, Status

VIEWS = ("month", "week", "agenda")
MONTH_CELL_ITEMS = 3  # a month's day shows this many, then "+N more"
AGENDA_DAYS = 14
CALENDAR_LIMIT = 3000  # meetings read for one page of the calendar, at most
WEEK_FIRST_HOUR, WEEK_LAST_HOUR = 8, 19  # the week view's hours when nothing is earlier/later
MAX_LANES = 3  # side-by-side meetings in a week's day column

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
