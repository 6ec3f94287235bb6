"""The meetings pages: the calendar's month, week and agenda in the owner's time zone
(cancelled, moved and all-day occurrences, navigation, bad parameters) and a meeting's page
(participants and their people, the series, the transcript as speaker turns and its search,
the messages around it, the tasks that link here), with bounded queries."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from archive.people.services import person_create
from archive.store.models import Identity
from archive.store.sink import batch_record
from meetings.models import MeetingLink, Segment, Status, Transcript
from meetings.selectors import LINES_BEFORE, SEGMENT_LIMIT, rrule_text, timestamp
from tasks.models import Task
from tasks.services import project_create, task_create
from tests.factories import T0, batch, message
from tests.meetings import factories as f

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def berlin(settings: Any) -> None:
    settings.TIME_ZONE = "Europe/Berlin"


def at(year: int, month: int, day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def get(client: Client, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, (url, response.status_code)
    return response.content.decode()


def cell(html: str, day: str) -> str:
    """The month grid's cell of a day (its number's link names it)."""
    start = html.index(f'href="?view=month&amp;date={day}#day"')
    end = html.index("</td>", start)
    return html[start:end]


# --- the calendar ------------------------------------------------------------------------------


def test_month_shows_each_days_meetings_in_the_owners_time_zone(owner_client: Client) -> None:
    f.meeting("Planning", at(2026, 12, 8, 9))  # 10:00 in Berlin
    f.meeting("Late call", at(2026, 12, 8, 23, 30))  # 00:30 on the 9th in Berlin
    f.meeting("Next month", at(2027, 1, 4, 9))
    html = get(owner_client, "/meetings/?view=month&date=2026-12-15")
    assert "<h1>December 2026</h1>" in html
    assert "Times are in Europe/Berlin" in html
    assert '10:00</time> <span class="t">Planning' in cell(html, "2026-12-08")
    assert "Late call" not in cell(html, "2026-12-08")
    assert '00:30</time> <span class="t">Late call' in cell(html, "2026-12-09")
    # The grid runs Monday to Sunday: 30 Nov to 3 Jan, the neighbours' days greyed.
    assert 'class="cal-day other' in html and "date=2026-11-30#day" in html
    assert "date=2027-01-03#day" in html and "date=2027-01-04#day" not in html


def test_month_marks_cancelled_moved_and_all_day_and_folds_a_full_day(
    owner_client: Client,
) -> None:
    series = f.event(rrule="FREQ=WEEKLY;BYDAY=TU")
    f.meeting("Team sync", at(2026, 12, 1, 9), ev=series, status=Status.CANCELLED)
    f.meeting(
        "Team sync",
        at(2026, 12, 9, 13),
        ev=series,
        recurrence_id=at(2026, 12, 8, 9),
        moved=True,
    )
    f.all_day("Holiday", 2026, 12, 24, days=2)
    for hour in range(8, 13):
        f.meeting(f"Busy {hour}", at(2026, 12, 16, hour))
    html = get(owner_client, "/meetings/?date=2026-12-01")
    cancelled = cell(html, "2026-12-01")
    assert "cal-item cancelled" in cancelled and '<span class="flag">cancelled</span>' in cancelled
    moved = cell(html, "2026-12-09")
    assert '<span class="flag moved">moved</span>' in moved and "14:00" in moved
    # All day on both its dates, never on the day its end names (iCalendar's end is after).
    for day in ("2026-12-24", "2026-12-25"):
        assert "cal-item allday" in cell(html, day) and "Holiday" in cell(html, day)
    assert "Holiday" not in cell(html, "2026-12-26")
    busy = cell(html, "2026-12-16")
    assert busy.count('<li class="cal-item') == 3 and "+2 more" in busy
    assert "Busy 12" not in busy


def test_month_marks_today_and_the_selected_day_lists_everything(owner_client: Client) -> None:
    now = timezone.localtime()
    today = now.date().isoformat()
    noon = now.replace(hour=12, minute=0, second=0, microsecond=0)
    for n in range(5):
        f.meeting(f"Today {n}", noon + timedelta(minutes=n))
    html = get(owner_client, "/meetings/")
    today_cell = cell(html, today)
    assert 'aria-current="date"' in today_cell
    selected = html[html.index('id="day"') :]
    assert "Today</span>" in selected
    assert all(f"Today {n}" in selected for n in range(5))


def test_week_places_meetings_by_the_half_hour_with_all_day_on_top(owner_client: Client) -> None:
    f.meeting("Standup", at(2026, 12, 8, 8, 30), minutes=30)  # 9:30 in Berlin: row 4 from 8:00
    f.meeting("Overlap A", at(2026, 12, 9, 12), minutes=60)
    f.meeting("Overlap B", at(2026, 12, 9, 12, 30), minutes=60)
    f.meeting("Early", at(2026, 12, 10, 5))  # 6:00 in Berlin: the day starts at 6:00 then
    f.all_day("Offsite", 2026, 12, 11)
    f.meeting("Dropped", at(2026, 12, 11, 9), status=Status.CANCELLED)
    html = get(owner_client, "/meetings/?view=week&date=2026-12-09")
    assert "7 \u2013 13 December 2026" in html
    standup = re.search(r'class="wk-ev ([^"]*)"[^>]*>\s*<time[^>]*>09:30\u201310:00</time>', html)
    assert standup is not None and standup.group(1).split()[:3] == ["r-8", "s-1", "ln-0"]
    assert re.search(r'wk-ev r-\d+ s-2 ln-0"[^>]*>\s*<time[^>]*>13:00', html)
    assert re.search(r'wk-ev r-\d+ s-2 ln-1"[^>]*>\s*<time[^>]*>13:30', html)
    assert '<span class="wk-hour r-1">06:00</span>' in html
    allday = html.index('class="wk-allday-label')
    assert html.index("Offsite") < html.index('class="wk-hours"') and html.index("Offsite") > allday
    assert re.search(
        r'wk-ev [^"]*cancelled"[^>]*>.*?Dropped</span> <span class="flag">cancelled', html, re.S
    )
    assert "Next month" not in html and "date=2026-12-14" in html and "date=2026-11-30" in html


def test_agenda_lists_days_with_meetings_and_a_two_week_range(owner_client: Client) -> None:
    f.meeting("Dentist", at(2030, 3, 2, 14), location="Main Street 4")
    f.meeting("Call with Ann", at(2030, 3, 10, 16), status=Status.CANCELLED)
    f.meeting("Too late", at(2030, 3, 20, 9))
    html = get(owner_client, "/meetings/?view=agenda&date=2030-03-01")
    assert "Dentist" in html and "Main Street 4" in html and "15:00" in html and "17:00" in html
    assert re.search(
        r'agenda-item cancelled.*?Call with Ann</a>\s*<span class="flag">cancelled', html, re.S
    )
    assert "Too late" not in html
    assert html.count('class="agenda-day') == 2
    assert "date=2030-02-15" in html and "date=2030-03-15" in html


def test_calendar_navigation_links_keep_the_view(owner_client: Client) -> None:
    html = get(owner_client, "/meetings/?view=month&date=2026-12-31")
    assert 'rel="prev" href="?view=month&amp;date=2026-11-01"' in html
    assert 'rel="next" href="?view=month&amp;date=2027-01-01"' in html
    today = timezone.localdate().isoformat()
    assert f'class="cal-today" href="?view=month&amp;date={today}"' in html
    assert 'href="?view=week&amp;date=2026-12-31"' in html
    assert 'href="?view=agenda&amp;date=2026-12-31"' in html
    week = get(owner_client, "/meetings/?view=week&date=2026-12-31")
    assert 'rel="prev" href="?view=week&amp;date=2026-12-21"' in week
    assert 'rel="next" href="?view=week&amp;date=2027-01-04"' in week
    assert '<a href="?view=week&amp;date=2026-12-31" aria-current="page">Week</a>' in week


@pytest.mark.parametrize(
    "query",
    [
        "?date=yesterday",
        "?date=2026-13-45",
        "?date=0001-01-01",
        "?date=9999-12-31",
        "?view=month&date=9000-12-31",
        "?view=agenda&date=1900-01-01",
        "?view=<script>&date=2026-12-01",
        "?date=" + "9" * 5000,
        "?view=week&date=2026-12",
    ],
)
def test_calendar_never_fails_on_bad_parameters(owner_client: Client, query: str) -> None:
    html = get(owner_client, "/meetings/" + query)
    assert "<script>" not in html.split("</head>", 1)[1].replace("<script src=", "")


def test_calendar_reads_a_bounded_number_of_queries(
    owner_client: Client, django_assert_max_num_queries: Any
) -> None:
    series = f.event()
    for n in range(40):
        f.meeting(f"M{n}", at(2026, 12, 1 + n % 28, 8 + n % 9), ev=series if n % 2 else None)
    owner_client.get("/meetings/")  # the session warmed up
    for view in ("month", "week", "agenda"):
        with django_assert_max_num_queries(4):
            get(owner_client, f"/meetings/?view={view}&date=2026-12-10")


def test_the_calendar_needs_the_owner(client: Client) -> None:
    response = client.get("/meetings/")
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert client.get("/meetings/mtg_x/").status_code == 302


def test_meetings_is_in_the_main_menu(owner_client: Client) -> None:
    html = get(owner_client, "/meetings/")
    assert '<a class="tier3" href="/meetings/" aria-current="page">Meetings</a>' in html
    chats = get(owner_client, "/chats/")
    assert '<a class="tier3" href="/meetings/">Meetings</a>' in chats


# --- a meeting's page --------------------------------------------------------------------------


def test_unknown_meeting_is_a_not_found_page(owner_client: Client) -> None:
    html = get(owner_client, "/meetings/mtg_nothing/", status=404)
    assert "There is no such meeting" in html
    get(owner_client, "/meetings/" + "x" * 3000 + "/", status=404)


def test_meeting_page_shows_time_place_status_and_participants(owner_client: Client) -> None:
    series = f.event(rrule="FREQ=WEEKLY;BYDAY=TU", organizer_name="Ann Organiser")
    mtg = f.meeting(
        "Team sync",
        at(2026, 12, 8, 15),
        ev=series,
        recurrence_id=at(2026, 12, 8, 9),
        moved=True,
        time_zone="America/New_York",
        location="Room <b>4</b>",
        join_url="https://meet.example.com/abc",
    )
    f.meeting("Team sync", at(2026, 12, 1, 9), ev=series, status=Status.CANCELLED)
    f.meeting("Team sync", at(2026, 12, 15, 9), ev=series)
    identity = Identity.objects.create(provider="email", external_id="bob@example.com")
    bob = person_create(name="Bob Builder", identity_ids=[identity.pk])
    f.participant(mtg, "Bob", "bob@example.com", response="accepted", identity=identity)
    f.participant(mtg, "Carol", "carol@example.com", response="declined")
    f.participant(mtg, "", "dave@example.com")
    html = get(owner_client, f"/meetings/{mtg.public_id}/")
    assert "Tuesday 8 December 2026, 16:00 \u2013 17:00" in html
    assert "(Tuesday 8 December 2026, 10:00 \u2013 11:00 in America/New_York)" in html
    assert "Usually Tuesday 8 December 2026, 10:00." in html
    assert "Room &lt;b&gt;4&lt;/b&gt;" in html
    assert 'href="https://meet.example.com/abc" rel="noopener noreferrer"' in html
    assert f'<a href="/people/{bob.pk}/">Bob</a>' in html
    assert "Accepted" in html and "Declined" in html and "No answer known" in html
    assert "Organised by Ann Organiser" in html
    assert "Repeats every week on Tuesday." in html
    assert re.search(r'class="cancelled"><a href="/meetings/mtg_[^"]+/">Tue 1 Dec 2026', html)
    assert "Tue 15 Dec 2026, 10:00" in html


def test_cancelled_meeting_says_so_and_an_unsafe_join_link_is_not_a_link(
    owner_client: Client,
) -> None:
    mtg = f.meeting(
        "Board", at(2026, 12, 8, 9), status=Status.CANCELLED, join_url="javascript:alert(1)"
    )
    html = get(owner_client, f"/meetings/{mtg.public_id}/")
    assert "This meeting was cancelled." in html and 'class="struck"' in html
    assert 'href="javascript' not in html
    assert "not a web address" in html


def test_transcript_reads_as_speaker_turns_with_timestamps(owner_client: Client) -> None:
    mtg = f.meeting("Retro", at(2026, 12, 8, 9), minutes=120)
    f.transcript(
        mtg,
        [
            ("Ann", 5, "Welcome everyone."),
            ("Ann", 9, "Let us start with <the> numbers."),
            ("Bob", 65, "The budget is fine."),
            ("Ann", 3725, "One more thing after an hour."),
        ],
    )
    html = get(owner_client, f"/meetings/{mtg.public_id}/")
    assert html.count('class="turn"') == 3
    first = html[html.index('class="turn"') : html.index("Bob")]
    assert "Welcome everyone." in first and "Let us start with &lt;the&gt; numbers." in first
    assert ">00:05</a>" in html and ">01:05</a>" in html and ">1:02:05</a>" in html
    assert f"/tasks/new/?meeting={mtg.public_id}&amp;at=65000" in html


def test_transcript_search_filters_and_marks_the_lines(owner_client: Client) -> None:
    mtg = f.meeting("Retro", at(2026, 12, 8, 9))
    f.transcript(
        mtg,
        [
            ("Ann", 1, "The Budget is due."),
            ("Bob", 2, "Nothing about money."),
            ("Ann", 3, "budget <again>"),
        ],
    )
    html = get(owner_client, f"/meetings/{mtg.public_id}/?q=budget")
    assert "2 of 3 lines say" in html
    assert "The <mark>Budget</mark> is due." in html
    assert "<mark>budget</mark> &lt;again&gt;" in html
    assert "Nothing about money" not in html
    # Hits apart in the transcript are turns of their own, even of one speaker.
    assert html.count('class="turn"') == 2
    none = get(owner_client, f"/meetings/{mtg.public_id}/?q=<b>zebra</b>")
    assert "No line says “&lt;b&gt;zebra&lt;/b&gt;”" in none
    get(owner_client, f"/meetings/{mtg.public_id}/?q=" + "budget%20" * 2000)


def test_messages_around_the_meeting_and_linked_tasks(owner_client: Client) -> None:
    batch_record(
        batch=batch(
            message("1", "See you at the retro", minutes=-60),
            message("2", "Too early", minutes=-60 * 24 * 4),
            message("3", "From Bob, not a participant", sender="bob"),
        )
    )
    alice = Identity.objects.get(external_id="alice")
    mail = Identity.objects.create(provider="email", external_id="alice@example.com")
    person_create(name="Alice", identity_ids=[alice.pk, mail.pk])
    mtg = f.meeting("Retro", T0 + timedelta(days=1))
    f.participant(mtg, "Alice", "alice@example.com", identity=mail)
    project_create(key="WORK", name="Work")
    task = task_create(project="WORK", title="Send the retro notes")
    other = task_create(project="WORK", title="Not linked")
    MeetingLink.objects.create(meeting=mtg, kind=MeetingLink.Kind.TASK, target_id=task.pk)
    html = get(owner_client, f"/meetings/{mtg.public_id}/")
    assert "See you at the retro" in html
    assert "Too early" not in html and "not a participant" not in html
    assert f'href="/tasks/{task.key}/"' in html and "Send the retro notes" in html
    assert other.title not in html


def test_meeting_page_reads_a_bounded_number_of_queries(
    owner_client: Client, django_assert_max_num_queries: Any
) -> None:
    series = f.event(rrule="FREQ=DAILY")
    mtg = None
    for n in range(10):
        mtg = f.meeting("Daily", at(2026, 12, 1 + n, 9), ev=series)
    assert mtg is not None
    for n in range(8):
        identity = Identity.objects.create(provider="email", external_id=f"p{n}@example.com")
        person_create(name=f"P{n}", identity_ids=[identity.pk])
        f.participant(mtg, f"P{n}", f"p{n}@example.com", identity=identity)
    f.transcript(mtg, [(f"P{n % 3}", n * 10, f"line {n}") for n in range(200)])
    owner_client.get("/meetings/")
    with django_assert_max_num_queries(12):
        get(owner_client, f"/meetings/{mtg.public_id}/")
    with django_assert_max_num_queries(13):
        get(owner_client, f"/meetings/{mtg.public_id}/?q=line%201")


# --- small pieces ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        ("FREQ=WEEKLY;BYDAY=TU", "every week on Tuesday"),
        ("RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE", "every 2 weeks on Monday and Wednesday"),
        ("FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR", "every week on weekdays"),
        ("FREQ=DAILY;COUNT=10", "every day, 10 times"),
        ("FREQ=MONTHLY;BYDAY=-1FR", "every month on the last Friday"),
        ("FREQ=MONTHLY;BYMONTHDAY=5", "every month on day 5"),
        ("FREQ=YEARLY;UNTIL=20301231T000000Z", "every year, until 31 December 2030"),
        ("FREQ=MONTHLY;BYDAY=MO;BYSETPOS=2", "FREQ=MONTHLY;BYDAY=MO;BYSETPOS=2"),
        ("FREQ=WEEKLY;BYDAY=2TU", "FREQ=WEEKLY;BYDAY=2TU"),
        ("FREQ=HOURLY", "FREQ=HOURLY"),
        ("nonsense", "nonsense"),
        ("", ""),
    ],
)
def test_a_rule_in_plain_words(rule: str, words: str) -> None:
    assert rrule_text(rule) == words


@pytest.mark.parametrize(
    ("ms", "text"), [(0, "00:00"), (65_000, "01:05"), (3_599_999, "59:59"), (3_725_000, "1:02:05")]
)
def test_timestamps(ms: int, text: str) -> None:
    assert timestamp(ms) == text


def test_make_a_task_from_a_line_links_back_to_the_meeting(owner_client: Client) -> None:
    mtg = f.meeting("Retro", at(2026, 12, 8, 9))
    f.transcript(mtg, [("Ann", 5, "Hello."), ("Bob", 65, "I will   book the movers.")])
    project_create(key="WORK", name="Work")
    form = get(owner_client, f"/tasks/new/?meeting={mtg.public_id}&at=65000")
    assert 'value="I will book the movers."' in form
    assert f'<input type="hidden" name="meeting" value="{mtg.public_id}">' in form
    assert "From a line of <a href" in form
    response = owner_client.post(
        "/tasks/new/",
        {"project": "WORK", "title": "Book the movers", "meeting": mtg.public_id, "at": "65000"},
    )
    assert response.status_code == 302
    task = Task.objects.get(title="Book the movers")
    assert f"(/meetings/{mtg.public_id}/#seg-" in task.description
    assert (
        "at 01:05, Bob said" in task.description
        and f"(meeting:{mtg.public_id})" in task.description
    )
    page = get(owner_client, f"/meetings/{mtg.public_id}/")
    assert f'href="/tasks/{task.key}/"' in page
    # A line that is not there: the not-found page, not a task without its source.
    get(owner_client, f"/tasks/new/?meeting={mtg.public_id}&at=1", status=404)
    get(owner_client, "/tasks/new/?meeting=mtg_gone&at=65000", status=404)
    get(owner_client, f"/tasks/new/?meeting={mtg.public_id}&at=" + "9" * 40, status=404)


def test_an_agents_transcript_names_the_agent(owner_client: Client) -> None:
    mtg = f.meeting("Call", at(2026, 12, 8, 9))
    made = f.transcript(mtg, [("Ann", 1, "Hi.")], source_name="")
    made.origin, made.agent, made.model = "agent", "agent:scribe", "whisper-large"
    made.save()
    html = get(owner_client, f"/meetings/{mtg.public_id}/")
    assert "From scribe (whisper-large), an agent" in html


def test_a_long_transcript_opens_at_a_late_line_a_search_hit_names(owner_client: Client) -> None:
    """Past the first 5,000 lines, the line a search hit links to (`?line=`) is on the
    page, with a few before it and a way back to the start; without it the page shows the
    first lines only."""
    made = f.meeting("All-day workshop", at(2026, 3, 2, 9))
    transcript = Transcript.objects.create(meeting=made, origin="file", kind="vtt")
    Segment.objects.bulk_create(
        Segment(
            transcript=transcript,
            seq=n,
            start_ms=n * 1000,
            end_ms=n * 1000 + 900,
            speaker="Ann",
            text=f"line {n}",
        )
        for n in range(SEGMENT_LIMIT + 200)
    )
    late = Segment.objects.get(transcript=transcript, seq=SEGMENT_LIMIT + 150)
    url = f"/meetings/{made.public_id}/"
    plain = get(owner_client, url)
    assert f'id="seg-{late.pk}"' not in plain and "Only 5,000 lines are shown" in plain
    opened = get(owner_client, f"{url}?line={late.pk}")
    assert f'id="seg-{late.pk}"' in opened
    first_shown = SEGMENT_LIMIT + 150 - LINES_BEFORE
    shown = f'<span class="seg-text">line {first_shown}</span>'
    before = f'<span class="seg-text">line {first_shown - 1}</span>'
    assert shown in opened and before not in opened
    assert "Show the transcript from its start" in opened
    unknown = get(owner_client, f"{url}?line=99999999999")
    assert "Show the transcript from its start" not in unknown
    assert '<span class="seg-text">line 0</span>' in unknown
