"""The tasks app: numbering that never repeats (two creates at once included), an event for
every change, admin bulk actions through the services, message links, the API with its
scopes, and the pages."""

from __future__ import annotations

import json
import threading
from datetime import date, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from archive.gateway.services.agents import agent_create
from archive.store.models import Message, Person
from archive.store.sink import batch_record, message_purge
from tasks.models import Project, Task, TaskEvent
from tasks.services import (
    counts_due,
    project_create,
    task_comment,
    task_create,
    task_find,
    task_get,
    task_link_message,
    task_update,
)
from tests.factories import T0, batch, message
from wirecat.errors import Conflict, Invalid, NotFound

pytestmark = pytest.mark.django_db


@pytest.fixture
def home(db: None) -> Project:
    return project_create(key="home", name="Home")


def events(task: Task) -> list[tuple[str, str, str, str]]:
    return [(e.field, e.old, e.new, e.actor) for e in TaskEvent.objects.filter(task=task)]


def test_keys_are_numbered_per_project_and_never_reused(home: Project) -> None:
    work = project_create(key="WORK", name="Work")
    first, second = task_create(project="HOME", title="a"), task_create(project="home", title="b")
    other = task_create(project="WORK", title="c")
    assert [first.key, second.key, other.key] == ["HOME-1", "HOME-2", "WORK-1"]
    Task.objects.filter(pk=second.pk).delete()
    assert task_create(project="HOME", title="d").key == "HOME-3"  # 2 is never given again
    assert work.key == "WORK"
    with pytest.raises(Conflict, match="project HOME already exists"):
        project_create(key="HOME", name="again")
    with pytest.raises(Invalid, match="key: 2 to 10 capitals"):
        project_create(key="h", name="x")


@pytest.mark.django_db(transaction=True)
def test_two_creates_at_once_never_share_a_number() -> None:
    project_create(key="RACE", name="Race")
    barrier = threading.Barrier(4)
    keys: list[str] = []
    problems: list[BaseException] = []

    def make(n: int) -> None:
        try:
            barrier.wait()
            for i in range(5):
                keys.append(task_create(project="RACE", title=f"t{n}-{i}").key)
        except BaseException as exc:
            problems.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=make, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    assert sorted(keys, key=lambda k: int(k.split("-")[1])) == [f"RACE-{n}" for n in range(1, 21)]


def test_every_change_is_an_event(home: Project) -> None:
    ann = Person.objects.create(name="Ann")
    parent = task_create(project="HOME", title="Renovate")
    task = task_create(project="HOME", title="Paint", due="2026-12-01")
    task_update(key=task.key, title="Paint the hall", actor="agent:helper")
    task_update(key=task.key, status="in_progress", priority="high", due="2026-12-05")
    task_update(key=task.key, parent=parent.key, assignees=[ann.pk], owner_assigned=True)
    task_update(key=task.key, description="two coats")
    task_update(key=task.key, status="in_progress")  # no change: no event
    task_comment(key=task.key, text="bought the paint")
    assert events(task) == [
        ("created", "", "HOME-2", "owner"),
        ("title", "Paint", "Paint the hall", "agent:helper"),
        ("status", "todo", "in_progress", "owner"),
        ("priority", "normal", "high", "owner"),
        ("due", "2026-12-01", "2026-12-05", "owner"),
        ("parent", "", "HOME-1", "owner"),
        ("assignees", "", "owner, Ann", "owner"),
        ("description", "", "", "owner"),
        ("comment", "", "bought the paint", "owner"),
    ]
    with pytest.raises(Invalid, match="own ancestor"):
        task_update(key=parent.key, parent=task.key)
    with pytest.raises(Invalid, match="status: one of"):
        task_update(key=task.key, status="finished")
    with pytest.raises(Invalid, match="due: a date like"):
        task_update(key=task.key, due="soon")
    with pytest.raises(NotFound, match="task HOME-99 does not exist"):
        task_get(key="home-99")
    with pytest.raises(Invalid, match="task: a key like HOME-12"):
        task_get(key="../etc")


def test_message_links_survive_edits_and_purges_are_refused_gracefully(
    home: Project, owner_client: Client
) -> None:
    batch_record(batch=batch(message("1", "buy milk"), message("2", "call Ann", minutes=1)))
    milk, call = Message.objects.order_by("id")
    task = task_create(project="HOME", title="Milk", messages=[milk.public_id])
    batch_record(batch=batch(message("1", "buy oat milk", edited_at=T0 + timedelta(hours=1))))
    page = owner_client.get(f"/tasks/{task.key}/").content.decode()
    assert "buy oat milk" in page  # the link follows the message, the text is never copied
    message_purge(message_ids=[milk.pk])
    page = owner_client.get(f"/tasks/{task.key}/").content.decode()
    assert f"{milk.public_id} — the message was purged" in page
    with pytest.raises(NotFound, match="purged, or never stored"):
        task_create(project="HOME", title="x", messages=[milk.public_id])
    task_link_message(key=task.key, message=call.public_id)
    assert [e[0] for e in events(task)][-1] == "message"


def test_find_filters_and_dashboard_counts(home: Project) -> None:
    today = date(2026, 11, 30)
    ann = Person.objects.create(name="Ann")
    task_create(project="HOME", title="Running shoes", due=today - timedelta(days=1))
    task_create(project="HOME", title="Taxes", due=today + timedelta(days=3), assignees=[ann.pk])
    done = task_create(project="HOME", title="Old", due=today - timedelta(days=9))
    task_update(key=done.key, status="done")
    assert [t.title for t in task_find(due="overdue", today=today)] == ["Running shoes"]
    assert [t.title for t in task_find(due="week", today=today)] == ["Taxes"]
    assert [t.title for t in task_find(assignee=ann.pk)] == ["Taxes"]
    assert [t.title for t in task_find(q="run")] == ["Running shoes"]  # by stem
    assert {t.title for t in task_find(status="open")} == {"Running shoes", "Taxes"}
    assert counts_due(today=today) == (1, 1)
    with pytest.raises(Invalid, match="due: overdue or week"):
        list(task_find(due="tomorrow"))


def test_admin_bulk_actions_write_events(home: Project, owner_client: Client) -> None:
    tasks = [task_create(project="HOME", title=f"t{i}") for i in range(3)]
    response = owner_client.post(
        "/admin/tasks/task/",
        {"action": "mark_done", "_selected_action": [t.pk for t in tasks]},
        follow=True,
    )
    assert response.status_code == 200
    for task in tasks:
        assert Task.objects.get(pk=task.pk).status == "done"
        assert ("status", "todo", "done", "owner") in events(task)
    assert owner_client.get(f"/admin/tasks/task/{tasks[0].pk}/change/").status_code == 200
    made = owner_client.post(
        "/admin/tasks/task/add/",
        {
            "project": home.pk,
            "title": "From admin",
            "status": "todo",
            "priority": "normal",
            "events-TOTAL_FORMS": "0",
            "events-INITIAL_FORMS": "0",
        },
    )
    assert made.status_code == 302
    assert Task.objects.get(title="From admin").key == "HOME-4"


def api(client: Client, method: str, url: str, token: str, body: Any = None) -> Any:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if method == "get":
        return client.get(url, **headers)
    return client.post(url, json.dumps(body), content_type="application/json", **headers)


def test_api_crud_scopes_and_agent_actor(home: Project, client: Client) -> None:
    writer = agent_create(name="planner", scopes=["tasks.read", "tasks.write"]).token
    reader = agent_create(name="looker", scopes=["tasks.read"]).token
    made = api(client, "post", "/api/tasks", writer, {"project": "HOME", "title": "Plan trip"})
    assert made.status_code == 200 and made.json()["key"] == "HOME-1"
    assert (
        api(client, "post", "/api/tasks", reader, {"project": "HOME", "title": "x"}).status_code
        == 403
    )
    changed = api(
        client, "post", "/api/tasks/HOME-1", writer, {"status": "done", "due": "2026-12-24"}
    )
    assert changed.json()["status"] == "done" and changed.json()["due"] == "2026-12-24"
    history = api(client, "get", "/api/tasks/HOME-1/events", reader).json()
    assert [(e["field"], e["actor"]) for e in history] == [
        ("created", "agent:planner"),
        ("status", "agent:planner"),
        ("due", "agent:planner"),
    ]
    assert [t["key"] for t in api(client, "get", "/api/tasks?status=done", reader).json()] == [
        "HOME-1"
    ]
    assert api(client, "get", "/api/tasks/HOME-9", reader).status_code == 404
    assert api(client, "post", "/api/tasks/HOME-1", writer, {"status": "nope"}).status_code == 422
    assert [p["key"] for p in api(client, "get", "/api/projects", reader).json()] == ["HOME"]


def test_pages_list_board_detail_and_making_a_task_from_a_message(
    home: Project, owner_client: Client
) -> None:
    batch_record(batch=batch(message("1", "Please send the <b>invoice</b> by Friday")))
    msg = Message.objects.get()
    form = owner_client.get("/tasks/new/", {"message": msg.public_id}, HTTP_HX_REQUEST="true")
    html = form.content.decode()
    assert form.status_code == 200 and "<html" not in html
    assert 'value="Please send the &lt;b&gt;invoice&lt;/b&gt; by Friday"' in html
    made = owner_client.post(
        "/tasks/new/",
        {"message": msg.public_id, "project": "HOME", "title": "Send the invoice"},
        HTTP_HX_REQUEST="true",
    )
    assert 'Task <a href="/tasks/HOME-1/">HOME-1</a> made' in made.content.decode()
    task = task_get(key="HOME-1")
    assert [link.message_public_id for link in task.message_links.all()] == [msg.public_id]
    chat_page = owner_client.get(f"/chats/{msg.chat_id}/").content.decode()
    assert f"/tasks/new/?message={msg.public_id}" in chat_page
    board = owner_client.get("/tasks/board/").content.decode()
    assert "HOME-1" in board and "Send the invoice" in board
    moved = owner_client.post(
        "/tasks/board/", {"key": "HOME-1", "status": "done"}, HTTP_HX_REQUEST="true"
    )
    assert moved.status_code == 200 and 'id="task-HOME-1"' in moved.content.decode()
    assert task_get(key="HOME-1").status == "done"
    assert "Send the invoice" in owner_client.get("/tasks/", {"status": "done"}).content.decode()
    assert owner_client.get("/tasks/", {"status": "weird"}).status_code == 422
    assert owner_client.get("/tasks/NOPE-1/").status_code == 404
    bad = owner_client.post("/tasks/new/", {"project": "HOME", "title": " "})
    assert bad.status_code == 422 and "Give the task a title" in bad.content.decode()
    assert owner_client.get("/tasks/new/", {"message": "msg_nope"}).status_code == 404
    overdue = task_create(
        project="HOME", title="late", due=timezone.localdate() - timedelta(days=2)
    )
    dashboard = owner_client.get("/").content.decode()
    assert 'data-count="overdue">1<' in dashboard and overdue.key == "HOME-2"


def test_descriptions_are_markdown_rendered_safely(home: Project, owner_client: Client) -> None:
    task = task_create(
        project="HOME",
        title="Notes",
        description=(
            "**Bold** and [a link](https://example.org) and [bad](javascript:alert(1))\n\n"
            "<script>alert(1)</script> <img src=x onerror=alert(2)>"
        ),
    )
    html = owner_client.get(f"/tasks/{task.key}/").content.decode()
    assert "<strong>Bold</strong>" in html
    assert 'href="https://example.org"' in html and 'rel="noopener nofollow noreferrer"' in html
    assert 'href="javascript' not in html  # left as plain text, never a link
    assert "<script>alert(1)" not in html and "<img src=x" not in html


def test_api_deletes_and_changes_projects_and_tasks(home: Project, client: Client) -> None:
    token = agent_create(name="admin-bot", scopes=["tasks.read", "tasks.write"]).token
    parent = task_create(project="HOME", title="Parent")
    child = task_create(project="HOME", title="Child", parent=parent.key)
    refused = client.delete("/api/projects/HOME", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert refused.status_code == 409 and "archive it instead" in refused.json()["detail"]
    gone = client.delete(f"/api/tasks/{parent.key}", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert gone.json() == {"deleted": "HOME-1"}
    assert ("parent", "HOME-1", "", "owner") in events(child)
    assert task_create(project="HOME", title="Next").key == "HOME-3"
    archived = api(client, "post", "/api/projects/HOME", token, {"archived": True})
    assert archived.json()["archived"] is True
    late = api(client, "post", "/api/tasks", token, {"project": "HOME", "title": "x"})
    assert late.status_code == 409 and "archived" in late.json()["detail"]
    empty = project_create(key="EMPTY", name="Empty")
    assert (
        client.delete("/api/projects/EMPTY", HTTP_AUTHORIZATION=f"Bearer {token}").status_code
        == 200
    )
    assert not Project.objects.filter(pk=empty.pk).exists()


def test_half_a_surrogate_pair_in_any_body_is_a_422_naming_the_field(
    home: Project, client: Client
) -> None:
    writer = agent_create(name="planner", scopes=["tasks.read", "tasks.write"]).token
    # JSON may write a lone surrogate; no text encoding holds one, so the store could not.
    raw = '{"project": "HOME", "title": "Plan \\ud800 trip", "assignees": []}'
    refused = client.post(
        "/api/tasks", raw, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {writer}"
    )
    assert refused.status_code == 422
    assert "title: not valid Unicode" in refused.content.decode()
    assert not Task.objects.exists()
    fine = api(client, "post", "/api/tasks", writer, {"project": "HOME", "title": "Plan 🚗 trip"})
    assert fine.status_code == 200 and fine.json()["title"] == "Plan 🚗 trip"
