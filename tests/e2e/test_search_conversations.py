"""Search hits and their conversations in a real browser: each hit names its conversation,
"Group by conversation" gathers them, a group's title opens the conversation, and the
page reads at 1280 and 390 px, light and dark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archive.conversations.services.builds import conversations_build
from archive.store.models import Chat
from archive.store.sink import batch_record
from tests.e2e.test_import_page import sign_in
from tests.factories import batch, message

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

TWO_DAYS = 2 * 24 * 60


def test_hits_show_and_group_by_their_conversation(
    live_server: Any, page: Any, artifacts_dir: Path
) -> None:
    batch_record(
        batch=batch(
            message("1", "Is the ferry to the island running on Sunday?", minutes=0),
            message(
                "2",
                "The ferry runs at nine and at <b>noon</b>; a very long reply that wraps on a"
                " phone, about timetables, tickets, harbours and the weather over the strait",
                sender="bob",
                minutes=1,
                reply_to_external_id="1",
            ),
            message("3", "Great, the noon ferry then", minutes=2, reply_to_external_id="2"),
            message("4", "The ferry company changed its prices", sender="bob", minutes=TWO_DAYS),
            message("5", "Cheaper ferry tickets?", minutes=TWO_DAYS + 1, reply_to_external_id="4"),
        )
    )
    conversations_build(chat_id=Chat.objects.get().pk)
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/search/?q=ferry&sort=oldest")
    hits = page.locator("#results li.hit")
    assert hits.count() == 5
    assert page.locator("#results .hit-conversation").count() == 5
    page.screenshot(path=str(artifacts_dir / "search-hit-conversation-1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.emulate_media(color_scheme="dark")
    page.screenshot(
        path=str(artifacts_dir / "search-hit-conversation-390-dark.png"), full_page=True
    )
    page.set_viewport_size({"width": 1280, "height": 900})
    page.emulate_media(color_scheme="light")
    page.get_by_role("link", name="Group by conversation").click()
    page.wait_for_url("**group=conversation**")
    groups = page.locator("#results li.hit-group")
    assert groups.count() >= 1
    # Every hit is under a group; the first group leads with the first message's hit.
    assert page.locator("#results li.hit-group li.hit").count() == 5
    first = groups.first
    assert "Is the ferry" in first.locator("li.hit").first.inner_text()
    assert "<b>noon</b>" in page.locator("#results").inner_text()  # shown as text
    for width, height in ((1280, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.screenshot(
                path=str(artifacts_dir / f"search-conversations-{width}-{scheme}.png"),
                full_page=True,
            )
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, f"the page is wider than {width} px by {overflow}"
    # Typing keeps the grouping (the form carries it), and a group's title opens its page.
    page.get_by_label("Search messages").fill("noon ferry")
    page.locator("#results li.hit-group").first.wait_for()
    assert "group=conversation" in page.url
    first.locator("h2 a").first.click()
    page.wait_for_url("**/conversations/cnv_*/")
