"""The task pages as the owner meets them: a board move answers the columns (the card in its
new column, every count right) or, without JavaScript, goes back to the board; overdue
tasks are marked on the board, in the list and on their page; a task made from a message
when there is no project makes the project too; every mistake is a sentence, never a 500;
no "1 tasks"."""

from __future__ import annotations

from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.test import Client
from django.utils import timezone

from archive.store.models import Message
from archive.store.sink import batch_record
from tasks.models import Project, Task
from tasks.services import project_create, project_update, task_create, task_get, task_update
from tests.factories import batch, message

pytestmark = pytest.mark.django_db


class Board(HTMLParser):
    """What a board answer shows: the cards in each column, each column's count (in its
    heading and in its tab), and the note on what a move did."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.cards: dict[str, list[str]] = {}
        self.counts: dict[str, int] = {}
        self.tabs: dict[str, int] = {}
        self.note = ""
        self._column = ""
        self._count: tuple[dict[str, int], str] | None = None
        self._tab = ""
        self._in_note = False
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if tag == "section" and "board-col" in classes:
            self._column = found["data-status"] or ""
            self.cards[self._column] = []
        elif tag == "article" and "task-card" in classes:
            self.cards[self._column].append((found.get("id") or "").removeprefix("task-"))
        elif tag == "span" and "count" in classes and found.get("data-count"):
            self._count = (self.counts, found["data-count"] or "")
        elif tag == "a" and found.get("data-col"):
            self._tab = found["data-col"] or ""
        elif tag == "span" and "count" in classes and self._tab:
            self._count = (self.tabs, self._tab)
        elif found.get("id") == "board-note":
            self._in_note = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._tab = ""
        elif tag == "p":
            self._in_note = False

    def handle_data(self, data: str) -> None:
        if self._count is not None:
            into, status = self._count
            into[status] = int(data)
            self._count = None
        if self._in_note:
            self.note += data


@pytest.fixture
def home(db: None) -> Project:
    return project_create(key="HOME", name="Home")


def test_a_move_answers_the_board_with_the_card_in_its_new_column(
    home: Project, owner_client: Client
) -> None:
    for title in ("Ferry", "Taxes", "Paint"):
        task_create(project="HOME", title=title)
    task_update(key="HOME-3", status="in_progress")
    before = Board(owner_client.get("/tasks/board/").content.decode())
    assert before.cards["todo"] == ["HOME-2", "HOME-1"] and before.counts["todo"] == 2

    answer = owner_client.post(
        "/tasks/board/", {"key": "HOME-1", "status": "done"}, HTTP_HX_REQUEST="true"
    )
    assert answer.status_code == 200 and "<html" not in answer.content.decode()
    board = Board(answer.content.decode())
    assert board.cards == {
        "todo": ["HOME-2"],
        "in_progress": ["HOME-3"],
        "waiting": [],
        "done": ["HOME-1"],
        "cancelled": [],
    }
    expected = {"todo": 1, "in_progress": 1, "waiting": 0, "done": 1, "cancelled": 0}
    assert board.counts == expected and board.tabs == expected
    assert board.note.strip() == "HOME-1 moved to Done."
    assert task_get(key="HOME-1").status == "done"
    # The card's select now says Done, so htmx keeps focus on the same control.
    assert 'id="status-HOME-1"' in answer.content.decode()


def test_a_move_keeps_the_boards_project_and_works_without_javascript(
    home: Project, owner_client: Client
) -> None:
    project_create(key="WORK", name="Work")
    task_create(project="HOME", title="Ferry")
    task_create(project="WORK", title="Report")
    board = owner_client.get("/tasks/board/", {"project": "HOME"}).content.decode()
    assert 'action="/tasks/board/?project=HOME"' in board and "WORK-1" not in board

    answer = owner_client.post("/tasks/board/?project=HOME", {"key": "HOME-1", "status": "waiting"})
    assert answer.status_code == 302 and answer["Location"] == "/tasks/board/?project=HOME"
    page = owner_client.get(answer["Location"])
    shown = Board(page.content.decode())
    assert shown.cards["waiting"] == ["HOME-1"] and "WORK-1" not in str(shown.cards)
    assert "HOME-1 moved to Waiting." in page.content.decode()  # the flash message

    answer = owner_client.post(
        "/tasks/board/?project=HOME", {"key": "HOME-1", "status": "done"}, HTTP_HX_REQUEST="true"
    )
    assert Board(answer.content.decode()).cards["done"] == ["HOME-1"]
    assert "WORK-1" not in answer.content.decode()


@pytest.mark.parametrize(
    ("key", "status", "sentence"),
    [
        ("HOME-1", "finished", "HOME-1 was not moved: status: one of"),
        ("HOME-9", "done", "HOME-9 was not moved: it is not there any more."),
        ("../etc", "done", "was not moved: task: a key like HOME-12"),
    ],
)
def test_a_move_that_cannot_be_made_says_so(
    home: Project, owner_client: Client, key: str, status: str, sentence: str
) -> None:
    task_create(project="HOME", title="Ferry")
    answer = owner_client.post(
        "/tasks/board/", {"key": key, "status": status}, HTTP_HX_REQUEST="true"
    )
    assert answer.status_code == 422 and sentence in answer.content.decode()
    assert Board(answer.content.decode()).cards["todo"] == ["HOME-1"]
    plain = owner_client.post("/tasks/board/", {"key": key, "status": status}, follow=True)
    assert plain.status_code == 200 and sentence in plain.content.decode()
    assert task_get(key="HOME-1").status == "todo"


def test_overdue_is_marked_on_the_board_the_list_and_the_task(
    home: Project, owner_client: Client
) -> None:
    today = timezone.localdate()
    yesterday = today - timedelta(days=1)
    late = task_create(project="HOME", title="Late", due=yesterday)
    on_time = task_create(project="HOME", title="Today", due=today)
    done = task_create(project="HOME", title="Done late", due=yesterday)
    cancelled = task_create(project="HOME", title="Dropped", due=yesterday)
    task_update(key=done.key, status="done")
    task_update(key=cancelled.key, status="cancelled")
    assert [t.overdue for t in Task.objects.order_by("number")] == [True, False, False, False]

    badge = (
        '<span class="badge overdue">Overdue · '
        f'<span class="nowrap">due {yesterday:%Y-%m-%d}</span></span>'
    )
    board = owner_client.get("/tasks/board/").content.decode()
    list_page = owner_client.get("/tasks/").content.decode()
    for html in (board, list_page):
        assert html.count(badge) == 1  # the late one only: never the done or cancelled ones
        assert html.count('class="badge overdue"') == 1
    assert badge in owner_client.get(f"/tasks/{late.key}/").content.decode()
    for quiet in (on_time, done, cancelled):
        assert "overdue" not in owner_client.get(f"/tasks/{quiet.key}/").content.decode().lower()
    assert f"due {today:%Y-%m-%d}" in board


def test_a_task_from_a_message_with_no_project_makes_the_project_too(
    db: None, owner_client: Client
) -> None:
    batch_record(batch=batch(message("1", "Book the ferry for Saturday")))
    msg = Message.objects.get()
    form = owner_client.get("/tasks/new/", {"message": msg.public_id}, HTTP_HX_REQUEST="true")
    html = form.content.decode()
    assert form.status_code == 200 and "Make a project first" not in html
    assert "<legend>New project</legend>" in html
    assert 'name="project_key"' in html and 'name="project_name"' in html
    assert "Make the project and the task" in html

    made = owner_client.post(
        "/tasks/new/",
        {
            "message": msg.public_id,
            "project_key": "home",
            "project_name": "Home",
            "title": "Book the ferry",
        },
        HTTP_HX_REQUEST="true",
    )
    assert made.status_code == 200
    assert 'Task <a href="/tasks/HOME-1/">HOME-1</a> made' in made.content.decode()
    assert "in the new project Home" in made.content.decode()
    task = task_get(key="HOME-1")
    assert (task.project.name, task.title) == ("Home", "Book the ferry")
    assert [link.message_public_id for link in task.message_links.all()] == [msg.public_id]
    # Now there is a project: the form offers it, and no new-project fields.
    again = owner_client.get("/tasks/new/", {"message": msg.public_id}, HTTP_HX_REQUEST="true")
    assert 'name="project_key"' not in again.content.decode()
    assert '<option value="HOME"' in again.content.decode()


def test_the_new_task_page_without_htmx_makes_both_and_goes_to_the_task(
    db: None, owner_client: Client
) -> None:
    page = owner_client.get("/tasks/new/").content.decode()
    assert "<legend>New project</legend>" in page
    answer = owner_client.post(
        "/tasks/new/",
        {"project_key": "WORK", "project_name": "Work", "title": "Send the report"},
        follow=True,
    )
    assert answer.redirect_chain == [("/tasks/WORK-1/", 302)]
    assert "Task WORK-1 made in the new project Work." in answer.content.decode()


@pytest.mark.parametrize(
    ("fields", "sentence"),
    [
        ({"project_key": "h"}, "A project key is 2 to 10 letters or digits, starting with a"),
        ({"project_key": "my home"}, "with no spaces — like HOME or WORK2."),
        ({"project_key": "1ABC"}, "starting with a letter"),
        ({"project_key": "ABCDEFGHIJK"}, "A project key is 2 to 10 letters or digits"),
        ({"project_key": ""}, "Give the new project a short key, like HOME."),
        ({"project_key": "OLD"}, "There is already a project OLD (it is archived)."),
        ({"project_name": "  "}, "Give the new project a name, like Home."),
        ({"title": "   "}, "Give the task a title: what is there to do?"),
        ({"due": "soon"}, "Write the due date as a date, like 2026-12-24."),
    ],
)
def test_a_bad_new_project_is_a_sentence_and_makes_nothing(
    db: None, owner_client: Client, fields: dict[str, str], sentence: str
) -> None:
    project_create(key="OLD", name="Old")
    project_update(key="OLD", archived=True)
    data = {"project_key": "HOME", "project_name": "Home", "title": "Ferry", **fields}
    for htmx in ({"HTTP_HX_REQUEST": "true"}, {}):
        answer = owner_client.post("/tasks/new/", data, **htmx)  # type: ignore[arg-type]
        html = answer.content.decode()
        assert answer.status_code == 422 and sentence in html
        assert 'aria-invalid="true"' in html
        assert data["title"] in html or not data["title"].strip()  # what was typed stays
    assert list(Project.objects.values_list("key", flat=True)) == ["OLD"]
    assert not Task.objects.exists()


def test_counts_say_task_or_tasks(home: Project, owner_client: Client) -> None:
    empty = owner_client.get("/tasks/board/").content.decode()
    assert "No tasks yet." in empty and '<a href="/tasks/new/">Make one</a>' in empty
    task_create(project="HOME", title="Ferry")
    page = owner_client.get("/tasks/").content.decode()
    assert "1 task<" in page and "1 tasks" not in page
    board = owner_client.get("/tasks/board/").content.decode()
    assert '<span class="visually-hidden"> task</span>' in board  # "1 task" to a screen reader
    task_create(project="HOME", title="Taxes")
    assert "2 tasks" in owner_client.get("/tasks/").content.decode()
    changed = owner_client.post(
        "/admin/tasks/task/",
        {"action": "mark_done", "_selected_action": [Task.objects.get(number=1).pk]},
        follow=True,
    )
    assert "1 task changed." in changed.content.decode()
    task_create(project="HOME", title="Late", due=timezone.localdate() - timedelta(days=1))
    dashboard = owner_client.get("/").content.decode()
    assert "task overdue" in dashboard and "tasks overdue" not in dashboard
    assert "tasks due this week" in dashboard  # none due: "0 tasks"


def test_a_bad_project_on_the_tasks_page_is_a_sentence(db: None, owner_client: Client) -> None:
    answer = owner_client.post("/tasks/projects/new/", {"key": "h", "name": "Home"}, follow=True)
    assert "The project was not made: A project key is 2 to 10 letters or digits" in (
        answer.content.decode()
    )
    answer = owner_client.post("/tasks/projects/new/", {"key": "home", "name": ""}, follow=True)
    assert "The project was not made: Give the new project a name, like Home." in (
        answer.content.decode()
    )
    assert not Project.objects.exists()
    answer = owner_client.post("/tasks/projects/new/", {"key": "home", "name": "Home"}, follow=True)
    assert "Project HOME made." in answer.content.decode()


def test_the_list_reflows_into_cards_titled_by_the_task(
    home: Project, owner_client: Client
) -> None:
    task_create(project="HOME", title="Ferry <b>now</b>")
    page = owner_client.get("/tasks/").content.decode()
    assert '<table class="list reflow task-table">' in page
    assert (
        '<td data-label="Title" class="primary"><a href="/tasks/HOME-1/" class="task-link">'
        "Ferry &lt;b&gt;now&lt;/b&gt;</a></td>"
    ) in page
    for label in ("Key", "Status", "Priority", "Due"):
        assert f'data-label="{label}"' in page
