"""The Tags page and the inline tag boxes on chats, people and messages; tag all results."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from archive.tags.jobs import tag_bulk_run as tag_bulk_job
from archive.tags.models import Tag, TagBulk
from archive.tags.selectors import tag_bulk_get, tag_list, tag_names, tags_of
from archive.tags.services import (
    BULK_INLINE,
    tag_add,
    tag_bulk_create,
    tag_bulk_run,
    tag_bulk_undo,
    tag_colour_set,
    tag_delete,
    tag_merge,
    tag_remove,
    tag_rename,
    tag_target,
)
from archive.web.pages import HtmxHttpRequest, _back
from wirecat.errors import Conflict, Invalid, NotFound, WireCatError


def _tags_block(
    request: HttpRequest, kind: str, key: str, error: str = "", status: int = 200
) -> HttpResponse:
    target = tag_target(kind=kind, key=key)
    context = {
        "kind": kind,
        "key": key,
        "tags": tags_of(kind, [target.pk]).get(target.pk, []),
        "next": _back(request, ""),
        "error": error,
    }
    return render(request, "archive/_tags.html", context, status=status)


@require_POST
def tag_add_view(request: HtmxHttpRequest) -> HttpResponse:
    return _tag_change(request, add=True)


@require_POST
def tag_remove_view(request: HtmxHttpRequest) -> HttpResponse:
    return _tag_change(request, add=False)


def _tag_change(request: HtmxHttpRequest, *, add: bool) -> HttpResponse:
    kind, key = request.POST.get("kind", ""), request.POST.get("key", "")
    name = request.POST.get("name", "")
    target = tag_target(kind=kind, key=key)
    problem = ""
    try:
        if add:
            tag_add(target=target, name=name)
        else:
            tag_remove(target=target, name=name)
    except Invalid as exc:
        problem = str(exc)
    if request.htmx:
        return _tags_block(request, kind, key, problem, status=422 if problem else 200)
    if problem:
        flash.error(request, problem)
    return redirect(_back(request, reverse("archive:tags")))


@require_GET
def tag_names_view(request: HttpRequest) -> HttpResponse:
    names = tag_names(prefix=request.GET.get("name", "") or request.GET.get("prefix", ""))
    return render(request, "archive/_tag_names.html", {"names": names})


@require_GET
def tags_page(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "archive/tags.html",
        {"rows": tag_list(), "bulks": TagBulk.objects.select_related("tag")[:10]},
    )


@require_POST
def tag_edit_view(request: HttpRequest, tag_id: int) -> HttpResponse:
    """Rename, recolour, merge or delete one tag (the button pressed says which)."""
    tag = Tag.objects.filter(pk=tag_id).first()
    if tag is None:
        raise NotFound(f"tag {tag_id} does not exist")
    action = request.POST.get("action", "")
    try:
        if action == "rename":
            renamed = tag_rename(name=tag.name, new_name=request.POST.get("new_name", ""))
            colour = request.POST.get("colour", "")
            if colour and colour.lower() != renamed.colour:
                tag_colour_set(name=renamed.name, colour=colour)
            flash.success(request, f"Saved “{renamed.name}”.")
        elif action == "merge":
            into = tag_merge(name=tag.name, into=request.POST.get("into", ""))
            flash.success(request, f"Merged “{tag.name}” into “{into.name}”.")
        elif action == "delete":
            removed = tag_delete(name=tag.name)
            flash.success(request, f"Deleted “{tag.name}” from {removed:,} places.")
        else:
            raise Invalid("action: rename, merge or delete")
    except (Invalid, Conflict, NotFound) as exc:
        flash.error(request, str(exc))
    return redirect("archive:tags")


@require_POST
def tag_all_view(request: HttpRequest) -> HttpResponse:
    """Tag every result of a search: now when they are few, else as a job with progress."""
    query = request.POST.get("q", "")
    try:
        bulk = tag_bulk_create(query=query, name=request.POST.get("name", ""))
    except WireCatError as exc:
        flash.error(request, str(exc))
        return redirect(f"{reverse('archive:search')}?{urlencode({'q': query})}")
    if bulk.total <= BULK_INLINE:
        tag_bulk_run(bulk_id=bulk.pk)
    else:
        tag_bulk_job.delay_on_commit(bulk.pk)
    return redirect("archive:tag_bulk", bulk_id=bulk.pk)


@require_GET
@vary_on_headers("HX-Request")
def tag_bulk_view(request: HtmxHttpRequest, bulk_id: int) -> HttpResponse:
    bulk = tag_bulk_get(bulk_id=bulk_id)
    if bulk is None:
        raise NotFound(f"tag-all run {bulk_id} does not exist")
    template = "archive/tag_bulk.html" + ("#progress" if request.htmx else "")
    return render(request, template, {"bulk": bulk})


@require_POST
def tag_bulk_undo_view(request: HttpRequest, bulk_id: int) -> HttpResponse:
    removed = tag_bulk_undo(bulk_id=bulk_id)
    flash.success(request, f"Undone: {removed:,} taggings removed.")
    return redirect("archive:tag_bulk", bulk_id=bulk_id)
