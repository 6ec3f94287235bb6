from __future__ import annotations

from datetime import date, datetime

from ninja import Schema


class ProjectOut(Schema):
    key: str
    name: str
    description: str
    archived: bool


class ProjectIn(Schema):
    key: str
    name: str
    description: str = ""


class ProjectPatch(Schema):
    name: str | None = None
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
    created_at: datetime
    updated_at: datetime


class TaskIn(Schema):
    project: str
    title: str
    description: str = ""
    status: str = "todo"
    priority: str = "normal"
    due: date | None = None
    assignees: list[int] = []
    owner_assigned: bool = False
    parent: str | None = None
    messages: list[str] = []

    model_config = {
        "json_schema_extra": {
            "examples": [{"project": "HOME", "title": "Call the plumber", "due": "2026-12-24"}]
        }
    }


class TaskPatch(Schema):
    """Only the fields given change; each change is an event."""

    title: str | None = None
    description: str | None = None
    status: str | None = None
    priority: str | None = None
    due: date | None = None
    clear_due: bool = False
    assignees: list[int] | None = None
    owner_assigned: bool | None = None
    parent: str | None = None
    clear_parent: bool = False


class EventOut(Schema):
    field: str
    old: str
    new: str
    actor: str
    at: datetime


class CommentIn(Schema):
    text: str
