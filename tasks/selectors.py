"""Reads for the task pages: the board's columns, one per status, with their counts."""

from __future__ import annotations

from dataclasses import dataclass

from tasks.models import Status, Task
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
