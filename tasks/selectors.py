"""Reads for the task pages (the board's columns, one per status, with their counts) and
for the pages that mark messages with the tasks made from them."""

from __future__ import annotations

from dataclasses import dataclass

from tasks.models import Status, Task, TaskMessage
from tasks.services import task_find

BOARD_LIMIT = 500


@dataclass(frozen=True)
class BoardColumn:
    """One status on the board: its value (`todo`), its label (`To do`) and its tasks."""

    status: str
    label: str
    tasks: list[Task]

    @property
    def count(self) -> int:
        return len(self.tasks)


def board_columns(*, project: str | None = None) -> list[BoardColumn]:
    """The board: every status in workflow order, each with its tasks (newest first) of
    `project`, or of every project. Raises what `task_find` raises for a bad filter."""
    tasks = list(task_find(project=project)[:BOARD_LIMIT])
    return [
        BoardColumn(status=value, label=str(label), tasks=[t for t in tasks if t.status == value])
        for value, label in Status.choices
    ]


def tasks_of_messages(message_ids: list[int]) -> dict[int, list[Task]]:
    """The tasks made from each of these messages, in one query (the chat and conversation
    pages mark them on each message)."""
    found: dict[int, list[Task]] = {}
    if not message_ids:
        return found
    links = TaskMessage.objects.filter(message_id__in=message_ids).select_related("task__project")
    for link in links.order_by("task__project__key", "task__number"):
        if link.message_id is not None:
            found.setdefault(link.message_id, []).append(link.task)
    return found
