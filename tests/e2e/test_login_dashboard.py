"""The owner's first visit, in a real browser: one-time link → password → dashboard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archive.owner.services import login_code_issue
from archive.store.domain import AttachmentRecord
from archive.store.sink import batch_record
from tests.conftest import OWNER_PASSWORD
from tests.factories import batch, message

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_login_with_one_time_code_shows_dashboard(
    live_server: Any, page: Any, artifacts_dir: Path
) -> None:
    batch_record(
        batch=batch(
            message("1", "Hello from the archive, see https://example.org"),
            message(
                "2",
                "Reply with a file",
                minutes=1,
                reply_to_external_id="1",
                attachments=(AttachmentRecord(file_name="plan.pdf", size=1234),),
            ),
            message("3", "Another chat", chat="chat-2", minutes=2),
        )
    )
    issued = login_code_issue(base_url=live_server.url)

    page.goto(live_server.url + "/chats/")
    assert "/login/" in page.url  # anonymous visitors are sent to sign in

    page.goto(issued.url)
    page.get_by_label("New password").fill(OWNER_PASSWORD)
    page.get_by_label("Repeat it").fill(OWNER_PASSWORD)
    page.get_by_role("button", name="Set password and sign in").click()
    page.wait_for_url(live_server.url + "/")

    assert page.locator('[data-count="accounts"]').inner_text() == "1"
    assert page.locator('[data-count="chats"]').inner_text() == "2"
    assert page.locator('[data-count="messages"]').inner_text() == "3"
    assert page.locator('[data-count="attachments"]').inner_text() == "1"
    assert page.locator("#worker-status").is_visible()
    page.screenshot(path=str(artifacts_dir / "dashboard.png"), full_page=True)

    # The link works once: a second visit is refused.
    page.goto(issued.url)
    assert "Link not valid" in page.content()

    # From a recent message to its chat, scrolled to it.
    page.goto(live_server.url + "/")
    page.get_by_role("link", name="Alice in Chat chat-1").first.click()
    focused = page.locator("article.msg.focus")
    focused.wait_for()
    assert (
        "Hello from the archive" in focused.inner_text()
        or "Reply with a file" in focused.inner_text()
    )
    link = page.locator("article.msg a[href='https://example.org']")
    assert link.get_attribute("rel") == "noopener nofollow noreferrer"
    page.screenshot(path=str(artifacts_dir / "chat.png"), full_page=True)


def test_htmx_loads_older_messages(
    live_server: Any, page: Any, client: Any, artifacts_dir: Path
) -> None:
    batch_record(batch=batch(*[message(str(i), f"line {i}", minutes=i) for i in range(80)]))
    issued = login_code_issue(base_url=live_server.url)
    page.goto(issued.url)
    page.get_by_label("New password").fill(OWNER_PASSWORD)
    page.get_by_label("Repeat it").fill(OWNER_PASSWORD)
    page.get_by_role("button", name="Set password and sign in").click()
    page.wait_for_url(live_server.url + "/")
    page.goto(live_server.url + "/chats/")
    page.get_by_role("link", name="Chat chat-1").click()
    assert page.locator("article.msg").count() == 50
    url_before = page.url
    # The chat opens at its newest message; nothing older is loaded until the reader
    # scrolls up to the top, which then loads the page before by itself.
    page.wait_for_load_state("networkidle")
    assert page.locator("article.msg").count() == 50
    assert page.evaluate("window.scrollY") > 0
    page.evaluate("window.scrollTo(0, 0)")  # a script's scroll loads nothing
    page.mouse.move(640, 400)
    page.mouse.wheel(0, -120)  # the reader's does
    page.get_by_text("Start of the chat").wait_for()
    assert page.locator("article.msg").count() == 80
    assert page.url == url_before  # loaded in place, no navigation
    texts = page.locator("article.msg .body").all_inner_texts()
    assert texts[0] == "line 0" and texts[-1] == "line 79"
