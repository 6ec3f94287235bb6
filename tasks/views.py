"""Task pages: the list with filters, the board by status, a task with its history, and
"Make a task" from a message (inline on the chat page)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.middleware import HtmxDetails

from archive.store.models import Message, Person
from meetings.selectors import segment_line, segment_reference
from tasks.forms import ProjectForm, TaskNewForm
from tasks.models import Priority, Project, Status
from tasks.selectors import board_columns
from tasks.services import (
    project_create,
    task_comment,
    task_create,
    task_create_with_project,
    task_find,
    task_get,
    task_update,
)
from wirecat.errors import Conflict, Invalid, NotFound, WireCatError

LIST_LIMIT = 300


class HtmxRequest(HttpRequest):
    htmx: HtmxDetails


@require_GET
def task_list(request: HttpRequest) -> HttpResponse:
    filters = {
        name: request.GET.get(name) or None for name in ("project", "status", "assignee", "due")
    }
    q = request.GET.get("q", "")[:200]
    try:
        matching = task_find(
            project=filters["project"],
            status=filters["status"],
            assignee=filters["assignee"],
            due=filters["due"],
            q=q,
        )
        found = list(matching[:LIST_LIMIT])
        total = len(found) if len(found) < LIST_LIMIT else matching.count()
        problem = ""
    except WireCatError as exc:
        found, total, problem = [], 0, str(exc)
    return render(
        request,
        "tasks/list.html",
        {
            "tasks": found,
            "total": total,
            "limit": LIST_LIMIT,
            "problem": problem,
            "filters": filters,
            "q": q,
            "projects": Project.objects.filter(archived=False),
            "statuses": Status.choices,
            "people": Person.objects.filter(tasks__isnull=False).distinct(),
        },
        status=422 if problem else 200,
    )


@vary_on_headers("HX-Request")
@require_http_methods(["GET", "POST"])
def board(request: HtmxRequest) -> HttpResponse:
    """The board, a column per status. A POST moves one card (`key`, `status`): htmx gets
    the board again (the card in its new column, every count right), a plain form is sent
    back to the board."""
    project = (request.GET.get("project") or "").strip().upper()[:10] or None
    note, failed = "", False
    if request.method == "POST":
        key = request.POST.get("key", "")
        try:
            task = task_update(key=key, status=request.POST.get("status", ""))
        except NotFound:
            note, failed = f"{key[:30]} was not moved: it is not there any more.", True
        except (Invalid, Conflict) as exc:
            note, failed = f"{key[:30] or 'The task'} was not moved: {exc}.", True
        else:
            note = f"{task.key} moved to {task.get_status_display()}."
        if not request.htmx:
            (flash.error if failed else flash.success)(request, note)
            return redirect(_board_url(project))
    columns = board_columns(project=project)  # a WireCatError is the error page
    context = {
        "columns": columns,
        "total": sum(column.count for column in columns),
        "project": project,
        "projects": Project.objects.all(),
        "board_url": _board_url(project),
        "note": note,
        "failed": failed,
    }
    if request.htmx and request.method == "POST":
        return render(request, "tasks/board.html#moved", context, status=422 if failed else 200)
    template = "tasks/board.html" + ("#board" if request.htmx else "")
    return render(request, template, context)


def _board_url(project: str | None) -> str:
    url = reverse("tasks:board")
    return f"{url}?{urlencode({'project': project})}" if project else url


@require_http_methods(["GET", "POST"])
def task_detail(request: HtmxRequest, key: str) -> HttpResponse:
    task = task_get(key=key)  # a WireCatError is the error page (archive/web/middleware.py)
    if request.method == "POST":
        try:
            if "comment" in request.POST:
                task_comment(key=task.key, text=request.POST["comment"])
            else:
                changes = {
                    name: request.POST[name]
                    for name in ("status", "priority", "due", "title", "description")
                    if name in request.POST
                }
                task = task_update(key=task.key, **changes)
        except (Invalid, NotFound, Conflict) as exc:
            if request.htmx:
                return render(
                    request, "tasks/card.html", {"task": task, "error": str(exc)}, status=422
                )
            flash.error(request, str(exc))
        if request.htmx:  # an htmx change here (the board posts to the board): the card
            return render(request, "tasks/card.html", {"task": task_get(key=task.key)})
        return redirect("tasks:task", key=task.key)
    return render(
        request,
        "tasks/detail.html",
        {
            "task": task,
            "events": task.events.all(),
            "links": task.message_links.select_related("message", "message__chat"),
            "statuses": Status.choices,
            "priorities": Priority.choices,
        },
    )


@vary_on_headers("HX-Request")
@require_http_methods(["GET", "POST"])
def task_new(request: HtmxRequest) -> HttpResponse:
    """The form, prefilled from a message when `message` names one (title from its text,
    a link back to it); inline on the chat page with htmx, a page of its own without. With
    no project yet, the form asks for one (key and name) and makes both in one submit."""
    source = request.GET.get("message") or request.POST.get("message") or ""
    message = (
        Message.objects.filter(public_id=source).select_related("chat").first() if source else None
    )
    if source and message is None:
        raise NotFound(f"message {source[:40]!r} does not exist")
    # Or from a line of a meeting's transcript (`meeting` and `at`, its start in ms).
    params = request.POST if request.method == "POST" else request.GET
    said_in, said_at = params.get("meeting", ""), params.get("at", "")
    line = segment_line(public_id=said_in, at_ms=int(said_at[:15])) if said_at.isdigit() else None
    if said_in and line is None:
        raise NotFound("That line of the meeting's transcript does not exist")
    projects = list(Project.objects.filter(archived=False))
    if request.method == "POST":
        form = TaskNewForm(request.POST, projects=projects)
        if form.is_valid():
            data = form.cleaned_data
            fields: dict[str, Any] = {
                "title": data["title"],
                "description": data["description"] or (segment_reference(*line) if line else ""),
                "priority": data["priority"],
                "due": data["due"],
                "owner_assigned": True,
                "messages": [message.public_id] if message else [],
            }
            try:
                if form.makes_project:
                    project, task = task_create_with_project(
                        project_key=data["project_key"],
                        project_name=data["project_name"],
                        **fields,
                    )
                else:
                    project, task = None, task_create(project=data["project"], **fields)
            except (Invalid, NotFound, Conflict) as exc:
                form.add_error(None, f"The task was not made: {exc}.")
            else:
                if request.htmx:
                    return render(
                        request, "tasks/made.html", {"task": task, "new_project": project}
                    )
                where = f" in the new project {project.name}" if project else ""
                flash.success(request, f"Task {task.key} made{where}.")
                return redirect("tasks:task", key=task.key)
    else:
        title = ""
        if message is not None:
            title = " ".join(message.text.split())[:120] or f"Reply to {message.chat}"
        elif line is not None:
            title = " ".join(line[1].text.split())[:120]
        form = TaskNewForm(initial={"title": title}, projects=projects)
    context = {
        "message": message,
        "line": line,
        "form": form,
        "slot": message.public_id if message else "page",
    }
    template = "tasks/new.html" + ("#form" if request.htmx else "")
    return render(request, template, context, status=422 if form.errors else 200)


@require_POST
def project_new(request: HttpRequest) -> HttpResponse:
    form = ProjectForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                flash.error(request, f"The project was not made: {error}")
        return redirect("tasks:list")
    try:
        project = project_create(key=form.cleaned_data["key"], name=form.cleaned_data["name"])
    except (Invalid, Conflict) as exc:
        flash.error(request, f"The project was not made: {exc}.")
    else:
        flash.success(request, f"Project {project.key} made.")
    return redirect("tasks:list")
