"""The iCalendar reader (archive/connectors/ical/): every quirk of issue 17 on real-format
fixtures (tests/fixtures/ical/), the shared Google sample, and hostile input."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from archive.connectors.base import FormatError
from archive.connectors.ical import looks_like_calendar, read_calendar
from meetings.domain import CalendarRead, EventRecord, Response, Status
from tests.connectors.conftest import FIXTURES, SAMPLES

ICAL = FIXTURES / "ical"
WINDOW = (datetime(2020, 1, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def read(name: str, window: tuple[datetime, datetime] = WINDOW) -> CalendarRead:
    return read_calendar((ICAL / name).read_bytes(), source=name, window=window)


def event(found: CalendarRead, title: str) -> EventRecord:
    (match,) = [item for item in found.events if item.title == title]
    return match


# --- detection ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\n", True),
        (b"BEGIN:VCALENDAR\nVERSION:2.0\n", True),
        (b"\xef\xbb\xbfBEGIN:VCALENDAR\r\n", True),
        (b"\r\n\r\n  begin:vcalendar\r\n", True),
        ("BEGIN:VCALENDAR\r\n".encode("utf-16"), True),
        (b"WEBVTT\n\n00:00.000 --> 00:01.000\nhello", False),
        (b"12/31/20, 21:04 - Ann: BEGIN:VCALENDAR", False),
        (b"", False),
        (b"\xff\xfe\x00\x00garbage", False),
    ],
)
def test_looks_like_calendar(head: bytes, expected: bool) -> None:
    assert looks_like_calendar(head) is expected


def test_every_fixture_is_detected() -> None:
    for path in ICAL.glob("*.ics"):
        assert looks_like_calendar(path.read_bytes()[:1024]), path.name


# --- recurrence -----------------------------------------------------------------------------


def test_last_friday_with_until_in_a_windows_zone_from_1601() -> None:
    found = read("outlook_windows_zones_1601.ics")
    assert found.method == "REQUEST"
    review = event(found, "Monthly review")
    assert review.time_zone == "Europe/London"  # "GMT Standard Time"
    assert review.rrule.startswith("FREQ=MONTHLY") and "BYDAY=-1FR" in review.rrule
    # The last Friday of each month to UNTIL, 11:00 London: GMT, then BST from March 30th.
    assert [item.start for item in review.occurrences] == [
        utc(2025, 1, 31, 11),
        utc(2025, 2, 28, 11),
        utc(2025, 3, 28, 11),
        utc(2025, 4, 25, 10),
        utc(2025, 5, 30, 10),
        utc(2025, 6, 27, 10),
    ]
    assert all(item.end - item.start == timedelta(hours=1) for item in review.occurrences)
    assert review.join_url.startswith("https://teams.microsoft.com/l/meetup-join/19%3ameeting_")
    assert review.sequence == 2


def test_count_and_interval_in_atlantic_standard_time() -> None:
    standup = event(read("outlook_windows_zones_1601.ics"), "Halifax stand-up")
    assert standup.time_zone == "America/Halifax"
    # Every other Thursday, 4 times, 09:00 Halifax: AST (-4) until March 9th, then ADT (-3).
    assert [item.start for item in standup.occurrences] == [
        utc(2025, 2, 20, 13),
        utc(2025, 3, 6, 13),
        utc(2025, 3, 20, 12),
        utc(2025, 4, 3, 12),
    ]
    assert [item.recurrence_id for item in standup.occurrences] == [
        item.start for item in standup.occurrences
    ]


def test_outlook_participants_and_organizer() -> None:
    review = event(read("outlook_windows_zones_1601.ics"), "Monthly review")
    assert review.organizer is not None
    assert review.organizer.email == "dana.whitfield@contoso.example"
    assert (review.organizer.name, review.organizer.role) == ("Dana Whitfield", "organizer")
    owner, ola = review.participants
    assert (owner.email, owner.name, owner.response, owner.role) == (
        "owner@wirecat.example",
        "Owner Person",
        Response.NEEDS_ACTION,
        "required",
    )
    # A CN in quotes, holding a comma and folded across two lines.
    assert (ola.email, ola.name, ola.response, ola.role) == (
        "ola@contoso.example",
        "Ola Nordmann, Sales",
        Response.TENTATIVE,
        "optional",
    )


def test_weekly_stays_at_nine_local_across_dst() -> None:
    planning = event(read("thunderbird_weekly_berlin_dst.ics"), "Weekly planning")
    assert planning.time_zone == "Europe/Berlin"
    # 09:00 Berlin every Wednesday: CET (UTC+1) until March 30th 2025, then CEST (UTC+2).
    assert [item.start for item in planning.occurrences] == [
        utc(2025, 3, 19, 8),
        utc(2025, 3, 26, 8),
        utc(2025, 4, 2, 7),
        utc(2025, 4, 9, 7),
    ]
    assert planning.join_url == "https://zoom.us/j/98765432100?pwd=abcDEF"  # from LOCATION


def test_overrides_before_their_master_exdates_and_a_cancelled_occurrence() -> None:
    found = read("google_overrides_before_master.ics")
    assert (found.name, found.time_zone, found.method) == ("Team", "Europe/Berlin", "PUBLISH")
    (series,) = found.events  # the overrides come first in the file: one event all the same
    assert series.title == "Team sync"
    assert series.rrule == "FREQ=WEEKLY;UNTIL=20250428T072959Z;BYDAY=MO;WKST=MO"
    assert series.sequence == 3
    assert series.join_url == "https://meet.google.com/abc-defg-hij"
    by_id = {item.recurrence_id: item for item in series.occurrences}
    # Mondays 09:30 Berlin from March 3rd to April 28th, less three EXDATEs (one line holds
    # two of them): April 7th, 14th and 21st.
    assert sorted(by_id) == [
        utc(2025, 3, 3, 8, 30),
        utc(2025, 3, 10, 8, 30),
        utc(2025, 3, 17, 8, 30),
        utc(2025, 3, 24, 8, 30),
        utc(2025, 3, 31, 7, 30),
    ]
    early = by_id[utc(2025, 3, 17, 8, 30)]
    assert (early.start, early.end, early.moved) == (
        utc(2025, 3, 17, 7),
        utc(2025, 3, 17, 7, 30),
        True,
    )
    assert (early.title, early.sequence) == ("Team sync (early)", 1)
    later = by_id[utc(2025, 3, 31, 7, 30)]
    assert (later.start, later.end, later.moved) == (
        utc(2025, 3, 31, 12),
        utc(2025, 3, 31, 13),
        True,
    )
    assert (later.location, later.sequence) == ("Room 4.12", 3)
    assert later.participants is not None
    assert [(item.email, item.response) for item in later.participants] == [
        ("lena.vogt@example.org", Response.ACCEPTED),
        ("owner@wirecat.example", Response.DECLINED),
    ]
    cancelled = by_id[utc(2025, 3, 24, 8, 30)]
    assert (cancelled.status, cancelled.moved) == (Status.CANCELLED, False)
    plain = by_id[utc(2025, 3, 3, 8, 30)]
    assert (plain.status, plain.moved, plain.participants, plain.sequence) == (
        Status.CONFIRMED,
        False,
        None,
        0,
    )
    assert len(series.participants) == 3
    assert found.problems == ()


def test_all_day_series_with_a_date_time_recurrence_id() -> None:
    found = read("apple_allday_datetime_recurrence_id.ics")
    assert found.name == "Home"
    bins = event(found, "Bin day")
    assert all(item.all_day for item in bins.occurrences)
    assert [(item.start, item.end) for item in bins.occurrences] == [
        (utc(2025, 1, 10), utc(2025, 1, 11)),
        (utc(2025, 1, 17), utc(2025, 1, 18)),
        (utc(2025, 1, 25), utc(2025, 1, 26)),  # moved from Friday the 24th
        (utc(2025, 1, 31), utc(2025, 2, 1)),
        (utc(2025, 2, 7), utc(2025, 2, 8)),
    ]
    moved = bins.occurrences[2]
    assert (moved.recurrence_id, moved.moved, moved.title) == (
        utc(2025, 1, 24),
        True,
        "Bin day (moved to Saturday)",
    )
    weekend = event(found, "Weekend away")
    (only,) = weekend.occurrences
    assert (only.start, only.end, only.all_day) == (utc(2025, 3, 1), utc(2025, 3, 3), True)
    assert weekend.join_url == "https://example.org/trip/42"  # any https URL in URL


def test_x_wr_timezone_moves_utc_times_into_the_calendars_zone() -> None:
    found = read("google_x_wr_timezone_utc_times.ics")
    assert found.time_zone == "Europe/Berlin"
    choir = event(found, "Choir rehearsal")
    # 19:00 Berlin each Thursday: the last one is after October 26th's change to CET.
    assert [item.start for item in choir.occurrences] == [
        utc(2025, 10, 16, 17),
        utc(2025, 10, 23, 17),
        utc(2025, 10, 30, 18),
    ]


def test_shared_google_sample_dst_and_exdates() -> None:
    path = SAMPLES / "ical" / "google_weekly_byday_exdates_dst.ics"
    found = read_calendar(
        path.read_bytes(), source=path.name, window=(utc(2020, 9, 1), utc(2021, 1, 1))
    )
    assert (found.name, found.time_zone, found.problems) == ("School", "America/Chicago", ())
    fridays = {item.uid: item for item in found.events}["m4dpn70@google.com"]
    starts = [item.start for item in fridays.occurrences]
    # Fridays 14:15 Chicago: CDT (UTC-5) to November 1st, CST (UTC-6) after; three EXDATEs.
    expected = [
        utc(2020, 9, 25, 19, 15),
        utc(2020, 10, 2, 19, 15),
        utc(2020, 10, 9, 19, 15),
        utc(2020, 10, 16, 19, 15),
        utc(2020, 10, 30, 19, 15),
        utc(2020, 11, 13, 20, 15),
        utc(2020, 11, 20, 20, 15),
        utc(2020, 12, 4, 20, 15),
        utc(2020, 12, 11, 20, 15),
        utc(2020, 12, 18, 20, 15),
        utc(2020, 12, 25, 20, 15),
    ]
    assert starts == expected
    # Weekdays MO,TU,TH,FR 08:15 from November 16th (CST): Thanksgiving's two EXDATEs gone.
    school = {item.uid: item for item in found.events}["c4p6@google.com"]
    days = [item.start for item in school.occurrences]
    assert utc(2020, 11, 26, 14, 15) not in days and utc(2020, 11, 27, 14, 15) not in days
    assert days[:6] == [
        utc(2020, 11, 16, 14, 15),
        utc(2020, 11, 17, 14, 15),
        utc(2020, 11, 19, 14, 15),
        utc(2020, 11, 20, 14, 15),
        utc(2020, 11, 23, 14, 15),
        utc(2020, 11, 24, 14, 15),
    ]
    # UNTIL 20200923T045959Z ends the last series on Tuesday the 22nd; the 16th is excluded.
    last = {item.uid: item for item in found.events}["p1lg@google.com"]
    assert [item.start.day for item in last.occurrences] == [15, 17, 18, 21, 22]


# --- invitations ----------------------------------------------------------------------------


def test_a_cancel_invitation_cancels_its_event() -> None:
    found = read("google_invite_cancel.ics")
    assert found.method == "CANCEL"
    (call,) = found.events
    assert call.status == Status.CANCELLED
    assert [item.status for item in call.occurrences] == [Status.CANCELLED]
    assert call.join_url == "https://us02web.zoom.us/j/81234567890?pwd=Zm9vYmFy"


def test_windows_1252_request_is_read_tolerantly() -> None:
    found = read("outlook_request_windows1252.ics")
    (meeting,) = found.events
    assert found.method == "REQUEST"
    assert meeting.title == "Café-Runde \u2013 Planung"
    assert meeting.time_zone == "Europe/Berlin"  # "W. Europe Standard Time"
    assert meeting.status == Status.TENTATIVE
    assert meeting.organizer is not None and meeting.organizer.name == "José Müller"
    assert [(item.email, item.role, item.response) for item in meeting.participants] == [
        ("jose@contoso.example", "chair", Response.ACCEPTED),
        ("owner@wirecat.example", "required", Response.ACCEPTED),
        ("cafe@contoso.example", "non-participant", Response.DELEGATED),
    ]
    assert [item.start for item in meeting.occurrences] == [utc(2025, 7, 2, 13)]


# --- bad input ------------------------------------------------------------------------------


def test_broken_events_are_named_and_the_rest_imports() -> None:
    found = read("broken_events.ics", window=(utc(2024, 1, 1), utc(2025, 1, 31)))
    assert found.problems == (
        "broken_events.ics, line 17: not an iCalendar line ('THIS LINE IS NOT ICALENDAR AT "
        "ALL'); it was skipped",
        "broken_events.ics, UID no-start@example.org: no DTSTART; the event was skipped",
        "broken_events.ics, UID odd-zone@example.org: unknown time zone 'Mars/Olympus_Mons' "
        "in DTSTART; its times were read as UTC",
        "broken_events.ics, UID every-minute@example.org: it repeats every minute, more often "
        "than any meeting; only its first occurrence was kept",
        "broken_events.ics, UID never@example.org: its RRULE names only days that do not "
        "exist; only its first occurrence was kept",
        "broken_events.ics, UID bad-rule@example.org: its RRULE cannot be read (Expected "
        "frequency, got: FORTNIGHTLY); only its first occurrence was kept",
    )
    uids = [item.uid for item in found.events]
    assert "no-start@example.org" not in uids
    assert "fine@example.org" in uids
    odd = {item.uid: item for item in found.events}["odd-zone@example.org"]
    assert (odd.time_zone, odd.occurrences[0].start) == ("", utc(2025, 1, 5, 10))
    for uid in ("every-minute@example.org", "never@example.org", "bad-rule@example.org"):
        assert len({item.uid: item for item in found.events}[uid].occurrences) == 1


def test_an_unbounded_rule_never_expands_past_the_window() -> None:
    window = (utc(2024, 6, 1), utc(2024, 7, 1))
    forever = event(read("broken_events.ics", window=window), "Daily forever")
    starts = [item.start for item in forever.occurrences]
    assert starts[0] == utc(2024, 6, 1, 8) and starts[-1] == utc(2024, 6, 30, 8)
    assert len(starts) == 30
    assert forever.time_zone == ""


def test_occurrences_are_capped_with_a_problem(settings_override: None) -> None:
    forever = event(
        read("broken_events.ics", window=(utc(2024, 1, 1), utc(2026, 1, 1))), "Daily forever"
    )
    assert len(forever.occurrences) == 50
    assert forever.occurrences[0].start == utc(2024, 1, 1, 8)  # the first ones are kept


@pytest.fixture
def settings_override(settings: object) -> None:
    settings.MEETINGS_MAX_OCCURRENCES = 50  # type: ignore[attr-defined]


def test_the_cap_problem_names_the_setting(settings: object) -> None:
    settings.MEETINGS_MAX_OCCURRENCES = 50  # type: ignore[attr-defined]
    found = read("broken_events.ics", window=(utc(2024, 1, 1), utc(2026, 1, 1)))
    assert (
        "broken_events.ics, UID forever@example.org: more than 50 occurrences in the window; "
        "the first 50 were kept (WIRECAT_MEETINGS_MAX_OCCURRENCES)"
    ) in found.problems


def test_default_window_comes_from_the_settings(settings: object) -> None:
    settings.MEETINGS_PAST_DAYS = 3  # type: ignore[attr-defined]
    settings.MEETINGS_AHEAD_DAYS = 4  # type: ignore[attr-defined]
    data = (ICAL / "broken_events.ics").read_bytes()
    found = read_calendar(data, source="x.ics")
    forever = event(found, "Daily forever")
    assert 6 <= len(forever.occurrences) <= 8
    now = datetime.now(UTC)
    assert all(
        now - timedelta(days=4) < item.start < now + timedelta(days=5)
        for item in forever.occurrences
    )
    assert found.window_start is not None and found.window_end is not None
    assert found.window_end - found.window_start == timedelta(days=7)


def test_a_file_that_is_not_icalendar_is_refused() -> None:
    with pytest.raises(FormatError, match=r"notes\.txt, the start: not an iCalendar file"):
        read_calendar(b"WEBVTT\n\n00:01.000 --> 00:02.000\nhi\n", source="notes.txt")


def test_a_broken_structure_is_a_format_error() -> None:
    with pytest.raises(FormatError, match=r"cut\.ics"):
        read_calendar(b"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nEND:VTODO\r\n", source="cut.ics")


def test_a_file_over_the_size_cap_is_refused(settings: object) -> None:
    settings.MEETINGS_MAX_ICS_BYTES = 1024  # type: ignore[attr-defined]
    data = (ICAL / "google_overrides_before_master.ics").read_bytes()
    with pytest.raises(FormatError, match="WIRECAT_MEETINGS_MAX_ICS_BYTES"):
        read_calendar(data, source="big.ics", window=WINDOW)


def test_lf_and_crlf_read_the_same() -> None:
    crlf = (ICAL / "google_overrides_before_master.ics").read_bytes()
    assert b"\r\n" in crlf
    lf = crlf.replace(b"\r\n", b"\n")
    assert read_calendar(crlf, source="a.ics", window=WINDOW) == read_calendar(
        lf, source="a.ics", window=WINDOW
    )


def test_an_event_without_uid_gets_a_stable_one() -> None:
    data = (
        b"BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20250101T100000Z\nSUMMARY:x\n"
        b"END:VEVENT\nEND:VCALENDAR\n"
    )
    first = read_calendar(data, source="a.ics", window=WINDOW)
    again = read_calendar(data, source="a.ics", window=WINDOW)
    assert first.events[0].uid.startswith("wirecat-")
    assert first.events[0].uid == again.events[0].uid


# --- whatever the bytes ---------------------------------------------------------------------

_PIECES = [
    "BEGIN:VEVENT",
    "END:VEVENT",
    "BEGIN:VTIMEZONE",
    "END:VTIMEZONE",
    "UID:a@x",
    "UID:b@x",
    "DTSTART:20250101T090000Z",
    "DTSTART;VALUE=DATE:20250101",
    "DTSTART;TZID=Europe/Berlin:20250301T090000",
    "DTSTART;TZID=Nowhere/Else:20250301T090000",
    "DTSTART:garbage",
    "DTEND:20241231T090000Z",
    "RECURRENCE-ID:20250108T090000Z",
    "RECURRENCE-ID;VALUE=DATE:20250108",
    "RRULE:FREQ=DAILY",
    "RRULE:FREQ=HOURLY;BYMINUTE=0,15,30,45",
    "RRULE:FREQ=SECONDLY",
    "RRULE:FREQ=WEEKLY;BYDAY=-1FR;COUNT=-3",
    "RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=31",
    "RRULE:UNTIL=20250101",
    "EXDATE:20250102T090000Z",
    "EXDATE;TZID=Europe/Berlin:20250102T100000,nonsense",
    "RDATE;VALUE=PERIOD:20250105T100000Z/PT1H",
    "STATUS:CANCELLED",
    "SEQUENCE:x",
    "ATTENDEE;PARTSTAT=ACCEPTED:mailto:a@b",
    "ATTENDEE:",
    'ORGANIZER;CN="unterminated:mailto:x@y',
    "DURATION:-P1D",
    " folded continuation",
    "X-WR-TIMEZONE:Not/AZone",
    "METHOD:CANCEL",
    "\x00\x01 binary",
    "",
]


@hsettings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.lists(st.sampled_from(_PIECES) | st.text(max_size=30), max_size=25),
    raw=st.binary(max_size=64),
    crlf=st.booleans(),
)
def test_any_input_reads_or_raises_format_error(
    body: list[str], raw: bytes, crlf: bool, settings: object
) -> None:
    settings.MEETINGS_MAX_OCCURRENCES = 40  # type: ignore[attr-defined]
    newline = "\r\n" if crlf else "\n"
    text = newline.join(["BEGIN:VCALENDAR", *body, "END:VCALENDAR"])
    data = text.encode("utf-8", "surrogatepass") + raw
    try:
        found = read_calendar(data, source="fuzz.ics", window=(utc(2024, 12, 1), utc(2025, 2, 1)))
    except FormatError as error:
        assert str(error).startswith("fuzz.ics, ")
        return
    for item in found.events:
        assert len(item.occurrences) <= 40
        for occurrence in item.occurrences:
            assert occurrence.start.tzinfo is not None and occurrence.end >= occurrence.start
    assert all(problem.startswith("fuzz.ics") for problem in found.problems)


@hsettings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_read_or_raise_format_error(data: bytes) -> None:
    with contextlib.suppress(FormatError):
        read_calendar(data, source="noise.ics", window=WINDOW)


def test_an_unknown_x_wr_timezone_is_a_problem_and_times_stay_as_written() -> None:
    data = (
        b"BEGIN:VCALENDAR\nX-WR-TIMEZONE:Not/AZone\nBEGIN:VEVENT\nUID:a@x\n"
        b"DTSTART:20250101T100000Z\nEND:VEVENT\nEND:VCALENDAR\n"
    )
    found = read_calendar(data, source="z.ics", window=WINDOW)
    assert found.time_zone == ""
    assert found.problems == (
        "z.ics: X-WR-TIMEZONE 'Not/AZone' is not a time zone WireCat knows; times were read "
        "as written",
    )
    assert found.events[0].occurrences[0].start == utc(2025, 1, 1, 10)


def test_an_hourly_rule_from_long_ago_is_not_walked() -> None:
    data = (
        b"BEGIN:VCALENDAR\nBEGIN:VEVENT\nUID:h@x\nDTSTART:19000101T000000Z\n"
        b"RRULE:FREQ=HOURLY\nEND:VEVENT\nEND:VCALENDAR\n"
    )
    found = read_calendar(data, source="h.ics", window=WINDOW)
    assert found.problems == (
        "h.ics, UID h@x: it repeats every 1 hour(s) since 1900-01-01, too often; only its "
        "first occurrence was kept",
    )
    assert found.events[0].occurrences == ()  # its first occurrence lies before the window
