"""The People pages: the list with the identities no person holds yet (one at a time or many
at once), a person with their identities and activity, suggestions."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages as flash
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from archive.people.selectors import (
    PEOPLE_SORTS,
    identity_entries,
    identity_find,
    owner_person,
    people_choices,
    people_list,
    people_rows,
    person_page,
    suggestion_entries,
    suggestions,
    unlinked_identities,
)
from archive.people.services import (
    BULK_MAX,
    identities_gather,
    identity_link,
    identity_unlink,
    people_from_identities,
    person_create,
    person_from_identity,
    person_rename,
    suggestion_accept,
    suggestions_accept,
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
            "people": people_rows(list(page.object_list)),
            "loose": loose,
            "entries": identity_entries(list(loose.object_list)),
            "owner": owner_person(),
            "choices": people_choices(),
            "q": q,
            "sort": sort,
            "sorts": PEOPLE_SORTS,
            "bulk_max": BULK_MAX,
            "suggestion_count": len(suggestions(limit=100)),
        },
    )


def _ids(values: list[str]) -> list[int]:
    return [int(raw) for raw in values if raw.isdigit() and len(raw) < 19]


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


@require_POST
def people_bulk_view(request: HttpRequest) -> HttpResponse:
    """Many identities at once: the ticked ones (or every one no person holds that matches
    the list's filter) each made a person, or all linked to one person (an existing one, or
    a new one by that name). A row's own button (`one`) makes just its identity a person."""
    q = request.POST.get("q", "")[:200]
    query = urlencode({"q": q, "ipage": request.POST.get("ipage", "")})
    one = request.POST.get("one", "")
    if one.isdigit() and len(one) < 19:
        person = person_from_identity(identity_id=int(one))
        flash.success(request, f"Made “{person.name}”.")
        return redirect("archive:person", person_id=person.pk)
    if request.POST.get("all_matching") == "1":
        ids = list(unlinked_identities(q=q).values_list("pk", flat=True)[:BULK_MAX])
    else:
        ids = _ids(request.POST.getlist("identity"))
    action = request.POST.get("action", "")
    try:
        if action == "each":
            made = people_from_identities(identity_ids=ids)
            flash.success(request, f"Made {_count(len(made), 'person', 'people')}.")
        elif action == "link":
            target, count = identities_gather(
                identity_ids=ids, person=request.POST.get("person", "")
            )
            linked = _count(count, "identity", "identities")
            flash.success(request, f"Linked {linked} to “{target.name}”.")
            return redirect("archive:person", person_id=target.pk)
        else:
            raise Invalid("Choose what to do with the ticked identities.")
    except Invalid as exc:
        flash.error(request, str(exc))
    return redirect(reverse("archive:people") + "?" + query)


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
            "found": identity_entries(identity_find(q=find, exclude_person=person_id)),
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
    """Suggestions to accept one at a time (a suggestion's own button, or a form holding
    one suggestion's identities) or the ticked ones at once."""
    if request.method == "POST":
        try:
            one = request.POST.get("one", "")
            if request.POST.get("action") == "ticked" and not one:
                groups = [_ids(raw.split(",")) for raw in request.POST.getlist("group")]
                made = suggestions_accept(groups=groups)
                accepted = _count(len(made), "suggestion", "suggestions")
                flash.success(request, f"Accepted {accepted}: each is one person now.")
            else:
                ids = _ids(one.split(",")) if one else _ids(request.POST.getlist("identity"))
                person = suggestion_accept(identity_ids=ids)
                flash.success(request, f"Linked {len(ids)} identities to “{person.name}”.")
        except Invalid as exc:
            flash.error(request, str(exc))
        return redirect("archive:people_suggestions")
    return render(request, "archive/people_suggestions.html", {"found": suggestion_entries()})
