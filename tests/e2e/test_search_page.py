"""Searching in a real browser: type, see highlighted hits without a reload, open one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archive.store.sink import batch_record
from tests.e2e.test_import_page import sign_in
from tests.factories import batch, message

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_typing_a_query_shows_highlighted_hits_and_a_hit_opens_the_chat(
    live_server: Any, page: Any, artifacts_dir: Path
) -> None:
    batch_record(
        batch=batch(
            message("1", "The ferry to the island leaves at nine", minutes=1),
            message("2", "Bring the <b>tickets</b> for the ferry", sender="bob", minutes=2),
            message("3", "unrelated chatter about lunch", minutes=3),
        )
    )
    sign_in(page, live_server)
    page.get_by_role("link", name="Search", exact=True).click()
    page.wait_for_url("**/search/")
    before = page.evaluate("performance.getEntriesByType('navigation').length")
    box = page.get_by_label("Search messages")
    box.press_sequentially("ferr*", delay=40)
    page.locator("#results mark").first.wait_for()
    hits = page.locator("#results li.hit")
    assert hits.count() == 2
    marks = {mark.inner_text().lower() for mark in page.locator("#results mark").all()}
    assert marks == {"ferry"}  # the whole word the prefix matched
    # htmx swapped the results in: no new page load, and the address follows the query.
    assert page.evaluate("performance.getEntriesByType('navigation').length") == before
    assert "q=ferr" in page.url
    assert "<b>tickets</b>" in page.locator("#results").inner_text()  # shown as text
    page.screenshot(path=str(artifacts_dir / "search-results.png"), full_page=True)
    # Keyboard only: down into the hits, between them, back up to the box.
    box.press("ArrowDown")
    assert page.evaluate("document.activeElement.className") == "hit-link"
    first = page.evaluate("document.activeElement.href")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.href") != first
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert page.evaluate("document.activeElement.id") == "q"
    box.fill("ferry (island")
    page.get_by_role("alert").wait_for()
    assert "never closed" in page.get_by_role("alert").inner_text()
    box.fill("island")
    page.locator("#results li.hit").first.wait_for()
    page.locator("#results li.hit a").first.click()
    page.wait_for_url("**/chats/*/?at=msg_*")
    assert "The ferry to the island" in page.locator("article.focus").inner_text()
