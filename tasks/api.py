"""Projects and tasks for agents: CRUD, history, find; scopes tasks.read and tasks.write.
An agent's changes are events with the agent as actor."""

from __future__ import annotations

from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Path, Router

from archive.web.api import (
    answers,
    caller_actor,
    limit_query,
    links,
    offset_query,
    requires,
    scope,
    window,
)
from archive.web.schemas import Choice, Matching
from tasks.models import Project, Status, Task
from tasks.schemas import (
    PROJECT_KEY,
    TASK_KEY,
    CommentIn,
    DeletedOut,
    EventOut,
    ProjectIn,
    ProjectOut,
    ProjectPatch,
    TaskIn,
    TaskOut,
    TaskPatch,
)
from tasks.services import (
    project_create,
    project_delete,
    project_update,
    task_comment,
    task_create,
    task_delete,
    task_find,
    task_get,
    task_update,
)
from wirecat.errors import Conflict, Invalid

router = Router(tags=["tasks"])

PROJECT = {"key": "$response.body#/key"}
TASK = {"key": "$response.body#/key"}
DELETED = {"key": "$response.body#/deleted"}
THE_TASK = links(
    __name__,
    GetTask=("tasks_show", TASK),
    ChangeTask=("tasks_update", TASK),
    DeleteTask=("tasks_delete", TASK),
    TaskEvents=("tasks_events", TASK),
    CommentOnTask=("tasks_comment", TASK),
)

# Keys in paths (in any case), and the filters of `GET /tasks`; "" filters nothing.


def project_key() -> Any:
    return Path(..., pattern=f"^{PROJECT_KEY}$", description="a project's key: HOME")


def task_key() -> Any:
    return Path(..., pattern=f"^{TASK_KEY}$", description="a task's key: HOME-12")


StatusFilter = Annotated[str, Choice("status", ("", "open", *Status.values))]
AssigneeFilter = Annotated[
    str, Matching("assignee", "(?:owner|[0-9]{1,18})?", "a person id or owner")
]
DueFilter = Annotated[str, Choice("due", ("", "overdue", "week"))]


def task_out(task: Task) -> TaskOut:
    return TaskOut(
        key=task.key,
        project=task.project.key,
        title=task.title,
        description=task.description,
        status=task.status,
        priority=task.priority,
        due=task.due,
        assignees=sorted(p.pk for p in task.assignees.all()),
        owner_assigned=task.owner_assigned,
        parent=task.parent.key if task.parent else None,
        messages=[link.message_public_id for link in task.message_links.all()],
        created_at=task.created_at,
        updated_at=task.updated_at,
    )


def _project_out(project: Project) -> ProjectOut:
    return ProjectOut(
        key=project.key,
        name=project.name,
        description=project.description,
        archived=project.archived,
    )


@router.get(
    "/projects", response=answers(list[ProjectOut]), summary="Projects", **scope("tasks.read")
)
@requires("tasks.read")
def projects(request: HttpRequest) -> list[ProjectOut]:
    return [_project_out(p) for p in Project.objects.all()]


@router.post(
    "/projects",
    response=answers(ProjectOut),
    summary="Make a project",
    **scope(
        "tasks.write",
        responses={
            200: links(
                __name__,
                ChangeProject=("projects_update", PROJECT),
                DeleteProject=("projects_delete", PROJECT),
            )
        },
    ),
)
@requires("tasks.write")
def projects_create(request: HttpRequest, body: ProjectIn) -> ProjectOut:
    return _project_out(project_create(key=body.key, name=body.name, description=body.description))


@router.post(
    "/projects/{key}",
    response=answers(ProjectOut),
    summary="Change a project",
    **scope("tasks.write"),
)
@requires("tasks.write")
def projects_update(
    request: HttpRequest, body: ProjectPatch, key: str = project_key()
) -> ProjectOut:
    return _project_out(
        project_update(
            key=key, name=body.name, description=body.description, archived=body.archived
        )
    )


@router.delete(
    "/projects/{key}",
    response=answers(DeletedOut),
    summary="Delete an empty project",
    **scope(
        "tasks.write",
        responses={200: links(__name__, ChangeDeletedProject=("projects_update", DELETED))},
    ),
)
@requires("tasks.write")
def projects_delete(request: HttpRequest, key: str = project_key()) -> DeletedOut:
    project_delete(key=key)
    return DeletedOut(deleted=key.upper())


@router.get("/tasks", response=answers(list[TaskOut]), summary="Find tasks", **scope("tasks.read"))
@requires("tasks.read")
def tasks_find(
    request: HttpRequest,
    project: str | None = None,
    status: StatusFilter | None = None,
    assignee: AssigneeFilter | None = None,
    due: DueFilter | None = None,
    q: str = "",
    limit: int = limit_query(100, 500),
    offset: int = offset_query(),
) -> list[TaskOut]:
    """`status` a status or `open`; `assignee` a person id or `owner`; `due` `overdue` or
    `week`; `q` words in titles and descriptions (their other forms too)."""
    page = window(limit, offset, 500)
    found = task_find(project=project, status=status, assignee=assignee, due=due, q=q[:200])
    rows = found.select_related("parent__project").prefetch_related("message_links")
    return [task_out(t) for t in rows[page]]


@router.post(
    "/tasks",
    response=answers(TaskOut),
    summary="Make a task",
    **scope("tasks.write", responses={200: THE_TASK}),
)
@requires("tasks.write")
def tasks_create(request: HttpRequest, body: TaskIn) -> TaskOut:
    task = task_create(
        project=body.project,
        title=body.title,
        description=body.description,
        status=body.status,
        priority=body.priority,
        due=body.due,
        assignees=body.assignees,
        owner_assigned=body.owner_assigned,
        parent=body.parent,
        messages=body.messages,
        actor=caller_actor(request),
    )
    return task_out(task)


@router.get("/tasks/{key}", response=answers(TaskOut), summary="One task", **scope("tasks.read"))
@requires("tasks.read")
def tasks_show(request: HttpRequest, key: str = task_key()) -> TaskOut:
    return task_out(task_get(key=key))


@router.post(
    "/tasks/{key}", response=answers(TaskOut), summary="Change a task", **scope("tasks.write")
)
@requires("tasks.write")
def tasks_update(request: HttpRequest, body: TaskPatch, key: str = task_key()) -> TaskOut:
    changes: dict[str, Any] = {
        name: value
        for name, value in body.model_dump(exclude={"clear_due", "clear_parent"}).items()
        if value is not None
    }
    if body.clear_due:
        changes["due"] = None
    if body.clear_parent:
        changes["parent"] = None
    try:
        return task_out(task_update(key=key, actor=caller_actor(request), **changes))
    except Invalid as exc:  # "a task cannot be its own ancestor": the tasks' state refuses it
        raise Conflict(str(exc)) from exc


@router.delete(
    "/tasks/{key}",
    response=answers(DeletedOut),
    summary="Delete a task",
    **scope(
        "tasks.write", responses={200: links(__name__, GetDeletedTask=("tasks_show", DELETED))}
    ),
)
@requires("tasks.write")
def tasks_delete(request: HttpRequest, key: str = task_key()) -> DeletedOut:
    task_delete(key=key)
    return DeletedOut(deleted=key.upper())


@router.get(
    "/tasks/{key}/events",
    response=answers(list[EventOut]),
    summary="A task's history",
    **scope("tasks.read"),
)
@requires("tasks.read")
def tasks_events(request: HttpRequest, key: str = task_key()) -> list[EventOut]:
    task = task_get(key=key)
    return [
        EventOut(field=e.field, old=e.old, new=e.new, actor=e.actor, at=e.at)
        for e in task.events.all()
    ]


@router.post(
    "/tasks/{key}/comments",
    response=answers(EventOut),
    summary="Comment on a task",
    **scope("tasks.write"),
)
@requires("tasks.write")
def tasks_comment(request: HttpRequest, body: CommentIn, key: str = task_key()) -> EventOut:
    event = task_comment(key=key, text=body.text, actor=caller_actor(request))
    return EventOut(field=event.field, old=event.old, new=event.new, actor=event.actor, at=event.at)
