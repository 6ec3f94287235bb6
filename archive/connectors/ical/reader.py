"""Read an iCalendar file (RFC 5545) into `meetings.domain.CalendarRead`.

Parsing is `icalendar`'s, recurrence is `recurring-ical-events`' (RRULE, RDATE, EXDATE,
RECURRENCE-ID overrides with their SEQUENCE), X-WR-TIMEZONE is `x-wr-timezone`'s. What this
module adds is the untrusted-input side:

- lines that are not iCalendar content lines are dropped, each with a problem sentence;
- an event is read on its own: a broken one (no DTSTART, an RRULE that cannot be read)
  becomes a problem sentence naming the file and its UID, and the rest of the file imports;
- an unknown TZID is read as UTC (a floating time likewise), with a problem sentence;
- a series is expanded only inside the window (default WIRECAT_MEETINGS_PAST_DAYS back to
  WIRECAT_MEETINGS_AHEAD_DAYS ahead), and never to more than WIRECAT_MEETINGS_MAX_OCCURRENCES
  occurrences; a rule that repeats every second or minute, or whose days never exist
  (February 30th), keeps only its first occurrence;
- the file's size is capped (WIRECAT_MEETINGS_MAX_ICS_BYTES) before anything is parsed.

A file that is not iCalendar at all, or whose structure cannot be parsed, raises
`FormatError` (archive.connectors.base), like every export reader.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import icalendar
import x_wr_timezone
from icalendar.timezone.windows_to_olson import WINDOWS_TO_OLSON
from recurring_ical_events import CalendarQuery

from archive.connectors.base import FormatError
from archive.connectors.limits import MIB, size_text
from meetings.domain import (
    CalendarRead,
    EventRecord,
    OccurrenceRecord,
    ParticipantRecord,
    Response,
    Status,
)

PAST_SETTING = "WIRECAT_MEETINGS_PAST_DAYS"
AHEAD_SETTING = "WIRECAT_MEETINGS_AHEAD_DAYS"
OCCURRENCES_SETTING = "WIRECAT_MEETINGS_MAX_OCCURRENCES"
BYTES_SETTING = "WIRECAT_MEETINGS_MAX_ICS_BYTES"
DEFAULT_PAST_DAYS = 5 * 365
DEFAULT_AHEAD_DAYS = 730
DEFAULT_MAX_OCCURRENCES = 5000
DEFAULT_MAX_BYTES = 64 * MIB

# A rule whose steps from its DTSTART to the window's end (rule steps the expansion walks,
# even before the window) exceed this is not expanded: dateutil walks every one of them.
_STEP_BUDGET = 1_000_000

_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
# A content line: a name (IANA token or X- name), then its parameters or its value.
_CONTENT_LINE = re.compile(r"^[A-Za-z0-9-]+[;:]")
_URL = re.compile(r"https?://[^\s<>\"'\\]+", re.IGNORECASE)
# Hosts of the meeting services whose links count as a join link wherever they appear.
_MEETING_HOST = re.compile(
    r"^https?://([a-z0-9-]+\.)*("
    r"zoom\.us|zoomgov\.com|meet\.google\.com|teams\.microsoft\.com|teams\.live\.com|"
    r"webex\.com|whereby\.com|meet\.jit\.si|gotomeeting\.com|gotomeet\.me|chime\.aws|"
    r"bluejeans\.com|skype\.com"
    r")(/|$)",
    re.IGNORECASE,
)
# Properties that hold nothing but the meeting's link, as the big calendars write them.
_CONFERENCE_PROPERTIES = (
    "X-GOOGLE-CONFERENCE",
    "X-MICROSOFT-SKYPETEAMSMEETINGURL",
    "X-MICROSOFT-ONLINEMEETINGCONFLINK",
    "X-MICROSOFT-ONLINEMEETINGEXTERNALLINK",
    "X-ZOOM-MEETING-URL",
    "X-WEBEX-MEETING-URL",
    "CONFERENCE",
)
_RESPONSES = {
    "ACCEPTED": Response.ACCEPTED,
    "DECLINED": Response.DECLINED,
    "TENTATIVE": Response.TENTATIVE,
    "NEEDS-ACTION": Response.NEEDS_ACTION,
    "DELEGATED": Response.DELEGATED,
}
_ROLES = {
    "CHAIR": "chair",
    "REQ-PARTICIPANT": "required",
    "OPT-PARTICIPANT": "optional",
    "NON-PARTICIPANT": "non-participant",
}
_STATUSES = {
    "CONFIRMED": Status.CONFIRMED,
    "TENTATIVE": Status.TENTATIVE,
    "CANCELLED": Status.CANCELLED,
}
_METHODS = ("PUBLISH", "REQUEST", "REPLY", "CANCEL", "ADD", "REFRESH", "COUNTER", "DECLINECOUNTER")
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_FREQ_STEP = {
    "SECONDLY": timedelta(seconds=1),
    "MINUTELY": timedelta(minutes=1),
    "HOURLY": timedelta(hours=1),
}
# What reading one event can raise from the libraries on hostile input: their own errors
# derive from ValueError; the rest are what malformed values lead them into.
_EVENT_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    TypeError,
    LookupError,
    AttributeError,
    ArithmeticError,
)


# --- detection and decoding -----------------------------------------------------------------


def _decode(data: bytes) -> str:
    """The file's text: UTF-8 (or UTF-16 after its BOM); other bytes read as Windows-1252,
    what Outlook writes when it does not write UTF-8, undefined bytes replaced."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(encoding, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def looks_like_calendar(head: bytes) -> bool:
    """True when `head` (a file's first bytes, a KB is plenty) starts an iCalendar file:
    BEGIN:VCALENDAR after an optional BOM and blank lines, any case, CRLF or LF."""
    text = _decode(head[:4096])
    return text.lstrip().upper().startswith("BEGIN:VCALENDAR")


# --- the window and the caps ----------------------------------------------------------------


@dataclass(frozen=True)
class _Config:
    window: tuple[datetime, datetime]
    max_occurrences: int
    max_bytes: int


def _setting(name: str, default: int) -> int:
    from django.conf import settings

    value = getattr(settings, name, default)
    return value if isinstance(value, int) else default


def _config(window: tuple[datetime, datetime] | None) -> _Config:
    if window is None:
        now = datetime.now(UTC)
        window = (
            now - timedelta(days=_setting("MEETINGS_PAST_DAYS", DEFAULT_PAST_DAYS)),
            now + timedelta(days=_setting("MEETINGS_AHEAD_DAYS", DEFAULT_AHEAD_DAYS)),
        )
    start, end = window
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError("the window must be timezone-aware")
    return _Config(
        window=(start.astimezone(UTC), end.astimezone(UTC)),
        max_occurrences=max(1, _setting("MEETINGS_MAX_OCCURRENCES", DEFAULT_MAX_OCCURRENCES)),
        max_bytes=_setting("MEETINGS_MAX_ICS_BYTES", DEFAULT_MAX_BYTES),
    )


# --- lines ----------------------------------------------------------------------------------


@dataclass
class _Lines:
    text: str
    event_lines: list[int] = field(default_factory=list)  # line of each BEGIN:VEVENT
    problems: list[str] = field(default_factory=list)


def _snippet(text: str, limit: int = 40) -> str:
    cleaned = "".join(ch if ch.isprintable() else " " for ch in text).strip()
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


def _clean_lines(text: str, source: str) -> _Lines:
    """Unfold the lines (a line starting with a space or tab continues the one before) and
    drop those that are not content lines, each with a problem sentence."""
    logical: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line[:1] in (" ", "\t") and logical:
            first, before = logical[-1]
            logical[-1] = (first, before + line[1:])
        else:
            logical.append((number, line))
    kept: list[str] = []
    found = _Lines(text="")
    for number, line in logical:
        if not line.strip():
            continue
        if not _CONTENT_LINE.match(line):
            found.problems.append(
                f"{source}, line {number}: not an iCalendar line ({_snippet(line)!r}); "
                "it was skipped"
            )
            continue
        if line.upper().startswith("BEGIN:VEVENT"):
            found.event_lines.append(number)
        kept.append(line)
    found.text = "\r\n".join(kept) + "\r\n"
    return found


# --- values ---------------------------------------------------------------------------------


def _text(component: Any, name: str) -> str:
    value = component.get(name)
    if value is None:
        return ""
    if isinstance(value, list):
        value = value[0] if value else ""
    return str(value).strip()


def _to_utc(value: date | datetime) -> datetime:
    """A start or end in UTC: a date is midnight UTC of that day, a floating time is UTC."""
    if not isinstance(value, datetime):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _iana(name: str) -> str:
    """The IANA name for a TZID or X-WR-TIMEZONE (Windows names mapped), "" when unknown."""
    cleaned = name.strip().strip("/")
    if not cleaned or cleaned.upper() in ("UTC", "GMT", "Z", "ETC/UTC", "ETC/GMT", "UCT"):
        return ""
    if cleaned in WINDOWS_TO_OLSON:
        return _iana(WINDOWS_TO_OLSON[cleaned]) if WINDOWS_TO_OLSON[cleaned] != cleaned else ""
    try:
        ZoneInfo(cleaned)
    except (ZoneInfoNotFoundError, ValueError):
        return ""
    return cleaned


def _zone_of(value: object, tzid: str) -> str:
    if not isinstance(value, datetime) or value.tzinfo is None:
        return ""
    key = getattr(value.tzinfo, "key", None)
    if isinstance(key, str) and key:
        return _iana(key)
    return _iana(tzid) if tzid else ""


def _links(text: str) -> Iterator[str]:
    for match in _URL.finditer(text):
        yield match.group(0).rstrip(".,;)>]")


def _join_url(component: Any) -> str:
    """A meeting link: a conference property, the URL (any https link), then a meeting
    service's link in LOCATION or DESCRIPTION."""
    for name in _CONFERENCE_PROPERTIES:
        for link in _links(_text(component, name)):
            return link
    for link in _links(_text(component, "URL")):
        if link.lower().startswith("https://") or _MEETING_HOST.match(link):
            return link
    for name in ("LOCATION", "DESCRIPTION"):
        for link in _links(_text(component, name)):
            if _MEETING_HOST.match(link):
                return link
    return ""


def _address(value: Any) -> tuple[str, dict[str, str]]:
    params = {str(key).upper(): str(item) for key, item in getattr(value, "params", {}).items()}
    return str(value).strip(), params


def _participant(value: Any, *, organizer: bool = False) -> ParticipantRecord:
    raw, params = _address(value)
    email = ""
    if raw.lower().startswith("mailto:"):
        email = raw[len("mailto:") :]
    elif "@" in params.get("EMAIL", ""):
        email = params["EMAIL"]
    elif "@" in raw and ":" not in raw:
        email = raw
    name = params.get("CN", "").strip().strip('"').strip()
    return ParticipantRecord(
        email=email.strip().lower(),
        name=name,
        response=_RESPONSES.get(params.get("PARTSTAT", "").upper(), Response.UNKNOWN),
        role="organizer" if organizer else _ROLES.get(params.get("ROLE", "").upper(), ""),
    )


def _attendees(component: Any) -> tuple[ParticipantRecord, ...]:
    found = component.get("ATTENDEE")
    if found is None:
        return ()
    values = found if isinstance(found, list) else [found]
    return tuple(_participant(value) for value in values)


def _organizer(component: Any) -> ParticipantRecord | None:
    found = component.get("ORGANIZER")
    if found is None:
        return None
    if isinstance(found, list):
        if not found:
            return None
        found = found[0]
    return _participant(found, organizer=True)


def _status(component: Any, method: str) -> str:
    if method == "CANCEL":
        return Status.CANCELLED
    return _STATUSES.get(_text(component, "STATUS").upper(), Status.CONFIRMED)


def _sequence(component: Any) -> int:
    try:
        return max(0, int(str(component.get("SEQUENCE", 0)).strip()))
    except ValueError:
        return 0


def _dt(component: Any, name: str) -> Any:
    prop = component.get(name)
    return getattr(prop, "dt", None)


def _tzid(component: Any, name: str) -> str:
    prop = component.get(name)
    params = getattr(prop, "params", None) or {}
    return str(params.get("TZID", ""))


# --- one event ------------------------------------------------------------------------------


@dataclass
class _Group:
    """The VEVENTs sharing one UID: the master (if any) and its overrides."""

    uid: str
    where: str  # "UID x" or "the event at line n", for problem sentences
    components: list[Any] = field(default_factory=list)


class _Skip(Exception):
    """This event cannot be read; the message says why (a problem sentence's middle)."""


def _rule_parts(rule: Any) -> dict[str, list[str]]:
    return {str(key).upper(): [str(item).upper() for item in value] for key, value in rule.items()}


def _never_happens(parts: dict[str, list[str]]) -> bool:
    """Whether BYMONTH and BYMONTHDAY name only days that do not exist (February 30th):
    dateutil would search every year up to 9999 for one."""
    try:
        months = [int(month) for month in parts.get("BYMONTH", [])] or list(range(1, 13))
        days = [int(day) for day in parts.get("BYMONTHDAY", [])]
    except ValueError:
        return False
    if not days:
        return False
    return all(
        abs(day) > _DAYS_IN_MONTH[month - 1] for month in months if 1 <= month <= 12 for day in days
    )


def _rule_problem(master: Any, config: _Config) -> str:
    """Why the master's RRULE is not expanded ("" when it is fine)."""
    for name, message in getattr(master, "errors", []) or []:
        if str(name).upper() == "RRULE":
            return f"its RRULE cannot be read ({_snippet(str(message), 80)})"
    rules = master.get("RRULE")
    if rules is None:
        return ""
    for rule in rules if isinstance(rules, list) else [rules]:
        if not hasattr(rule, "items"):
            return "its RRULE cannot be read"
        parts = _rule_parts(rule)
        frequency = (parts.get("FREQ") or [""])[0]
        if frequency in ("SECONDLY", "MINUTELY"):
            return f"it repeats every {frequency[:-2].lower()}, more often than any meeting"
        if _never_happens(parts):
            return "its RRULE names only days that do not exist"
        start = _dt(master, "DTSTART")
        if isinstance(start, date) and frequency in _FREQ_STEP:
            try:
                interval = max(1, int((parts.get("INTERVAL") or ["1"])[0]))
            except ValueError:
                interval = 1
            span = config.window[1] - _to_utc(start)
            steps = span / (_FREQ_STEP[frequency] * interval)
            for name in ("BYMINUTE", "BYSECOND"):
                steps *= max(1, len(parts.get(name, [])))
            if steps > _STEP_BUDGET:
                return f"it repeats every {interval} hour(s) since {start:%Y-%m-%d}, too often"
    return ""


def _without_recurrence(component: Any) -> Any:
    for name in ("RRULE", "RDATE", "EXRULE"):
        if name in component:
            del component[name]
    return component


def _occurrence_record(
    occurrence: Any,
    *,
    override: Any | None,
    master_duration: timedelta | None,
    master_sequence: int,
    method: str,
) -> OccurrenceRecord:
    component = occurrence.as_component(False)
    start_value = _dt(component, "DTSTART")
    end_value = _dt(component, "DTEND")
    all_day = not isinstance(start_value, datetime)
    start = _to_utc(start_value)
    end = _to_utc(end_value) if end_value is not None else start
    if all_day and end <= start:
        end = start + timedelta(days=1)
    if end < start:
        end = start
    recurrence_value = _dt(component, "RECURRENCE-ID")
    recurrence_id = _to_utc(recurrence_value) if recurrence_value is not None else start
    moved = False
    participants: tuple[ParticipantRecord, ...] | None = None
    if override is not None:
        moved = start != recurrence_id or (
            master_duration is not None and end - start != master_duration
        )
        if override.get("ATTENDEE") is not None:
            participants = _attendees(override)
    return OccurrenceRecord(
        recurrence_id=recurrence_id,
        start=start,
        end=end,
        all_day=all_day,
        status=_status(component, method),
        moved=moved,
        title=_text(component, "SUMMARY"),
        description=_text(component, "DESCRIPTION"),
        location=_text(component, "LOCATION"),
        join_url=_join_url(component),
        # The library stamps every occurrence with the series' highest SEQUENCE; an
        # occurrence's own is its override's, else its master's.
        sequence=_sequence(override) if override is not None else master_sequence,
        participants=participants,
    )


def _key(value: Any) -> datetime | None:
    return None if value is None else _to_utc(value)


def _expand(
    master: Any | None, overrides: list[Any], config: _Config, method: str
) -> tuple[tuple[OccurrenceRecord, ...], bool]:
    """The group's occurrences inside the window, sorted, and whether the cap cut them."""
    calendar = icalendar.Calendar()
    for component in ([master] if master is not None else []) + overrides:
        calendar.add_component(component)
    query = CalendarQuery(calendar)
    by_recurrence_id = {_key(_dt(item, "RECURRENCE-ID")): item for item in overrides}
    master_duration = None
    if master is not None:
        start, end = _dt(master, "DTSTART"), _dt(master, "DTEND")
        if start is not None and end is not None and type(start) is type(end):
            master_duration = _to_utc(end) - _to_utc(start)
    found: list[OccurrenceRecord] = []
    seen: set[tuple[datetime, datetime]] = set()
    window_start, window_end = config.window
    for series in query.series:
        for occurrence in series.between(window_start, window_end):
            recurrence_value = _dt(occurrence.as_component(False), "RECURRENCE-ID")
            override = by_recurrence_id.get(_key(recurrence_value))
            record = _occurrence_record(
                occurrence,
                override=override,
                master_duration=master_duration,
                master_sequence=_sequence(master) if master is not None else 0,
                method=method,
            )
            if (record.recurrence_id, record.start) in seen:
                continue
            seen.add((record.recurrence_id, record.start))
            if len(found) >= config.max_occurrences:
                found.sort(key=lambda item: (item.start, item.recurrence_id))
                return tuple(found), True
            found.append(record)
    found.sort(key=lambda item: (item.start, item.recurrence_id))
    return tuple(found), False


def _read_event(
    group: _Group, config: _Config, method: str, source: str, problems: list[str]
) -> EventRecord:
    masters = [item for item in group.components if item.get("RECURRENCE-ID") is None]
    overrides = [item for item in group.components if item.get("RECURRENCE-ID") is not None]
    # Two masters for one UID: the highest SEQUENCE wins, as recurring-ical-events decides.
    master = max(masters, key=_sequence) if masters else None
    lead = master if master is not None else max(overrides, key=_sequence)
    usable: list[Any] = []
    for component in ([master] if master is not None else []) + overrides:
        start = _dt(component, "DTSTART")
        if not isinstance(start, date):
            if component is master:
                raise _Skip("no DTSTART")
            problems.append(
                f"{source}, {group.where}: the change to its occurrence of "
                f"{_dt(component, 'RECURRENCE-ID')} has no DTSTART; it was skipped"
            )
            continue
        for name in ("DTSTART", "DTEND"):
            value, tzid = _dt(component, name), _tzid(component, name)
            if tzid and isinstance(value, datetime) and value.tzinfo is None:
                problems.append(
                    f"{source}, {group.where}: unknown time zone {_snippet(tzid)!r} in "
                    f"{name}; its times were read as UTC"
                )
                break
        usable.append(component)
    if master is not None and master in usable:
        why = _rule_problem(master, config)
        if why:
            problems.append(f"{source}, {group.where}: {why}; only its first occurrence was kept")
            master = _without_recurrence(master)
    overrides = [item for item in overrides if item in usable]
    if master is None and not overrides:
        raise _Skip("no occurrence with a DTSTART")
    occurrences, capped = _expand(master, overrides, config, method)
    if capped:
        problems.append(
            f"{source}, {group.where}: more than {config.max_occurrences:,} occurrences in "
            f"the window; the first {config.max_occurrences:,} were kept ({OCCURRENCES_SETTING})"
        )
    rrule = ""
    if master is not None and master.get("RRULE") is not None:
        rules = master.get("RRULE")
        rrule = "\n".join(
            rule.to_ical().decode("utf-8", "replace")
            for rule in (rules if isinstance(rules, list) else [rules])
        )
    return EventRecord(
        uid=group.uid,
        title=_text(lead, "SUMMARY"),
        description=_text(lead, "DESCRIPTION"),
        location=_text(lead, "LOCATION"),
        join_url=_join_url(lead),
        time_zone=_zone_of(_dt(lead, "DTSTART"), _tzid(lead, "DTSTART")),
        sequence=max(_sequence(item) for item in group.components),
        status=_status(lead, method),
        rrule=rrule,
        organizer=_organizer(lead),
        participants=_attendees(lead),
        occurrences=occurrences,
    )


def _groups(events: Iterable[Any], lines: list[int]) -> list[_Group]:
    """The VEVENTs by UID, in the order each UID first appears; an event without a UID is
    given one from its content, so that reading the file again gives the same."""
    found: dict[str, _Group] = {}
    for index, component in enumerate(events):
        uid = _text(component, "UID")
        line = lines[index] if index < len(lines) else 0
        if not uid:
            digest = hashlib.sha256(component.to_ical()).hexdigest()[:24]
            uid = f"wirecat-{digest}"
            where = f"the event at line {line}" if line else f"the event {uid}"
        else:
            where = f"UID {_snippet(uid, 80)}"
        group = found.setdefault(uid, _Group(uid=uid, where=where))
        group.components.append(component)
    return list(found.values())


# --- the file -------------------------------------------------------------------------------


def _parse(text: str, source: str) -> list[Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = icalendar.Calendar.from_ical(text, multiple=True)
    except _EVENT_ERRORS as exc:
        raise FormatError(
            source, "its structure", f"cannot be read as iCalendar ({_snippet(str(exc), 120)})"
        ) from exc
    calendars = [item for item in parsed if getattr(item, "name", "") == "VCALENDAR"]
    if not calendars:
        raise FormatError(source, "the start", "holds no VCALENDAR")
    return calendars


def _standard(calendar: Any, source: str, problems: list[str]) -> Any:
    """The calendar with X-WR-TIMEZONE applied (UTC and floating times moved into it)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return x_wr_timezone.to_standard(calendar)
    except _EVENT_ERRORS:  # an unknown zone: ZoneInfoNotFoundError is a KeyError
        problems.append(
            f"{source}: X-WR-TIMEZONE {_snippet(_text(calendar, 'X-WR-TIMEZONE'))!r} is not a "
            "time zone WireCat knows; times were read as written"
        )
        return calendar


def read_calendar(
    data: bytes, *, source: str, window: tuple[datetime, datetime] | None = None
) -> CalendarRead:
    """What the iCalendar file `data` holds. `source` (its file name) names it in problem
    sentences; occurrences are expanded inside `window` (UTC-aware; default the settings'
    window around now). Raises FormatError when `data` is not iCalendar, or too large."""
    config = _config(window)
    if len(data) > config.max_bytes:
        raise FormatError(
            source,
            "the whole file",
            f"holds {size_text(len(data))}, more than a calendar file may "
            f"({size_text(config.max_bytes)}, {BYTES_SETTING})",
        )
    text = _decode(data)
    if not looks_like_calendar(text[:4096].encode("utf-8", "replace")):
        raise FormatError(source, "the start", "not an iCalendar file (no BEGIN:VCALENDAR)")
    lines = _clean_lines(text, source)
    problems = list(lines.problems)
    calendars = [_standard(item, source, problems) for item in _parse(lines.text, source)]
    first = calendars[0]
    method = _text(first, "METHOD").upper()
    zone_name = _text(first, "X-WR-TIMEZONE")
    events: list[Any] = []
    for calendar in calendars:
        events.extend(calendar.walk("VEVENT"))
    records: list[EventRecord] = []
    for group in _groups(events, lines.event_lines):
        try:
            records.append(_read_event(group, config, method, source, problems))
        except _Skip as skip:
            problems.append(f"{source}, {group.where}: {skip}; the event was skipped")
        except _EVENT_ERRORS as exc:
            problems.append(
                f"{source}, {group.where}: cannot be read ({_snippet(str(exc), 80)}); "
                "the event was skipped"
            )
    return CalendarRead(
        name=_text(first, "X-WR-CALNAME"),
        time_zone=_iana(zone_name) if zone_name else "",
        method=method if method in _METHODS else "",
        events=tuple(records),
        problems=tuple(problems),
        window_start=config.window[0],
        window_end=config.window[1],
    )


__all__ = ["looks_like_calendar", "read_calendar"]
