"""The API shapes of projects, tasks and their events."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from ninja import Schema
from pydantic import Field

from archive.web.schemas import At, BodyIn, Choice, Day, Id, Matching, Text
from tasks.models import Priority, Status
from tasks.services import TITLE_MAX

LIST_MAX = 1_000  # assignees or messages in one request

# A project's key (HOME) and a task's (HOME-12), in any case: the services upper-case them.
PROJECT_KEY = "[A-Za-z][A-Za-z0-9]{1,9}"
TASK_KEY = f"{PROJECT_KEY}-[0-9]{{1,9}}"
ProjectKey = Annotated[
    str,
    Matching("key", PROJECT_KEY, "2 to 10 capitals and digits, starting with a letter (e.g. HOME)"),
]
TaskKey = Annotated[str, Matching("task", TASK_KEY, "a key like HOME-12")]
# A parent task, or "" for none.
ParentKey = Annotated[str, Matching("parent", f"(?:{TASK_KEY})?", "a key like HOME-12, or empty")]
TaskStatus = Annotated[str, Choice("status", Status.values)]
TaskPriority = Annotated[str, Choice("priority", Priority.values)]
Title = Annotated[str, Text("title", most=TITLE_MAX)]


class ProjectOut(Schema):
    key: str
    name: str
    description: str
    archived: bool


class ProjectIn(BodyIn):
    key: ProjectKey
    name: Annotated[str, Text("name")]  # longer names are cut to 200 characters
    description: str = ""


class ProjectPatch(BodyIn):
    name: Annotated[str, Text("name")] | None = None
    description: str | None = None
    archived: bool | None = None


class DeletedOut(Schema):
    deleted: str


class TaskOut(Schema):
    key: str  # HOME-12
    project: str
    title: str
    description: str
    status: str
    priority: str
    due: date | None
    assignees: list[int]  # person ids
    owner_assigned: bool
    parent: str | None
    messages: list[str]  # msg_… it came from
    created_at: At
    updated_at: At


class TaskIn(BodyIn):
    project: ProjectKey
    title: Title
    description: str = ""
    status: TaskStatus = "todo"
    priority: TaskPriority = "normal"
    due: Day | None = None
    assignees: Annotated[list[Id], Field(max_length=LIST_MAX)] = []  # person ids
    owner_assigned: bool = False
    parent: ParentKey | None = None
    messages: Annotated[list[str], Field(max_length=LIST_MAX)] = []  # msg_… ids

    model_config = {
        "json_schema_extra": {
            "examples": [{"project": "HOME", "title": "Call the plumber", "due": "2026-12-24"}]
        }
    }


class TaskPatch(BodyIn):
    """Only the fields given change; each change is an event."""

    title: Title | None = None
    description: str | None = None
    status: TaskStatus | None = None
    priority: TaskPriority | None = None
    due: Day | None = None
    clear_due: bool = False
    assignees: Annotated[list[Id], Field(max_length=LIST_MAX)] | None = None
    owner_assigned: bool | None = None
    parent: ParentKey | None = None  # "" also clears it
    clear_parent: bool = False


class EventOut(Schema):
    field: str
    old: str
    new: str
    actor: str
    at: At


class CommentIn(BodyIn):
    text: Annotated[str, Text("comment")]  # longer comments are cut to 5,000 characters
