"""A finished admin for projects and tasks: changes go through the services, so every
change (bulk actions included) writes its events."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html_join
from django.utils.translation import ngettext

from tasks.models import Priority, Project, Status, Task, TaskEvent
from tasks.services import task_create, task_update


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin[Project]):
    list_display = ("key", "name", "archived", "next_number")
    list_filter = ("archived",)
    search_fields = ("key", "name")


class TaskEventInline(admin.TabularInline[TaskEvent, Task]):
    model = TaskEvent
    extra = 0
    can_delete = False
    fields = ("at", "actor", "field", "old", "new")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin[Task]):
    list_display = ("task_key", "title", "status", "priority", "due", "assignee_list")
    list_filter = ("project", "status", "priority", "owner_assigned")
    search_fields = ("title", "description")
    autocomplete_fields = ("assignees", "parent")
    readonly_fields = ("task_key", "messages_from")
    fields = (
        "task_key",
        "project",
        "title",
        "description",
        "status",
        "priority",
        "due",
        "assignees",
        "owner_assigned",
        "parent",
        "messages_from",
    )
    inlines = (TaskEventInline,)
    actions = ("mark_done", "mark_in_progress", "mark_todo", "priority_high", "priority_normal")

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).select_related("project").prefetch_related("assignees")

    @admin.display(description="key", ordering="number")
    def task_key(self, obj: Task) -> str:
        return obj.key if obj.pk else "(new)"

    @admin.display(description="assignees")
    def assignee_list(self, obj: Task) -> str:
        names = [p.name for p in obj.assignees.all()]
        return ", ".join((["owner"] if obj.owner_assigned else []) + names)

    @admin.display(description="from messages")
    def messages_from(self, obj: Task) -> str:
        links = list(obj.message_links.all()) if obj.pk else []
        if not links:
            return "—"
        return format_html_join(
            ", ",
            '<a href="{}">{}</a>',
            (
                (reverse("archive:message", args=[link.message_public_id]), link.message_public_id)
                for link in links
            ),
        )

    def save_model(self, request: HttpRequest, obj: Task, form: Any, change: bool) -> None:
        data = form.cleaned_data
        if not change:
            made = task_create(
                project=data["project"].key,
                title=data["title"],
                description=data.get("description", ""),
                status=data["status"],
                priority=data["priority"],
                due=data.get("due"),
                owner_assigned=data.get("owner_assigned", False),
                parent=data["parent"].key if data.get("parent") else None,
                actor="owner",
            )
            obj.pk, obj.number, obj.project = made.pk, made.number, made.project
            return
        task_update(
            key=Task.objects.select_related("project").get(pk=obj.pk).key,
            title=data["title"],
            description=data.get("description", ""),
            status=data["status"],
            priority=data["priority"],
            due=data.get("due"),
            owner_assigned=data.get("owner_assigned", False),
            parent=data["parent"].key if data.get("parent") else None,
        )

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        # Assignees through the service too, so their change is an event (not
        # form.save_m2m, which would set them silently).
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)
        task = Task.objects.select_related("project").get(pk=form.instance.pk)
        task_update(key=task.key, assignees=[p.pk for p in form.cleaned_data["assignees"]])

    def _bulk(self, request: HttpRequest, queryset: Any, **change: str) -> None:
        count = 0
        for task in queryset.select_related("project"):
            task_update(key=task.key, **change)
            count += 1
        changed = ngettext("%(count)d task changed.", "%(count)d tasks changed.", count)
        self.message_user(request, changed % {"count": count}, messages.SUCCESS)

    @admin.action(description="Set status: done")
    def mark_done(self, request: HttpRequest, queryset: Any) -> None:
        self._bulk(request, queryset, status=Status.DONE)

    @admin.action(description="Set status: in progress")
    def mark_in_progress(self, request: HttpRequest, queryset: Any) -> None:
        self._bulk(request, queryset, status=Status.IN_PROGRESS)

    @admin.action(description="Set status: to do")
    def mark_todo(self, request: HttpRequest, queryset: Any) -> None:
        self._bulk(request, queryset, status=Status.TODO)

    @admin.action(description="Set priority: high")
    def priority_high(self, request: HttpRequest, queryset: Any) -> None:
        self._bulk(request, queryset, priority=Priority.HIGH)

    @admin.action(description="Set priority: normal")
    def priority_normal(self, request: HttpRequest, queryset: Any) -> None:
        self._bulk(request, queryset, priority=Priority.NORMAL)
