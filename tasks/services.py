"""Task use cases: create, update, comment, find. Every change of a tracked field is a
TaskEvent written in the same transaction, with the actor (the owner or an agent)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from archive.store.models import Message, Person
from tasks.models import Priority, Project, Status, Task, TaskEvent, TaskMessage
from wirecat.errors import Conflict, Invalid, NotFound

KEY = re.compile(r"^([A-Z][A-Z0-9]{1,9})-(\d{1,9})$")
TITLE_MAX = 300
TRACKED = ("title", "status", "priority", "due", "parent", "assignees")


def project_create(*, key: str, name: str, description: str = "") -> Project:
    cleaned = key.strip().upper()
    if not re.match(r"^[A-Z][A-Z0-9]{1,9}$", cleaned):
        raise Invalid("key: 2 to 10 capitals and digits, starting with a letter (e.g. HOME)")
    if not name.strip():
        raise Invalid("name: empty")
    if Project.objects.filter(key=cleaned).exists():
        raise Conflict(f"project {cleaned} already exists")
    return Project.objects.create(key=cleaned, name=name.strip()[:200], description=description)


@transaction.atomic
def project_update(
    *,
    key: str,
    name: str | None = None,
    description: str | None = None,
    archived: bool | None = None,
) -> Project:
    project = project_get(key=key)
    if name is not None:
        if not name.strip():
            raise Invalid("name: empty")
        project.name = name.strip()[:200]
    if description is not None:
        project.description = description
    if archived is not None:
        project.archived = archived
    project.save()
    return project


@transaction.atomic
def project_delete(*, key: str) -> None:
    """Delete an empty project; one with tasks is archived instead (Conflict says so)."""
    project = project_get(key=key)
    if project.tasks.exists():
        raise Conflict(f"project {project.key} has tasks: archive it instead")
    project.delete()


@transaction.atomic
def task_delete(*, key: str) -> None:
    """Delete a task (its number is never given again); its subtasks lose their parent,
    each change an event."""
    task = task_get(key=key)
    for child in task.subtasks.select_related("project"):
        _event(child, "parent", task.key, "", "owner")
    task.delete()


def project_get(*, key: str) -> Project:
    found = Project.objects.filter(key=key.strip().upper()).first()
    if found is None:
        raise NotFound(f"project {key[:20]!r} does not exist")
    return found


def task_get(*, key: str) -> Task:
    match = KEY.match(key.strip().upper())
    if not match:
        raise Invalid(f"task: a key like HOME-12, not {key[:30]!r}")
    task = (
        Task.objects.select_related("project", "parent", "parent__project")
        .filter(project__key=match.group(1), number=int(match.group(2)))
        .first()
    )
    if task is None:
        raise NotFound(f"task {key.upper()} does not exist")
    return task


def _title(text: str) -> str:
    cleaned = " ".join(str(text).split())
    if not cleaned:
        raise Invalid("title: empty")
    if len(cleaned) > TITLE_MAX:
        raise Invalid(f"title: at most {TITLE_MAX} characters")
    return cleaned


def _choice(field: str, value: str, choices: Any) -> str:
    if value not in choices.values:
        raise Invalid(f"{field}: one of {', '.join(choices.values)}")
    return value


def _due(value: date | str | None) -> date | None:
    if value in (None, ""):
        return None
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError as exc:
        raise Invalid(f"due: a date like 2026-12-24, not {str(value)[:20]!r}") from exc


def _people(ids: Iterable[int]) -> list[Person]:
    wanted = sorted(set(ids))
    found = list(Person.objects.filter(pk__in=wanted))
    if len(found) != len(wanted):
        missing = sorted(set(wanted) - {p.pk for p in found})
        raise NotFound(f"assignees: no person {missing[0]}")
    return found


def _assignee_text(task: Task) -> str:
    names = sorted(p.name for p in task.assignees.all())
    if task.owner_assigned:
        names.insert(0, "owner")
    return ", ".join(names)


def _event(task: Task, field: str, old: str, new: str, actor: str) -> None:
    TaskEvent.objects.create(task=task, field=field, old=old, new=new, actor=actor)


def _link_messages(task: Task, public_ids: Iterable[str]) -> None:
    for public_id in public_ids:
        message = Message.objects.filter(public_id=public_id).first()
        if message is None:
            raise NotFound(f"messages: no message {public_id[:40]!r} (purged, or never stored)")
        TaskMessage.objects.get_or_create(
            task=task, message_public_id=public_id, defaults={"message": message}
        )


@transaction.atomic
def task_create(
    *,
    project: str,
    title: str,
    description: str = "",
    status: str = Status.TODO,
    priority: str = Priority.NORMAL,
    due: date | str | None = None,
    assignees: Sequence[int] = (),
    owner_assigned: bool = False,
    parent: str | None = None,
    messages: Sequence[str] = (),
    actor: str = "owner",
) -> Task:
    """A new task, numbered next in its project (never reusing a number, whatever runs at
    the same time: the number comes from the project row inside this write transaction)."""
    found = project_get(key=project)
    if found.archived:
        raise Conflict(f"project {found.key} is archived")
    fields = {
        "title": _title(title),
        "description": description,
        "status": _choice("status", status, Status),
        "priority": _choice("priority", priority, Priority),
        "due": _due(due),
        "owner_assigned": owner_assigned,
        "parent": task_get(key=parent) if parent else None,
    }
    people = _people(assignees)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE tasks_project SET next_number = next_number + 1 WHERE id = %s"
            " RETURNING next_number - 1",
            [found.pk],
        )
        number = int(cursor.fetchone()[0])
    task = Task.objects.create(project=found, number=number, **fields)
    task.assignees.set(people)
    _link_messages(task, messages)
    _event(task, "created", "", task.key, actor)
    return task


@transaction.atomic
def task_create_with_project(
    *, project_key: str, project_name: str, **task_fields: Any
) -> tuple[Project, Task]:
    """A new project and its first task, both or neither: a task refused (an empty title, a
    bad date) leaves no project behind."""
    project = project_create(key=project_key, name=project_name)
    return project, task_create(project=project.key, **task_fields)


@transaction.atomic
def task_update(*, key: str, actor: str = "owner", **changes: Any) -> Task:
    """Change tracked fields (title, description, status, priority, due, parent,
    assignees, owner_assigned); one event per field that really changed."""
    task = task_get(key=key)
    unknown = set(changes) - {*TRACKED, "description", "owner_assigned"}
    if unknown:
        raise Invalid(f"fields: cannot change {', '.join(sorted(unknown))}")
    before_assignees = _assignee_text(task)
    if "title" in changes:
        new = _title(changes["title"])
        if new != task.title:
            _event(task, "title", task.title, new, actor)
            task.title = new
    if "description" in changes and changes["description"] != task.description:
        _event(task, "description", "", "", actor)  # the text is in the task, not the log
        task.description = str(changes["description"])
    for field, choices in (("status", Status), ("priority", Priority)):
        if field in changes:
            new = _choice(field, changes[field], choices)
            if new != getattr(task, field):
                _event(task, field, getattr(task, field), new, actor)
                setattr(task, field, new)
    if "due" in changes:
        new_due = _due(changes["due"])
        if new_due != task.due:
            _event(task, "due", str(task.due or ""), str(new_due or ""), actor)
            task.due = new_due
    if "parent" in changes:
        parent = task_get(key=changes["parent"]) if changes["parent"] else None
        if parent is not None and (parent.pk == task.pk or _descends(parent, task)):
            raise Invalid("parent: a task cannot be its own ancestor")
        if (parent.pk if parent else None) != task.parent_id:
            old = task.parent.key if task.parent else ""
            _event(task, "parent", old, parent.key if parent else "", actor)
            task.parent = parent
    if "assignees" in changes:
        task.assignees.set(_people(changes["assignees"]))
    if "owner_assigned" in changes:
        task.owner_assigned = bool(changes["owner_assigned"])
    task.save()
    after = _assignee_text(task)
    if after != before_assignees:
        _event(task, "assignees", before_assignees, after, actor)
    return task


def _descends(candidate: Task, ancestor: Task) -> bool:
    seen: set[int] = set()
    node: Task | None = candidate
    while node is not None and node.pk not in seen:
        if node.parent_id == ancestor.pk:
            return True
        seen.add(node.pk)
        node = node.parent
    return False


@transaction.atomic
def task_comment(*, key: str, text: str, actor: str = "owner") -> TaskEvent:
    task = task_get(key=key)
    if not text.strip():
        raise Invalid("comment: empty")
    return TaskEvent.objects.create(
        task=task, field="comment", old="", new=text[:5000], actor=actor
    )


@transaction.atomic
def task_link_message(*, key: str, message: str, actor: str = "owner") -> Task:
    task = task_get(key=key)
    _link_messages(task, [message])
    _event(task, "message", "", message, actor)
    return task


def task_find(
    *,
    project: str | None = None,
    status: str | None = None,
    assignee: int | str | None = None,
    due: str | None = None,
    q: str = "",
    today: date | None = None,
) -> QuerySet[Task]:
    """Tasks by project, status (`open` = not done or cancelled), assignee (a person id,
    or "owner"), due (`overdue`, `week`) and text in titles and descriptions (words and
    their stems, as message search reads them)."""
    qs = Task.objects.select_related("project").prefetch_related("assignees")
    if project:
        qs = qs.filter(project__key=project.strip().upper())
    if status == "open":
        qs = qs.exclude(status__in=[Status.DONE, Status.CANCELLED])
    elif status:
        qs = qs.filter(status=_choice("status", status, Status))
    if assignee == "owner":
        qs = qs.filter(owner_assigned=True)
    elif assignee not in (None, ""):
        if not str(assignee).isdigit():
            raise Invalid("assignee: a person id or owner")
        qs = qs.filter(assignees__pk=int(str(assignee)))
    day = today or timezone.localdate()
    if due == "overdue":
        qs = qs.filter(due__lt=day).exclude(status__in=[Status.DONE, Status.CANCELLED])
    elif due == "week":
        qs = qs.filter(due__gte=day, due__lte=day + timedelta(days=7))
    elif due:
        raise Invalid("due: overdue or week")
    if q.strip():
        qs = qs.filter(_text(q))
    return qs.order_by("project__key", "-number")


def _text(q: str) -> Q:
    """Every word of `q` in the title or description, in any form its stems allow."""
    from archive.search.selectors import query_words
    from archive.search.services.index import search_analyzer

    analyzer = search_analyzer()
    found = Q()
    for word in query_words(q)[:10]:
        forms = Q(title__icontains=word) | Q(description__icontains=word)
        for stem in analyzer.word_stems(word):
            if len(stem) >= 3:
                forms |= Q(title__icontains=stem) | Q(description__icontains=stem)
        found &= forms
    return found


def counts_due(*, today: date | None = None) -> tuple[int, int]:
    """(overdue, due within a week) open tasks, for the dashboard."""
    day = today or timezone.localdate()
    open_tasks = Task.objects.exclude(status__in=[Status.DONE, Status.CANCELLED])
    return (
        open_tasks.filter(due__lt=day).count(),
        open_tasks.filter(due__gte=day, due__lte=day + timedelta(days=7)).count(),
    )
