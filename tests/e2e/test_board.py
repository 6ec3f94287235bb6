"""The board in a real browser: a card moved by its status select lands in its new column and
every count changes, without a reload; at 390 px the columns scroll sideways inside the board
only (the page never does) and a move keeps the column the owner was looking at; with no
project yet, the new-task form (a page, or inline under a message on the chat page) makes
the project and the task in one submit."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from archive.store.models import Message
from archive.store.sink import batch_record
from tasks.models import Project, Task
from tasks.services import project_create, task_create, task_update
from tests.e2e.chat_support import message_menu_item
from tests.e2e.test_import_page import sign_in
from tests.factories import batch, message

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def make_board() -> None:
    project_create(key="HOME", name="Home")
    yesterday = timezone.localdate() - timedelta(days=1)
    task_create(project="HOME", title="Book the ferry for Saturday")
    task_create(project="HOME", title="Pay the council tax", due=yesterday, priority="high")
    task_create(project="HOME", title="Paint the hall", due=timezone.localdate() + timedelta(3))
    task_create(project="HOME", title="Fix the bike's back brake")
    task_create(project="HOME", title="Call the plumber about the boiler")
    task_update(key="HOME-3", status="in_progress")
    task_update(key="HOME-4", status="waiting")
    task_update(key="HOME-5", status="done")


def counts(page: Any) -> dict[str, str]:
    return {
        status: page.locator(f'#board [data-count="{status}"]').inner_text()
        for status in ("todo", "in_progress", "waiting", "done", "cancelled")
    }


@pytest.fixture
def phone(browser: Any) -> Iterator[Any]:
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, color_scheme="dark", reduced_motion="reduce"
    )
    yield context.new_page()
    context.close()


def test_moving_a_card_redraws_the_columns_without_a_reload(
    live_server: Any, page: Any, artifacts_dir: Path
) -> None:
    from playwright.sync_api import expect

    make_board()
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/tasks/board/")
    assert counts(page) == {
        "todo": "2",
        "in_progress": "1",
        "waiting": "1",
        "done": "1",
        "cancelled": "0",
    }
    overdue = page.locator("#task-HOME-2 .badge.overdue")
    expect(overdue).to_have_text(
        f"Overdue · due {timezone.localdate() - timedelta(days=1):%Y-%m-%d}"
    )
    page.emulate_media(color_scheme="light")
    page.screenshot(path=str(artifacts_dir / "board-1280.png"), full_page=True)
    page.emulate_media(color_scheme="dark")
    page.screenshot(path=str(artifacts_dir / "board-1280-dark.png"), full_page=True)
    page.emulate_media(color_scheme="light")

    loads = page.evaluate("performance.getEntriesByType('navigation').length")
    page.get_by_label("Status of HOME-1").focus()
    page.get_by_label("Status of HOME-1").select_option("in_progress")
    expect(page.locator("#col-in_progress #task-HOME-1")).to_be_attached()
    expect(page.locator("#col-todo #task-HOME-1")).to_have_count(0)
    expect(page.locator("#board-note")).to_have_text("HOME-1 moved to In progress.")
    assert counts(page) == {
        "todo": "1",
        "in_progress": "2",
        "waiting": "1",
        "done": "1",
        "cancelled": "0",
    }
    expect(page.locator("#status-HOME-1")).to_be_focused()  # the control the owner used
    assert page.evaluate("performance.getEntriesByType('navigation').length") == loads
    assert Task.objects.get(number=1).status == "in_progress"

    page.get_by_label("Status of HOME-2").select_option("done")
    expect(page.locator("#col-done #task-HOME-2")).to_be_attached()
    expect(page.locator("#task-HOME-2 .badge.overdue")).to_have_count(0)  # done is never late
    assert counts(page)["todo"] == "0" and counts(page)["done"] == "2"
    assert page.evaluate("performance.getEntriesByType('navigation').length") == loads
    page.screenshot(path=str(artifacts_dir / "board-1280-moved.png"), full_page=True)


def test_the_board_at_390px_scrolls_inside_itself_and_keeps_its_place(
    live_server: Any, phone: Any, artifacts_dir: Path
) -> None:
    from playwright.sync_api import expect

    make_board()
    sign_in(phone, live_server)
    phone.goto(f"{live_server.url}/tasks/board/")
    strip = phone.locator("#board [data-board]")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390  # no page-wide scroll
    assert strip.evaluate("el => el.scrollWidth > el.clientWidth")  # the board's own strip
    tabs = phone.get_by_role("navigation", name="Columns")
    expect(tabs.get_by_role("link", name="To do 2")).to_be_visible()
    phone.screenshot(path=str(artifacts_dir / "board-390-dark.png"), full_page=True)
    phone.emulate_media(color_scheme="light")
    phone.screenshot(path=str(artifacts_dir / "board-390.png"), full_page=True)

    tabs.get_by_role("link", name="In progress 1").click()
    expect(tabs.get_by_role("link", name="In progress 1")).to_have_attribute("aria-current", "true")
    assert phone.evaluate("window.location.hash") == ""  # scrolled sideways, not jumped
    kept = strip.evaluate("el => el.scrollLeft")
    assert kept > 0
    phone.get_by_label("Status of HOME-3").focus()
    phone.get_by_label("Status of HOME-3").select_option("waiting")
    expect(phone.locator("#col-waiting #task-HOME-3")).to_be_attached()
    expect(tabs.get_by_role("link", name="Waiting 2")).to_be_visible()
    assert strip.evaluate("el => el.scrollLeft") == kept  # still on "In progress"
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    phone.screenshot(path=str(artifacts_dir / "board-390-moved.png"), full_page=True)


def test_a_new_task_with_no_project_makes_both(
    live_server: Any, phone: Any, artifacts_dir: Path
) -> None:
    from playwright.sync_api import expect

    sign_in(phone, live_server)
    phone.emulate_media(color_scheme="light")
    phone.goto(f"{live_server.url}/tasks/new/")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    expect(phone.get_by_role("group", name="New project")).to_be_visible()
    phone.screenshot(path=str(artifacts_dir / "task-new-no-project.png"), full_page=True)
    phone.get_by_label("Key").fill("home 1")
    phone.get_by_label("Name").fill("Home")
    phone.get_by_label("Title").fill("Book the ferry")
    phone.get_by_role("button", name="Make the project and the task").click()
    expect(phone.get_by_text("A project key is 2 to 10 letters or digits")).to_be_visible()
    expect(phone.get_by_label("Title")).to_have_value("Book the ferry")  # kept
    phone.screenshot(path=str(artifacts_dir / "task-new-no-project-error.png"), full_page=True)
    assert not Project.objects.exists()

    phone.get_by_label("Key").fill("home")
    phone.get_by_role("button", name="Make the project and the task").click()
    phone.wait_for_url(f"{live_server.url}/tasks/HOME-1/")
    expect(phone.get_by_text("Task HOME-1 made in the new project Home.")).to_be_visible()
    assert Task.objects.get().project.key == "HOME"


def test_the_list_and_a_task_at_390px_show_titles_statuses_and_overdue(
    live_server: Any, phone: Any, artifacts_dir: Path
) -> None:
    from playwright.sync_api import expect

    make_board()
    sign_in(phone, live_server)
    phone.emulate_media(color_scheme="light")
    phone.goto(f"{live_server.url}/tasks/")
    row = phone.locator("table.task-table tbody tr", has_text="Pay the council tax")
    expect(row.get_by_role("link", name="Pay the council tax")).to_be_visible()
    expect(row.locator(".status")).to_be_visible()
    expect(row.locator(".badge.overdue")).to_be_visible()
    # On a phone each task is a card with its title first.
    title_box = row.locator("td.primary").bounding_box()
    key_box = row.locator("td.task-key").bounding_box()
    assert title_box["y"] < key_box["y"]
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    phone.screenshot(path=str(artifacts_dir / "tasks-list-390.png"), full_page=True)
    phone.emulate_media(color_scheme="dark")
    phone.screenshot(path=str(artifacts_dir / "tasks-list-390-dark.png"), full_page=True)

    phone.goto(f"{live_server.url}/tasks/HOME-2/")
    expect(phone.locator(".task-meta .badge.overdue")).to_be_visible()
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    phone.screenshot(path=str(artifacts_dir / "task-overdue-390-dark.png"), full_page=True)


def test_making_a_task_from_a_message_with_no_project_in_the_chat(
    live_server: Any, page: Any, artifacts_dir: Path
) -> None:
    from playwright.sync_api import expect

    batch_record(batch=batch(message("1", "Can you book the ferry for Saturday?")))
    msg = Message.objects.get()
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/chats/{msg.chat_id}/")
    article = message_menu_item(page, msg.public_id, "Make a task")
    form = article.locator("form.task-new")
    expect(form.get_by_role("group", name="New project")).to_be_visible()
    form.get_by_label("Key").fill("a")
    form.get_by_label("Name").fill("Home")
    form.get_by_label("Title").fill("Book the ferry")
    form.get_by_role("button", name="Make the project and the task").click()
    expect(form.get_by_text("A project key is 2 to 10 letters or digits")).to_be_visible()
    form.get_by_label("Key").fill("home")
    page.screenshot(path=str(artifacts_dir / "task-new-no-project-chat.png"))
    form.get_by_role("button", name="Make the project and the task").click()
    made = article.locator(".task-made")
    expect(made).to_contain_text("Task HOME-1 made: Book the ferry (in the new project Home)")
    expect(made.get_by_role("link", name="HOME-1")).to_have_attribute("href", "/tasks/HOME-1/")
    task = Task.objects.get()
    assert [link.message_public_id for link in task.message_links.all()] == [msg.public_id]
    page.screenshot(path=str(artifacts_dir / "task-made-chat.png"))
