"""The dashboard, and the one-time login link that lets the owner set a password."""

from __future__ import annotations

from django.contrib import messages as flash
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from archive.backups.selectors import backup_status
from archive.conversations.selectors import readiness as conversations_readiness
from archive.files.selectors import file_text_counts
from archive.imports.selectors import import_list
from archive.meaning.selectors import Readiness
from archive.meaning.selectors import readiness as meaning_readiness
from archive.owner.forms import SetPasswordForm
from archive.owner.selectors import store_counts, worker_status
from archive.owner.services import login_code_check, owner_set_password
from archive.store.selectors import (
    recent_messages,
)
from tasks.services import counts_due
from wirecat.errors import Invalid, NotFound


def _meaning() -> dict[str, Readiness | str | None]:
    """The meaning index's readiness, or why it cannot be read (a model setting WireCat
    does not know): the dashboard says so rather than failing."""
    try:
        return {"meaning": meaning_readiness(), "meaning_fault": None}
    except Invalid as exc:
        return {"meaning": None, "meaning_fault": str(exc)}


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "archive/dashboard.html",
        {
            "counts": store_counts(),
            "worker": worker_status(),
            "recent": recent_messages(),
            "imports": import_list(limit=5),
            "tasks_due": counts_due(),
            "files": file_text_counts(),
            "conversations": conversations_readiness(),
            "backups": backup_status(),
            **_meaning(),
        },
    )


@login_not_required
@never_cache
@require_http_methods(["GET", "POST"])
def login_with_code(request: HttpRequest) -> HttpResponse:
    """The one-time link, `/login/code/#<code>`: its page posts the code (never in a URL,
    so never in a log), then the owner sets a password and is signed in."""
    code = request.POST.get("code", "").strip()
    if not code:
        return render(request, "registration/login_code.html", {})
    try:
        login_code_check(code=code)
    except NotFound as exc:
        return render(request, "registration/login_code.html", {"invalid": str(exc)}, status=404)
    form = SetPasswordForm(request.POST if "password1" in request.POST else None)
    if form.is_bound and form.is_valid():
        try:
            owner = owner_set_password(code=code, password=form.cleaned_data["password1"])
        except Invalid as exc:
            form.add_error("password1", str(exc))
        except NotFound as exc:
            return render(
                request, "registration/login_code.html", {"invalid": str(exc)}, status=404
            )
        else:
            login(request, owner, backend="django.contrib.auth.backends.ModelBackend")
            flash.success(request, "Your password is set. Welcome to WireCat.")
            return redirect("archive:dashboard")
    return render(request, "registration/login_code.html", {"form": form, "code": code})
