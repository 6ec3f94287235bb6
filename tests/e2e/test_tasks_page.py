"""Tasks in a real browser: make a task from a message inline on the chat page, then move it
to done on the board without a reload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archive.store.models import Message
from archive.store.sink import batch_record
from tasks.models import Task
from tasks.services import project_create
from tests.e2e.chat_support import message_menu_item
from tests.e2e.test_import_page import sign_in
from tests.factories import batch, message

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_make_a_task_from_a_message_and_move_it_to_done(
    live_server: Any, page: Any, artifacts_dir: Path
) -> None:
    batch_record(batch=batch(message("1", "Can you book the ferry for Saturday?")))
    project_create(key="HOME", name="Home")
    msg = Message.objects.get()
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/chats/{msg.chat_id}/")
    article = message_menu_item(page, msg.public_id, "Make a task")
    title = article.get_by_label("Title")
    title.wait_for()
    assert title.input_value() == "Can you book the ferry for Saturday?"
    title.fill("Book the ferry")
    article.get_by_role("button", name="Make the task").click()
    article.get_by_role("link", name="HOME-1").wait_for()
    task = Task.objects.get()
    assert task.title == "Book the ferry"
    assert [link.message_public_id for link in task.message_links.all()] == [msg.public_id]
    page.screenshot(path=str(artifacts_dir / "task-from-message.png"), full_page=True)

    page.get_by_role("link", name="Tasks", exact=True).click()
    page.get_by_role("link", name="Board", exact=True).click()
    # The board loaded whole (htmx set up on it) before its select is changed: a change made
    # while the page is still starting posts nothing (this raced under load).
    page.wait_for_url("**/tasks/board/")
    page.wait_for_load_state("load")
    loads = page.evaluate("performance.getEntriesByType('navigation').length")
    page.get_by_label("Status of HOME-1").select_option("done")
    # Locators, not wait_for_function: its string predicate is eval'd in the page, which
    # the Content-Security-Policy refuses (no 'unsafe-eval'). The board comes back with
    # the card in the Done column.
    page.wait_for_selector("#col-done #task-HOME-1 option[value=done][selected]", state="attached")
    page.wait_for_selector(".htmx-request", state="detached")
    assert page.evaluate("performance.getEntriesByType('navigation').length") == loads
    task.refresh_from_db()
    assert task.status == "done"
    page.goto(f"{live_server.url}/tasks/HOME-1/")
    assert "status: todo → done" in page.locator(".history").inner_text()
    page.screenshot(path=str(artifacts_dir / "task-done.png"), full_page=True)
