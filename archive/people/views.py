"""The People pages: the list, a person with their identities and activity, suggestions."""

from __future__ import annotations

from django.contrib import messages as flash
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from archive.people.selectors import (
    PEOPLE_SORTS,
    identity_find,
    people_list,
    person_page,
    suggestions,
    unlinked_identities,
)
from archive.people.services import (
    identity_link,
    identity_unlink,
    person_create,
    person_rename,
    suggestion_accept,
)
from archive.store.models import Identity
from archive.tags.selectors import tag_names
from wirecat.errors import Invalid, NotFound

# --- people -------------------------------------------------------------------------------


@require_GET
def people(request: HttpRequest) -> HttpResponse:
    q = request.GET.get("q", "")[:200]
    sort = request.GET.get("sort", "recent")
    if sort not in PEOPLE_SORTS:
        sort = "recent"
    page = Paginator(people_list(q=q, sort=sort), 50).get_page(request.GET.get("page"))
    loose = Paginator(unlinked_identities(q=q), 25).get_page(request.GET.get("ipage"))
    return render(
        request,
        "archive/people.html",
        {
            "page": page,
            "loose": loose,
            "q": q,
            "sort": sort,
            "sorts": PEOPLE_SORTS,
            "suggestion_count": len(suggestions(limit=100)),
        },
    )


@require_GET
def person_detail(request: HttpRequest, person_id: int) -> HttpResponse:
    detail = person_page(person_id=person_id)
    find = request.GET.get("find", "")[:200]
    return render(
        request,
        "archive/person.html",
        {
            "p": detail,
            "tag_choices": tag_names(limit=200),
            "find": find,
            "found": identity_find(q=find, exclude_person=person_id),
        },
    )


@require_POST
def person_create_view(request: HttpRequest) -> HttpResponse:
    """A new person from one identity (its name by default)."""
    raw = request.POST.get("identity", "")
    try:
        if not raw.isdigit():
            raise Invalid("identity: not an id")
        identity = Identity.objects.filter(pk=int(raw)).first()
        if identity is None:
            raise NotFound(f"identity {raw} does not exist")
        name = request.POST.get("name") or str(identity)
        person = person_create(name=name, identity_ids=[identity.pk])
    except (Invalid, NotFound) as exc:
        flash.error(request, str(exc))
        return redirect("archive:people")
    flash.success(request, f"Made “{person.name}”.")
    return redirect("archive:person", person_id=person.pk)


@require_POST
def person_edit_view(request: HttpRequest, person_id: int) -> HttpResponse:
    """Rename, link an identity (by its id or from the search), or unlink one."""
    action = request.POST.get("action", "")
    try:
        if action == "rename":
            person_rename(person_id=person_id, name=request.POST.get("name", ""))
            flash.success(request, "Renamed.")
        elif action in ("link", "unlink"):
            raw = request.POST.get("identity", "")
            if not raw.isdigit():
                raise Invalid("identity: not an id")
            if action == "link":
                identity = identity_link(identity_id=int(raw), person_id=person_id)
                flash.success(request, f"Linked {identity} ({identity.provider}).")
            else:
                identity = identity_unlink(identity_id=int(raw), person_id=person_id)
                flash.success(request, f"Unlinked {identity} ({identity.provider}).")
        else:
            raise Invalid("action: rename, link or unlink")
    except Invalid as exc:  # said on the person's page; NotFound is the error page
        flash.error(request, str(exc))
    return redirect("archive:person", person_id=person_id)


@require_http_methods(["GET", "POST"])
def people_suggestions(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        ids = [int(raw) for raw in request.POST.getlist("identity") if raw.isdigit()]
        try:
            person = suggestion_accept(identity_ids=ids)
        except Invalid as exc:
            flash.error(request, str(exc))
        else:
            flash.success(request, f"Linked {len(ids)} identities to “{person.name}”.")
        return redirect("archive:people_suggestions")
    return render(request, "archive/people_suggestions.html", {"found": suggestions()})
