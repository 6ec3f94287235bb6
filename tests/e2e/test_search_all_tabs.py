"""Search all in a real browser: type, go through the tabs (All, Notes, Files …) with their
counts, switch the mode, open a thing found, and "More like this" from a message's menu on
the chat page. At 1280 px light and 390 px dark (each also in the other scheme);
screenshots tests/artifacts/search-all-*.png."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.chat_support import message_menu_item
from tests.e2e.test_import_page import sign_in
from tests.search_all.test_page import world

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


@pytest.fixture
def tab(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    viewport, scheme = request.param
    context = browser.new_context(viewport=viewport, color_scheme=scheme)
    page = context.new_page()
    yield page
    context.close()


def _shots(page: Any, artifacts_dir: Path, name: str, width: int, scheme: str) -> None:
    """The page as it is, then in the other colour scheme (and back); never wider than
    the screen."""
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"{page.url} is wider than {width} px by {overflow}"
    other = "dark" if scheme == "light" else "light"
    page.screenshot(
        path=str(artifacts_dir / f"search-all-{name}-{width}-{scheme}.png"), full_page=True
    )
    page.emulate_media(color_scheme=other)
    page.screenshot(
        path=str(artifacts_dir / f"search-all-{name}-{width}-{other}.png"), full_page=True
    )
    page.emulate_media(color_scheme=scheme)


@pytest.mark.parametrize(
    ("tab", "width", "scheme"),
    [((DESKTOP, "light"), 1280, "light"), ((PHONE, "dark"), 390, "dark")],
    indirect=["tab"],
)
def test_tabs_modes_and_more_like_this(
    live_server: Any, tab: Any, width: int, scheme: str, artifacts_dir: Path
) -> None:
    made = world()
    sign_in(tab, live_server)
    tab.goto(live_server.url + "/search/")
    tab.get_by_label("Search messages").press_sequentially("budget", delay=30)
    tab.locator("#results li.hit mark").first.wait_for()
    tabs = tab.get_by_role("navigation", name="What to search")
    # Messages first, as it always was; every other tab already counted.
    assert tabs.get_by_role("link", name="Messages").get_attribute("aria-current") == "page"
    tabs.get_by_role("link", name="Notes").locator(".tab-count").wait_for()  # after the hits
    assert tabs.get_by_role("link", name="Notes").inner_text().split() == ["Notes", "1"]

    tabs.get_by_role("link", name="All").click()
    tab.wait_for_url("**/search/?q=budget&tab=all&mode=hybrid")
    rows = tab.locator("#results li.all-hit")
    rows.first.wait_for()
    kinds = set(tab.locator("#results li.all-hit .kind-badge").all_inner_texts())
    assert kinds == {"Message", "Mail", "Note", "Meeting", "Conversation", "File"}
    assert tab.locator("#results .why-both").count() >= 1
    assert "<b>budget</b>" in tab.locator("#results").inner_text()  # shown as text
    _shots(tab, artifacts_dir, "all", width, scheme)

    # The mode switch beside the box: words only, in place (htmx), the address following.
    tab.locator("fieldset.mode-switch label", has_text="Words").click()
    tab.wait_for_url("**mode=words**")
    tab.locator("#results .why-words").first.wait_for()
    assert tab.locator("#results .why-both, #results .why-meaning").count() == 0
    assert tab.locator("fieldset.mode-switch input[value=words]").is_checked()

    # A tab of one kind keeps the query and the mode; its row opens the thing.
    tab.get_by_role("navigation", name="What to search").get_by_role("link", name="Notes").click()
    tab.wait_for_url("**/search/?q=budget&tab=note&mode=words")
    assert rows.count() == 1
    # The current tab is in view, even where the strip is wider than the screen.
    strip = tab.get_by_role("navigation", name="What to search")
    # The strip is drawn again once its counts arrive (htmx swaps it whole); measure that one.
    strip.locator('[aria-current="page"] .tab-count').wait_for()
    current = strip.locator('[aria-current="page"]').bounding_box()
    shown = strip.bounding_box()
    assert current is not None and shown is not None
    assert (
        shown["x"] <= current["x"]
        and current["x"] + current["width"] <= shown["x"] + shown["width"]
    )
    _shots(tab, artifacts_dir, "notes", width, scheme)
    rows.first.locator("a.hit-link").click()
    tab.wait_for_url(f"**/notes/{made.note.public_id}/")

    # "More like this" from a message's menu on the chat page: a meaning search from it.
    tab.goto(f"{live_server.url}/m/{made.late.public_id}/")
    message_menu_item(tab, made.late.public_id, "More like this")
    tab.wait_for_url(f"**/search/?like=message:{made.late.public_id}")
    heading = tab.locator("h2.like-head")
    assert heading.inner_text().startswith("More like Alice: I was running late")
    assert "by meaning" in heading.inner_text()
    tab.locator("#results li.all-hit").first.wait_for()
    assert tab.locator("#results .why-meaning").count() == rows.count()
    _shots(tab, artifacts_dir, "like", width, scheme)
