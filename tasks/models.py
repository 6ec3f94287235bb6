"""The owner's tasks: projects with keys (HOME), tasks numbered per project (HOME-12, never
reused), and every change as an event written by the services in the same transaction."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models

from archive.store.models import Message, Person


class Project(models.Model):
    key = models.CharField(
        max_length=10,
        unique=True,
        validators=[RegexValidator(r"^[A-Z][A-Z0-9]{1,9}$", "2 to 10 capitals and digits")],
    )
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    archived = models.BooleanField(default=False)
    # The number the next task gets; only ever grows, so numbers are never reused.
    next_number = models.PositiveIntegerField(default=1, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("key",)

    def __str__(self) -> str:
        return f"{self.key} · {self.name}"


class Status(models.TextChoices):
    TODO = "todo", "To do"
    IN_PROGRESS = "in_progress", "In progress"
    WAITING = "waiting", "Waiting"
    DONE = "done", "Done"
    CANCELLED = "cancelled", "Cancelled"


class Priority(models.TextChoices):
    LOW = "low", "Low"
    NORMAL = "normal", "Normal"
    HIGH = "high", "High"
    URGENT = "urgent", "Urgent"


class Task(models.Model):
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="tasks")
    number = models.PositiveIntegerField(editable=False)
    title = models.CharField(max_length=300)
    description = models.TextField(blank=True)  # markdown, rendered safely
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.TODO)
    priority = models.CharField(max_length=8, choices=Priority.choices, default=Priority.NORMAL)
    due = models.DateField(null=True, blank=True)
    assignees = models.ManyToManyField(Person, blank=True, related_name="tasks")
    owner_assigned = models.BooleanField(default=False)  # the owner is an assignee
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="subtasks"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("project__key", "number")
        constraints = [
            models.UniqueConstraint(fields=["project", "number"], name="task_project_number_uniq")
        ]
        indexes = [models.Index(fields=["status", "due"], name="task_status_due_idx")]

    def __str__(self) -> str:
        return f"{self.key} {self.title}"

    @property
    def key(self) -> str:
        return f"{self.project.key}-{self.number}"

    @property
    def status_choices(self) -> list[tuple[str, str]]:
        return list(Status.choices)

    @property
    def overdue(self) -> bool:
        from django.utils import timezone

        open_ = self.status not in (Status.DONE, Status.CANCELLED)
        return bool(self.due and open_ and self.due < timezone.localdate())


class TaskMessage(models.Model):
    """A message a task came from: a reference (never a copy of its text). The public id
    stays when the message is purged, so the task can say what is gone."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="message_links")
    message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="task_links"
    )
    message_public_id = models.CharField(max_length=32)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "message_public_id"], name="task_message_uniq")
        ]

    def __str__(self) -> str:
        return f"{self.task_id} ← {self.message_public_id}"


class TaskEvent(models.Model):
    """One change: a field's old and new value (as text), or a comment, by whom, when."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="events")
    field = models.CharField(max_length=20)  # created, status, due, priority, assignees, …
    old = models.TextField(blank=True)
    new = models.TextField(blank=True)
    actor = models.CharField(max_length=120)  # "owner" or "agent:<name>"
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("at", "id")

    def __str__(self) -> str:
        return f"{self.task_id} {self.field}"
