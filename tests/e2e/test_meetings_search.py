"""The search page's Meetings tab in a browser: type a word that was said, switch to the
Meetings tab, open the hit and land on the meeting page at that line of the transcript.
At 1280 and 390 px, light and dark; screenshots tests/artifacts/search-meetings-*.png."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from archive.store.sink import batch_record
from meetings.models import Segment
from meetings.search_index import meeting_stems_drain
from tests.e2e.test_import_page import sign_in
from tests.factories import batch, message
from tests.meetings.search_factories import calendar, meeting, transcript

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


def meetings_that_talked_about_the_warehouse() -> Segment:
    start = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)
    cal = calendar("Work")
    review = meeting(
        "Logistics review with the operations and finance teams",
        start=start,
        minutes=60,
        cal=cal,
    )
    filler = [("Ann Lee", f"Point {n} on the agenda, nothing unusual here.") for n in range(40)]
    spoken = transcript(
        review,
        [
            *filler,
            (
                "Bob Builder",
                "The warehouse lease ends in June, so we need a decision soon.",
                754_000,
            ),
            ("Carol Jones", "Let us compare the offers for a new warehouse next week."),
        ],
    )
    meeting(
        "Warehouse visit",
        description="Walk through the new site with the landlord.",
        start=start + timedelta(days=3),
        cal=cal,
    )
    batch_record(batch=batch(message("1", "Photos of the warehouse are in the shared folder")))
    meeting_stems_drain()  # as the worker would have, so every word form is found
    return spoken.segments.get(seq=40)


@pytest.fixture
def tab(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    viewport, scheme = request.param
    context = browser.new_context(viewport=viewport, color_scheme=scheme)
    page = context.new_page()
    yield page
    context.close()


@pytest.mark.parametrize(
    ("tab", "name"),
    [
        ((DESKTOP, "light"), "1280-light"),
        ((DESKTOP, "dark"), "1280-dark"),
        ((PHONE, "light"), "390-light"),
        ((PHONE, "dark"), "390-dark"),
    ],
    indirect=["tab"],
)
def test_a_spoken_word_found_on_the_meetings_tab_opens_the_meeting_at_that_line(
    live_server: Any, tab: Any, name: str, artifacts_dir: Path
) -> None:
    line = meetings_that_talked_about_the_warehouse()
    width = PHONE["width"] if name.startswith("390") else DESKTOP["width"]
    sign_in(tab, live_server)
    tab.goto(live_server.url + "/search/")
    tab.get_by_label("Search messages").press_sequentially("warehouse", delay=30)
    tab.locator("#results li.hit mark").first.wait_for()
    # The Messages tab first: the message, and no meeting among its hits.
    assert tab.locator("#results li.meeting-hit").count() == 0
    messages_tab = tab.get_by_role("navigation", name="What to search").get_by_role(
        "link", name="Messages"
    )
    assert messages_tab.get_attribute("aria-current") == "page"

    tab.get_by_role("navigation", name="What to search").get_by_role(
        "link", name="Meetings"
    ).click()
    tab.wait_for_url("**/search/?q=warehouse*tab=meeting*")
    hits = tab.locator("#results li.meeting-hit")
    hits.first.wait_for()
    assert hits.count() == 3  # two lines said, one meeting's title and description
    said = hits.filter(has_text="Bob Builder")
    assert "12:34" in said.inner_text()
    assert said.locator("mark").first.inner_text().lower() == "warehouse"
    assert int(tab.evaluate("document.documentElement.scrollWidth")) <= width
    tab.screenshot(path=str(artifacts_dir / f"search-meetings-{name}.png"), full_page=True)

    said.get_by_role("link").click()
    tab.wait_for_url(f"**/meetings/*/?line={line.pk}#seg-{line.pk}")
    target = tab.locator(":target")
    assert "The warehouse lease ends in June" in target.inner_text()
    # Landed at the line: it is on screen although forty lines come before it.
    assert target.evaluate(
        "el => { const r = el.getBoundingClientRect();"
        " return r.top >= 0 && r.bottom <= window.innerHeight; }"
    )
