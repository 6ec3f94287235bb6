"""The meetings pages in a browser: the month at 1280 px, the agenda and the month's dots at
390 px, a meeting page with its transcript and its search, light and dark, with no
sideways scroll on a phone. Screenshots: tests/artifacts/meetings-*.png."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from archive.people.services import person_create
from archive.store.models import Identity
from meetings.models import Meeting, Status
from tests.e2e.test_import_page import sign_in
from tests.meetings import factories as f

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 12, day, hour, minute, tzinfo=UTC)


def a_month_of_meetings() -> Meeting:
    series = f.event(rrule="FREQ=WEEKLY;BYDAY=TU", organizer_name="Ann Lee")
    sync = None
    for day in (1, 8, 15, 22, 29):
        status = Status.CANCELLED if day == 22 else Status.CONFIRMED
        made = f.meeting(
            "Team sync",
            at(day, 9),
            ev=series,
            status=status,
            join_url="https://meet.example.com/team-sync",
        )
        sync = made if day == 8 else sync
    f.meeting("Team sync", at(17, 13), ev=series, recurrence_id=at(15, 9, 30), moved=True)
    f.meeting("Dentist", at(3, 14, 30), minutes=45, location="Main Street 4, second floor")
    f.meeting("Quarterly planning with the whole product group", at(10, 8), minutes=180)
    for hour in (8, 10, 12, 15, 17):
        f.meeting(f"Interview {hour}", at(16, hour), minutes=45)
    f.all_day("Christmas holidays", 2026, 12, 24, days=3)
    f.all_day("Conference", 2026, 12, 9, days=2)
    assert sync is not None
    identity = Identity.objects.create(provider="email", external_id="bob@example.com")
    person_create(name="Bob Builder", identity_ids=[identity.pk])
    f.participant(sync, "Bob Builder", "bob@example.com", response="accepted", identity=identity)
    f.participant(sync, "Carol Jones", "carol@example.com", response="declined")
    f.participant(
        sync, "", "a.very.long.address.for.a.phone@subsidiary.example.com", response="needs-action"
    )
    f.transcript(
        sync,
        [
            ("Ann Lee", 3, "Good morning, everyone. Let us go through the budget first."),
            ("Ann Lee", 9, "The numbers came in yesterday evening."),
            ("Bob Builder", 21, "The budget for the new office looks fine, but the move is late."),
            ("Carol Jones", 48, "Can we write down who books the movers?"),
            ("Ann Lee", 3725, "One last thing: the retro is next Tuesday."),
        ],
    )
    return sync


@pytest.fixture
def tab(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    viewport, scheme = request.param
    context = browser.new_context(viewport=viewport, color_scheme=scheme)
    page = context.new_page()
    yield page
    context.close()


def scroll_width(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


@pytest.mark.parametrize(
    ("tab", "suffix"),
    [((DESKTOP, "light"), "desktop"), ((DESKTOP, "dark"), "desktop-dark")],
    indirect=["tab"],
)
def test_month_and_week_at_1280(
    live_server: Any, tab: Any, suffix: str, artifacts_dir: Path
) -> None:
    a_month_of_meetings()
    sign_in(tab, live_server)
    tab.get_by_role("navigation", name="Main").get_by_role("link", name="Meetings").click()
    tab.wait_for_url("**/meetings/")
    tab.goto(live_server.url + "/meetings/?view=month&date=2026-12-08")
    assert tab.get_by_role("heading", name="December 2026").is_visible()
    cell = tab.locator("td.cal-day", has=tab.get_by_role("link", name="Wednesday 16 December"))
    assert cell.get_by_role("link", name="+2 more").is_visible()
    cancelled = tab.locator(
        "td.cal-day", has=tab.get_by_role("link", name="Tuesday 22 December")
    ).locator(".cal-item")
    assert "cancelled" in cancelled.inner_text().lower()
    assert (
        cancelled.locator(".t").evaluate("el => getComputedStyle(el).textDecorationLine")
        == "line-through"
    )
    assert tab.locator(".cal-item.allday", has_text="Christmas holidays").count() == 3
    assert scroll_width(tab) <= DESKTOP["width"]
    tab.screenshot(path=str(artifacts_dir / f"meetings-month-{suffix}.png"), full_page=True)

    tab.get_by_role("link", name="Week").click()
    tab.wait_for_url("**view=week**")
    assert tab.get_by_role("heading", name="7 \u2013 13 December 2026").is_visible()
    tab.get_by_role("link", name="Next").click()
    tab.wait_for_url("**date=2026-12-14**")
    interview = tab.locator(".wk-ev", has_text="Interview 8")
    later = tab.locator(".wk-ev", has_text="Interview 10")
    assert interview.bounding_box()["y"] < later.bounding_box()["y"]
    tab.screenshot(path=str(artifacts_dir / f"meetings-week-{suffix}.png"), full_page=True)


@pytest.mark.parametrize(
    ("tab", "suffix"),
    [((PHONE, "light"), "phone"), ((PHONE, "dark"), "phone-dark")],
    indirect=["tab"],
)
def test_agenda_and_month_dots_at_390(
    live_server: Any, tab: Any, suffix: str, artifacts_dir: Path
) -> None:
    a_month_of_meetings()
    sign_in(tab, live_server)
    tab.goto(live_server.url + "/meetings/?view=agenda&date=2026-12-08")
    assert (
        tab.get_by_role("region", name="Tuesday 8 December 2026")
        .get_by_role("link", name="Team sync")
        .is_visible()
    )
    assert scroll_width(tab) <= PHONE["width"]
    tab.screenshot(path=str(artifacts_dir / f"meetings-agenda-{suffix}.png"), full_page=True)

    tab.goto(live_server.url + "/meetings/?view=month&date=2026-12-08")
    assert not tab.locator(".cal-items").first.is_visible()
    assert tab.locator(".cal-dots").first.is_visible()
    tab.get_by_role("link", name="Wednesday 16 December, 5 meetings").click()
    tab.wait_for_url("**date=2026-12-16**")
    selected = tab.locator("#day")
    for hour in (8, 10, 12, 15, 17):
        assert selected.get_by_role("link", name=f"Interview {hour}").is_visible()
    assert scroll_width(tab) <= PHONE["width"]
    tab.screenshot(path=str(artifacts_dir / f"meetings-month-{suffix}.png"), full_page=True)
    tab.goto(live_server.url + "/meetings/?view=week&date=2026-12-16")
    assert scroll_width(tab) <= PHONE["width"]  # the week scrolls inside its own box


@pytest.mark.parametrize(
    ("tab", "suffix"),
    [
        ((DESKTOP, "light"), "desktop"),
        ((PHONE, "light"), "phone"),
        ((PHONE, "dark"), "phone-dark"),
    ],
    indirect=["tab"],
)
def test_a_meeting_page_with_its_transcript(
    live_server: Any, tab: Any, suffix: str, artifacts_dir: Path
) -> None:
    sync = a_month_of_meetings()
    sign_in(tab, live_server)
    tab.goto(live_server.url + "/meetings/?view=agenda&date=2026-12-08")
    tab.get_by_role("region", name="Tuesday 8 December 2026").get_by_role(
        "link", name="Team sync"
    ).click()
    tab.wait_for_url(f"**/meetings/{sync.public_id}/")
    assert tab.get_by_role("heading", name="Team sync", level=1).is_visible()
    assert tab.get_by_role("link", name="Bob Builder").get_attribute("href").startswith("/people/")
    join = tab.get_by_role("link", name="Join the meeting")
    assert "noopener" in join.get_attribute("rel")
    assert tab.locator(".turn").count() == 4
    assert tab.get_by_text("Repeats every week on Tuesday.").is_visible()
    assert scroll_width(tab) <= tab.viewport_size["width"]
    tab.screenshot(path=str(artifacts_dir / f"meetings-page-{suffix}.png"), full_page=True)

    tab.get_by_label("Search the transcript").fill("budget")
    tab.get_by_role("button", name="Search").click()
    tab.wait_for_url("**q=budget**")
    assert tab.locator("mark").count() == 2
    assert tab.get_by_text("2 of 5 lines say").is_visible()
    assert scroll_width(tab) <= tab.viewport_size["width"]
    tab.screenshot(path=str(artifacts_dir / f"meetings-search-{suffix}.png"), full_page=True)
    link = tab.locator(".seg-task").first.get_attribute("href")
    assert link == f"/tasks/new/?meeting={sync.public_id}&at=3000"
    assert Meeting.objects.count() > 10
    assert timedelta(0) < sync.end - sync.start
