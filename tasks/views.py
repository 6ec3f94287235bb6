"""Task pages: the list with filters, the board by status, a task with its history, and
"Make a task" from a message (inline on the chat page)."""

from __future__ import annotations

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.middleware import HtmxDetails

from archive.store.models import Message, Person
from tasks.models import Priority, Project, Status
from tasks.services import task_comment, task_create, task_find, task_get, task_update
from wirecat.errors import Conflict, Invalid, NotFound, WireCatError


class HtmxRequest(HttpRequest):
    htmx: HtmxDetails


@require_GET
def task_list(request: HttpRequest) -> HttpResponse:
    filters = {
        name: request.GET.get(name) or None for name in ("project", "status", "assignee", "due")
    }
    q = request.GET.get("q", "")[:200]
    try:
        found = list(
            task_find(
                project=filters["project"],
                status=filters["status"],
                assignee=filters["assignee"],
                due=filters["due"],
                q=q,
            )[:300]
        )
        problem = ""
    except WireCatError as exc:
        found, problem = [], str(exc)
    return render(
        request,
        "tasks/list.html",
        {
            "tasks": found,
            "problem": problem,
            "filters": filters,
            "q": q,
            "projects": Project.objects.filter(archived=False),
            "statuses": Status.choices,
            "people": Person.objects.filter(tasks__isnull=False).distinct(),
        },
        status=422 if problem else 200,
    )


@require_GET
def board(request: HttpRequest) -> HttpResponse:
    project = request.GET.get("project") or None
    tasks = list(task_find(project=project)[:500])  # a WireCatError is the error page
    columns = [
        (value, label, [t for t in tasks if t.status == value]) for value, label in Status.choices
    ]
    return render(
        request,
        "tasks/board.html",
        {
            "columns": columns,
            "project": project,
            "projects": Project.objects.all(),
            "statuses": Status.choices,
        },
    )


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
        if request.htmx:  # a status changed on the board or the list: the card, redrawn
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


@require_http_methods(["GET", "POST"])
def task_new(request: HtmxRequest) -> HttpResponse:
    """The form, prefilled from a message when `message` names one (title from its text,
    a link back to it); inline on the chat page with htmx, a page of its own without."""
    source = request.GET.get("message") or request.POST.get("message") or ""
    message = (
        Message.objects.filter(public_id=source).select_related("chat").first() if source else None
    )
    if source and message is None:
        raise NotFound(f"message {source[:40]!r} does not exist")
    error = ""
    if request.method == "POST":
        try:
            task = task_create(
                project=request.POST.get("project", ""),
                title=request.POST.get("title", ""),
                description=request.POST.get("description", ""),
                priority=request.POST.get("priority", Priority.NORMAL),
                due=request.POST.get("due") or None,
                owner_assigned=True,
                messages=[message.public_id] if message else [],
            )
        except (Invalid, NotFound, Conflict) as exc:
            error = str(exc)
        else:
            if request.htmx:
                return render(request, "tasks/made.html", {"task": task})
            flash.success(request, f"Made {task.key}.")
            return redirect("tasks:task", key=task.key)
    title = ""
    if message is not None:
        title = " ".join(message.text.split())[:120] or f"Reply to {message.chat}"
    context = {
        "message": message,
        "title": request.POST.get("title", title),
        "projects": Project.objects.filter(archived=False),
        "priorities": Priority.choices,
        "error": error,
    }
    template = "tasks/new.html" + ("#form" if request.htmx else "")
    return render(request, template, context, status=422 if error else 200)


@require_POST
def project_new(request: HttpRequest) -> HttpResponse:
    from tasks.services import project_create

    try:
        project = project_create(key=request.POST.get("key", ""), name=request.POST.get("name", ""))
    except (Invalid, Conflict) as exc:
        flash.error(request, str(exc))
    else:
        flash.success(request, f"Project {project.key} made.")
    return redirect("tasks:list")
