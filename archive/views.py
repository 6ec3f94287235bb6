"""HTML/HTMX pages of the archive. Thin: parse, call a selector or service, render."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from django.contrib import messages as flash
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.core.paginator import Paginator
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.middleware import HtmxDetails

from archive.blobs import blob_open
from archive.connectors.registry import formats
from archive.forms import ImportForm, SetPasswordForm
from archive.jobs import import_run as import_run_job
from archive.jobs import send_deliver as send_deliver_job
from archive.jobs import tag_bulk_run as tag_bulk_job
from archive.models import (
    WEBHOOK_EVENTS,
    Agent,
    Identity,
    SendAttempt,
    SendOutcome,
    Tag,
    TagBulk,
    WebhookEndpoint,
)
from archive.selectors.archive import (
    CHAT_SORTS,
    chat_get,
    chat_messages,
    message_get,
    recent_messages,
    store_counts,
    worker_status,
)
from archive.selectors.archive import (
    chat_list as chat_list_selector,
)
from archive.selectors.imports import import_chats, import_get, import_list, import_progress
from archive.selectors.people import (
    PEOPLE_SORTS,
    activity_weeks,
    identity_find,
    people_list,
    person_page,
    suggestions,
    unlinked_identities,
)
from archive.selectors.search.messages import SORTS as SEARCH_SORTS
from archive.selectors.search.messages import message_search, recent_searches, saved_searches
from archive.selectors.search.parser import QuerySyntaxError
from archive.selectors.tags import tag_bulk_get, tag_list, tag_names, tags_of
from archive.services.agents import (
    SCOPES,
    Issued,
    agent_create,
    agent_revoke,
    agent_rotate,
    agent_update,
    since_clean,
)
from archive.services.attachments import attachment_download, attachment_thumbnail
from archive.services.imports import import_job_cancel, import_job_create, import_job_resume
from archive.services.owner import login_code_check, owner_set_password
from archive.services.people import (
    identity_link,
    identity_unlink,
    person_create,
    person_rename,
    suggestion_accept,
)
from archive.services.searches import search_delete, search_record, search_save
from archive.services.sends import gateway_settings, send_approve, send_reject
from archive.services.tags import (
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
from archive.services.uploads import safe_file_name, upload_store
from archive.services.webhooks import (
    delivery_replay,
    endpoint_create,
    endpoint_delete,
    endpoint_get,
    endpoint_set_active,
)
from tasks.services import counts_due
from wirecat.errors import Conflict, Invalid, NotFound, WireCatError


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def error_page(request: HttpRequest, exc: WireCatError) -> HttpResponse:
    return render(request, "error.html", {"error": exc}, status=exc.http_status)


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
        },
    )


@require_GET
@vary_on_headers("HX-Request")
def chat_list(request: HtmxHttpRequest) -> HttpResponse:
    sort = request.GET.get("sort", "recent")
    if sort not in CHAT_SORTS:
        sort = "recent"
    page = Paginator(chat_list_selector(sort=sort), 50).get_page(request.GET.get("page"))
    template = "archive/chat_list.html" + ("#chat-rows" if request.htmx else "")
    return render(request, template, {"page": page, "sort": sort, "sorts": list(CHAT_SORTS)})


@require_GET
@vary_on_headers("HX-Request")
def chat_detail(request: HtmxHttpRequest, chat_id: int) -> HttpResponse:
    try:
        chat = chat_get(chat_id=chat_id)
        include_deleted = request.GET.get("deleted") == "1"
        at = request.GET.get("at")
        focus = message_get(public_id=at) if at else None
        window = chat_messages(
            chat=chat,
            before=request.GET.get("before") or None,
            after=request.GET.get("after") or None,
            around=focus,
            include_deleted=include_deleted or bool(focus and focus.deleted_at),
        )
    except (NotFound, Invalid) as exc:
        return error_page(request, exc)
    context = {
        "chat": chat,
        "window": window,
        "include_deleted": include_deleted,
        "message_tags": tags_of("message", [m.pk for m in window.messages]),
        "chat_tags": tags_of("chat", [chat.pk]).get(chat.pk, []),
        "tag_choices": tag_names(limit=200),
    }
    if not request.htmx:
        context["weeks"] = activity_weeks(chat_id=chat.pk)
    if request.htmx and request.GET.get("before"):
        return render(request, "archive/chat_detail.html#older", context)
    if request.htmx and request.GET.get("after"):
        return render(request, "archive/chat_detail.html#newer", context)
    return render(request, "archive/chat_detail.html", context)


@require_GET
@vary_on_headers("HX-Request")
def search(request: HtmxHttpRequest) -> HttpResponse:
    """One box; results as you type (htmx swaps #results), a plain form without JS."""
    query = request.GET.get("q", "")
    sort = request.GET.get("sort", "relevance")
    if sort not in SEARCH_SORTS:
        sort = "relevance"
    context: dict[str, object] = {"query": query, "sort": sort, "sorts": SEARCH_SORTS}
    cursor = request.GET.get("cursor") or None
    try:
        context["page"] = message_search(query=query, sort=sort, cursor=cursor, facets=True)
    except QuerySyntaxError as exc:
        context["syntax_error"] = exc
    except Invalid as exc:
        context["problem"] = exc
    else:
        # Every search the owner runs is recorded (its parameters); the requests made
        # while typing are not runs, and neither are further pages.
        typing = request.htmx and request.htmx.trigger == "q"
        if not typing and cursor is None:
            search_record(query=query, sort=sort)
    if request.htmx:
        return render(request, "archive/search.html#results", context)
    context["saved"] = saved_searches()
    context["recent"] = recent_searches()
    context["tag_choices"] = tag_names(limit=200)
    return render(request, "archive/search.html", context)


@require_POST
def search_save_view(request: HttpRequest) -> HttpResponse:
    query = request.POST.get("q", "")
    sort = request.POST.get("sort", "relevance")
    try:
        saved = search_save(name=request.POST.get("name", ""), query=query, sort=sort)
    except Invalid as exc:
        flash.error(request, str(exc))
    else:
        flash.success(request, f"Saved as “{saved.name}”.")
    return redirect(f"{reverse('archive:search')}?{urlencode({'q': query, 'sort': sort})}")


@require_POST
def search_delete_view(request: HttpRequest, saved_id: int) -> HttpResponse:
    try:
        search_delete(saved_id=saved_id)
    except NotFound as exc:
        return error_page(request, exc)
    flash.success(request, "Saved search deleted.")
    return redirect("archive:search")


@require_GET
def message_permalink(request: HttpRequest, public_id: str) -> HttpResponse:
    try:
        message = message_get(public_id=public_id)
    except NotFound as exc:
        return error_page(request, exc)
    url = reverse("archive:chat", kwargs={"chat_id": message.chat_id})
    return HttpResponseRedirect(f"{url}?at={message.public_id}#{message.public_id}")


@login_not_required
@never_cache
@require_http_methods(["GET", "POST"])
def login_with_code(request: HttpRequest, code: str) -> HttpResponse:
    """The one-time link: the owner sets a password and is signed in."""
    try:
        login_code_check(code=code)
    except NotFound as exc:
        return render(request, "registration/login_code.html", {"invalid": str(exc)}, status=404)
    form = SetPasswordForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
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
    return render(request, "registration/login_code.html", {"form": form})


@require_http_methods(["GET", "POST"])
def imports(request: HtmxHttpRequest) -> HttpResponse:
    form = ImportForm(request.POST or None, request.FILES or None, formats=formats())
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            if data["file"]:
                source = upload_store(data["file"])
                name = safe_file_name(data["file"].name or "upload")
            else:
                source = Path(data["path"].strip()).expanduser()
                name = source.name
            job = import_job_create(
                source=source,
                source_name=name,
                format_name=data["format"] or None,
                account_name=data["account"] or None,
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
    try:
        job = import_get(public_id=public_id)
    except NotFound as exc:
        return error_page(request, exc)
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


# --- tags ---------------------------------------------------------------------------------


def _back(request: HttpRequest, fallback: str) -> str:
    """Where a plain (no JavaScript) form returns: its `next` when it is one of ours."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback


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
    try:
        target = tag_target(kind=kind, key=key)
    except (Invalid, NotFound) as exc:
        return error_page(request, exc)
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
        return error_page(request, NotFound(f"tag {tag_id} does not exist"))
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
        return error_page(request, NotFound(f"tag-all run {bulk_id} does not exist"))
    template = "archive/tag_bulk.html" + ("#progress" if request.htmx else "")
    return render(request, template, {"bulk": bulk})


@require_POST
def tag_bulk_undo_view(request: HttpRequest, bulk_id: int) -> HttpResponse:
    try:
        removed = tag_bulk_undo(bulk_id=bulk_id)
    except NotFound as exc:
        return error_page(request, exc)
    flash.success(request, f"Undone: {removed:,} taggings removed.")
    return redirect("archive:tag_bulk", bulk_id=bulk_id)


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
    try:
        detail = person_page(person_id=person_id)
    except NotFound as exc:
        return error_page(request, exc)
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
                identity = identity_unlink(identity_id=int(raw))
                flash.success(request, f"Unlinked {identity} ({identity.provider}).")
        else:
            raise Invalid("action: rename, link or unlink")
    except NotFound as exc:
        return error_page(request, exc)
    except Invalid as exc:
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


# --- attachments --------------------------------------------------------------------------

_UNTRUSTED = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cross-Origin-Resource-Policy": "same-origin",
}


@require_GET
def attachment_download_view(request: HttpRequest, public_id: str) -> HttpResponseBase:
    """The stored bytes, always as a download (never rendered), with their SHA-256."""
    try:
        download = attachment_download(public_id=public_id)
        handle = blob_open(download.path)
    except (NotFound, Invalid) as exc:
        return error_page(request, NotFound(str(exc)))
    response = FileResponse(
        handle,
        as_attachment=True,
        filename=download.name,
        content_type="application/octet-stream",
    )
    for header, value in _UNTRUSTED.items():
        response[header] = value
    response["X-Content-SHA256"] = download.attachment.sha256
    return response


@require_GET
def attachment_thumbnail_view(request: HttpRequest, public_id: str) -> HttpResponseBase:
    try:
        path = attachment_thumbnail(public_id=public_id)
    except (NotFound, Invalid) as exc:
        return error_page(request, NotFound(str(exc)))
    response = FileResponse(path.open("rb"), content_type="image/png")
    for header, value in _UNTRUSTED.items():
        response[header] = value
    response["Cache-Control"] = "private, max-age=86400"
    return response


@require_GET
@vary_on_headers("HX-Request")
def message_revisions(request: HtmxHttpRequest, public_id: str) -> HttpResponse:
    """The earlier texts of an edited message, oldest first."""
    try:
        message = message_get(public_id=public_id)
    except NotFound as exc:
        return error_page(request, exc)
    revisions = list(message.revisions.order_by("recorded_at", "id"))
    template = "archive/revisions.html" + ("#list" if request.htmx else "")
    return render(request, template, {"m": message, "revisions": revisions})


# --- agents -------------------------------------------------------------------------------


def _agents_page(
    request: HttpRequest, issued: Issued | None = None, status: int = 200
) -> HttpResponse:
    response = render(
        request,
        "archive/agents.html",
        {
            "agents": Agent.objects.all(),
            "scopes": SCOPES.items(),
            "issued": issued,
            "error": getattr(request, "_agent_error", ""),
        },
        status=status,
    )
    if issued is not None:  # the token is in this answer only: never cache it
        response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
def agents(request: HttpRequest) -> HttpResponse:
    """The owner's agents; making one shows its token once, on this answer only."""
    if request.method == "POST":
        try:
            issued = agent_create(
                name=request.POST.get("name", ""),
                scopes=request.POST.getlist("scopes"),
                since=since_clean(request.POST.get("since")),
            )
        except (Invalid, Conflict) as exc:
            request._agent_error = str(exc)  # type: ignore[attr-defined]
            return _agents_page(request, status=422)
        return _agents_page(request, issued)
    return _agents_page(request)


@require_POST
def agent_edit_view(request: HttpRequest, public_id: str) -> HttpResponse:
    """Rotate (a new token, shown once), revoke, or change scopes."""
    action = request.POST.get("action", "")
    try:
        if action == "rotate":
            return _agents_page(request, agent_rotate(public_id=public_id))
        if action == "revoke":
            agent = agent_revoke(public_id=public_id)
            flash.success(request, f"Revoked “{agent.name}”: its token no longer works.")
        elif action == "scopes":
            agent = agent_update(public_id=public_id, scopes=request.POST.getlist("scopes"))
            flash.success(request, f"Scopes of “{agent.name}” saved.")
        else:
            raise Invalid("action: rotate, revoke or scopes")
    except NotFound as exc:
        return error_page(request, exc)
    except Invalid as exc:
        flash.error(request, str(exc))
    return redirect("archive:agents")


# --- sends --------------------------------------------------------------------------------


@require_GET
def sends_page(request: HttpRequest) -> HttpResponse:
    """Sends awaiting the owner (with their text), the read-only lock, the journal."""
    awaiting = (
        SendAttempt.objects.filter(outcome=SendOutcome.AWAITING)
        .select_related("agent", "account", "chat", "message")
        .order_by("at", "id")
    )
    journal = SendAttempt.objects.select_related("agent", "account", "chat")[:50]
    return render(
        request,
        "archive/sends.html",
        {"awaiting": awaiting, "journal": journal, "settings": gateway_settings()},
    )


@require_POST
def send_decide_view(request: HtmxHttpRequest, send_id: str) -> HttpResponse:
    decision = request.POST.get("decision", "")
    try:
        if decision == "approve":
            attempt = send_approve(send_id=send_id)
            send_deliver_job.delay_on_commit(attempt.pk)
        elif decision == "refuse":
            attempt = send_reject(send_id=send_id)
        else:
            raise Invalid("decision: approve or refuse")
    except NotFound as exc:
        return error_page(request, exc)
    except (Conflict, Invalid) as exc:
        if request.htmx:
            return HttpResponse(f'<p class="error" role="alert">{escape(str(exc))}</p>', status=422)
        flash.error(request, str(exc))
        return redirect("archive:sends")
    if request.htmx:
        return render(request, "archive/sends.html#decided", {"attempt": attempt})
    flash.success(request, f"Send {attempt.public_id}: {attempt.get_outcome_display().lower()}.")
    return redirect("archive:sends")


@require_POST
def gateway_lock_view(request: HttpRequest) -> HttpResponse:
    settings_row = gateway_settings()
    settings_row.read_only = request.POST.get("read_only") == "1"
    settings_row.save(update_fields=["read_only"])
    state = "on: every send is refused" if settings_row.read_only else "off"
    flash.success(request, f"Read-only lock {state}.")
    return redirect("archive:sends")


# --- webhooks -----------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def webhooks(request: HttpRequest) -> HttpResponse:
    """Endpoints and their recent deliveries; a new endpoint's secret is shown once."""
    made: WebhookEndpoint | None = None
    error = ""
    if request.method == "POST":
        try:
            made = endpoint_create(
                url=request.POST.get("url", ""),
                events=request.POST.getlist("events"),
                secret=request.POST.get("secret", ""),
            )
        except Invalid as exc:
            error = str(exc)
    response = render(
        request,
        "archive/webhooks.html",
        {
            "endpoints": WebhookEndpoint.objects.all(),
            "events": WEBHOOK_EVENTS,
            "made": made,
            "error": error,
            "settings": gateway_settings(),
        },
        status=422 if error else 200,
    )
    if made is not None:
        response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
def webhook_detail(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    try:
        endpoint = endpoint_get(endpoint_id=endpoint_id)
        if request.method == "POST":
            action = request.POST.get("action", "")
            if action == "replay":
                raw = request.POST.get("delivery", "")
                if not raw.isdigit() or len(raw) > 18:
                    raise Invalid("delivery: not an id")
                delivery_replay(endpoint_id=endpoint_id, delivery_id=int(raw))
                flash.success(request, f"Delivery {raw} will be sent again.")
            elif action in ("pause", "resume"):
                endpoint_set_active(endpoint_id=endpoint_id, active=action == "resume")
                flash.success(request, f"Endpoint {'resumed' if action == 'resume' else 'paused'}.")
            elif action == "delete":
                endpoint_delete(endpoint_id=endpoint_id)
                flash.success(request, "Endpoint deleted with its deliveries.")
                return redirect("archive:webhooks")
            else:
                raise Invalid("action: replay, pause, resume or delete")
            return redirect("archive:webhook", endpoint_id=endpoint_id)
    except NotFound as exc:
        return error_page(request, exc)
    except Invalid as exc:
        flash.error(request, str(exc))
        return redirect("archive:webhook", endpoint_id=endpoint_id)
    deliveries = Paginator(endpoint.deliveries.all(), 50).get_page(request.GET.get("page"))
    return render(request, "archive/webhook.html", {"endpoint": endpoint, "deliveries": deliveries})


@require_POST
def webhooks_private_view(request: HttpRequest) -> HttpResponse:
    row = gateway_settings()
    row.webhooks_allow_private = request.POST.get("allow") == "1"
    row.save(update_fields=["webhooks_allow_private"])
    flash.success(
        request,
        "Private addresses allowed."
        if row.webhooks_allow_private
        else "Private addresses refused.",
    )
    return redirect("archive:webhooks")
