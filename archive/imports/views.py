"""The Imports pages: upload or name an export, watch its progress, cancel and resume."""

from __future__ import annotations

from pathlib import Path

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from archive.connectors.registry import formats
from archive.imports.forms import ImportForm
from archive.imports.jobs import import_run as import_run_job
from archive.imports.selectors import import_chats, import_get, import_list, import_progress
from archive.imports.services import (
    import_job_cancel,
    import_job_create,
    import_job_resume,
    import_path_allowed,
)
from archive.imports.uploads import safe_file_name, upload_store
from archive.web.pages import HtmxHttpRequest
from wirecat.errors import Conflict, NotFound, WireCatError


@require_http_methods(["GET", "POST"])
def imports(request: HtmxHttpRequest) -> HttpResponse:
    initial = {"meeting": request.GET.get("meeting", "")[:300]}
    form = ImportForm(
        request.POST or None, request.FILES or None, formats=formats(), initial=initial
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            if data["file"]:
                source = upload_store(data["file"])
                name = safe_file_name(data["file"].name or "upload")
            else:
                source = import_path_allowed(Path(data["path"].strip()))
                name = source.name
            job = import_job_create(
                source=source,
                source_name=name,
                format_name=data["format"] or None,
                account_name=data["account"] or None,
                meeting=data["meeting"].strip(),
                recording_start=data["recording_start"],
            )
        except WireCatError as exc:
            form.add_error(None, str(exc))
        else:
            import_run_job.delay_on_commit(job.pk)
            return redirect("archive:import", public_id=job.public_id)
    status = 422 if form.errors else 200
    return render(
        request, "archive/imports.html", {"form": form, "jobs": import_list()}, status=status
    )


@require_GET
@vary_on_headers("HX-Request")
def import_detail(request: HtmxHttpRequest, public_id: str) -> HttpResponse:
    job = import_get(public_id=public_id)
    context = {"p": import_progress(job), "chats": import_chats(job)}
    template = "archive/import_detail.html" + ("#progress" if request.htmx else "")
    return render(request, template, context)


@require_POST
def import_cancel(request: HttpRequest, public_id: str) -> HttpResponse:
    try:
        import_job_cancel(public_id=public_id)
    except (NotFound, Conflict) as exc:
        flash.error(request, str(exc))
    else:
        flash.info(request, "Cancelling: the import stops after its current batch.")
    return redirect("archive:import", public_id=public_id)


@require_POST
def import_resume(request: HttpRequest, public_id: str) -> HttpResponse:
    try:
        job = import_job_resume(public_id=public_id)
    except (NotFound, Conflict) as exc:
        flash.error(request, str(exc))
    else:
        import_run_job.delay_on_commit(job.pk)
        flash.info(request, f"Resuming after {job.position:,} messages.")
    return redirect("archive:import", public_id=public_id)
