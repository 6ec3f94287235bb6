"""The notes pages: the list (a folder tree, a folder's notes, search), a note (its rendered
Markdown, links as chips, backlinks, tags, revisions with a diff), and the editor (live
preview, `[[` suggestions, autosave naming the revision it edits, a conflict page with
both texts). Every page works without JavaScript: the editor's form posts and saves."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from archive.tags.selectors import tag_names, tags_of
from archive.web.pages import HtmxHttpRequest
from notes.forms import NoteForm
from notes.models import Note
from notes.reads import (
    NotesPage,
    folder_choices,
    folder_crumbs,
    folder_neighbours,
    links_by_kind,
    note_counts,
    notes_page,
    preview_targets,
    ref_described,
    revision_list,
    revision_pair,
    revision_text,
    rows_for,
    saved_targets,
    sidebar_tree,
    snippet_read,
    suggestions,
)
from notes.rendering import chip_html, note_html
from notes.search import note_search
from notes.selectors import Target
from notes.services.links import LinkSpec
from notes.services.notes import (
    BODY_MAX,
    NoteConflict,
    note_create,
    note_delete,
    note_get,
    note_update,
)
from notes.textdiff import merge, text_diff
from wirecat.errors import Invalid, NotFound, TooLarge

SEARCH_LIMIT = 30
AUTOSAVE = "X-Autosave"  # the editor's script saving in the background: answered in JSON


def _folder_choice(raw: str) -> tuple[int | None, bool]:
    """(folder id, unfiled) from ?folder=: a folder's id, "none" for notes in no folder."""
    if raw == "none":
        return None, True
    return (int(raw), False) if raw.isdigit() and len(raw) < 19 else (None, False)


@require_GET
@vary_on_headers("HX-Request")
def note_list(request: HtmxHttpRequest) -> HttpResponse:
    """All notes, a folder's, or a search's (`q`): results as you type (htmx swaps
    #note-results), a plain form without JavaScript. A query that cannot be read is its
    sentence, never an error page."""
    query = request.GET.get("q", "")[:1000]
    folder_id, unfiled = _folder_choice(request.GET.get("folder", ""))
    page_raw = request.GET.get("page", "1")
    context: dict[str, Any] = {"query": query, "folder_id": folder_id, "unfiled": unfiled}
    if query.strip():
        cursor = request.GET.get("cursor") or None
        try:
            found = note_search(query=query, cursor=cursor, limit=SEARCH_LIMIT)
        except Invalid as exc:  # the query's own sentence (where it cannot be read), or one
            # about an operator notes cannot answer (`from:`)
            context["problem"] = getattr(exc, "problem", None) or str(exc)
            position = getattr(exc, "position", None)
            context["at"] = position + 1 if isinstance(position, int) else None
        else:
            tags = tags_of("note", [hit.note.pk for hit in found.hits])
            context["found"] = found
            context["hits"] = [
                (hit, snippet_read(hit.snippet), tags.get(hit.note.pk, [])) for hit in found.hits
            ]
    else:
        page = int(page_raw) if page_raw.isdigit() and len(page_raw) < 7 else 1
        listed = notes_page(folder_id=folder_id, unfiled=unfiled, page=page)
        if folder_id is not None and listed.folder is None:
            raise NotFound(f"folder {folder_id} does not exist")
        context["listed"] = listed
    shown: NotesPage | None = context.get("listed")
    context["new_url"] = _new_url(shown.folder_path if shown else "")
    if request.htmx and request.htmx.target == "note-results":
        return render(request, "notes/list.html#results", context)
    context.update(
        _sidebar(folder_id, unfiled=unfiled, all_current=not (folder_id or unfiled or query))
    )
    context["crumbs"] = folder_crumbs(shown.folder) if shown else []
    return render(request, "notes/list.html", context)


def _new_url(folder_path: str = "") -> str:
    """The editor for a new note, in `folder_path` when there is one."""
    url = reverse("notes:new")
    return f"{url}?{urlencode({'folder': folder_path})}" if folder_path else url


def _sidebar(
    folder_id: int | None, *, unfiled: bool = False, all_current: bool = False
) -> dict[str, Any]:
    return {
        "tree": sidebar_tree(folder_id),
        "counts": note_counts(),
        "folder_id": folder_id,
        "unfiled": unfiled,
        "all_current": all_current,
    }


@require_GET
def note_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    note = note_get(public_id)
    crumbs = folder_crumbs(note.folder)
    return render(
        request,
        "notes/note.html",
        {
            "note": note,
            "html": note_html(note.body, targets=saved_targets(note)),
            "crumbs": crumbs,
            "links": links_by_kind(note),
            "tags": tags_of("note", [note.pk]).get(note.pk, []),
            "tag_choices": tag_names(limit=200),
            "neighbours": folder_neighbours(note),
            "here": reverse("notes:note", args=[note.public_id]),
            "new_url": _new_url("/".join(folder.name for folder in crumbs)),
            **_sidebar(note.folder_id),
        },
    )


# --- the editor ---------------------------------------------------------------------------


def _editor(
    request: HttpRequest,
    form: NoteForm,
    *,
    note: Note | None,
    link: Target | None = None,
    preview: str | None = None,
    status: int = 200,
) -> HttpResponse:
    action = reverse("notes:edit", args=[note.public_id]) if note else reverse("notes:new")
    return render(
        request,
        "notes/edit.html",
        {
            "form": form,
            "note": note,
            "action": action,
            "about": chip_html(link, link.label) if link else "",
            "folders": folder_choices(),
            "preview": preview,
            "body_max": BODY_MAX,
        },
        status=status,
    )


def _about(ref: str) -> Target | None:
    return ref_described(ref) if ref else None


@require_http_methods(["GET", "POST"])
def note_new(request: HttpRequest) -> HttpResponse:
    """A new note; `?link=<ref>` makes it about that (a message, a person, …), `?title=`
    and `?folder=` fill those in (an unresolved `[[name]]` chip's offer)."""
    if request.method == "POST":
        return _save(request, None)
    link = request.GET.get("link", "").strip()[:2100]
    target = _about(link)  # a reference that is not one is the error page's sentence
    form = NoteForm(
        initial={
            "title": request.GET.get("title", "")[:300],
            "folder": request.GET.get("folder", "")[:1000],
            "link": str(target.ref) if target and target.ref else "",
        }
    )
    return _editor(request, form, note=None, link=target)


@require_http_methods(["GET", "POST"])
def note_edit(request: HttpRequest, public_id: str) -> HttpResponse:
    note = note_get(public_id)
    if request.method == "POST":
        return _save(request, note)
    crumbs = folder_crumbs(note.folder)
    form = NoteForm(
        initial={
            "title": note.title,
            "folder": "/".join(folder.name for folder in crumbs),
            "aliases": ", ".join(note.aliases),
            "body": note.body,
            "revision": note.revision,
        },
        editing=True,
    )
    return _editor(request, form, note=note)


def _first_error(form: NoteForm) -> str:
    for errors in form.errors.values():
        for error in errors:
            return str(error)
    return "The note was not saved."


def _save(request: HttpRequest, note: Note | None) -> HttpResponse:
    """The editor's post: saved (the note's page, or for the autosave its new revision in
    JSON), refused with the field's sentence, or a conflict with both texts."""
    autosave = request.headers.get(AUTOSAVE) == "1"
    form = NoteForm(request.POST, editing=note is not None)
    valid = form.is_valid()
    link_target = None
    if note is None and valid and form.cleaned_data["link"]:
        link_target = _about(form.cleaned_data["link"])
    if request.POST.get("action") == "preview" and not autosave:  # the no-JS preview
        body = request.POST.get("body", "")[:BODY_MAX]
        html = note_html(body, targets=preview_targets(body))
        return _editor(request, form, note=note, link=link_target, preview=html)
    if not valid:
        if autosave:
            return JsonResponse({"error": _first_error(form)}, status=422)
        return _editor(request, form, note=note, link=link_target, status=422)
    data = form.cleaned_data
    try:
        if note is None:
            links = [LinkSpec(target=data["link"], kind="about")] if data["link"] else []
            saved = note_create(
                title=data["title"],
                body=data["body"],
                folder=data["folder"] or None,
                aliases=data["aliases"],
                links=links,
            )
        else:
            saved = note_update(
                public_id=note.public_id,
                revision=data["revision"],
                title=data["title"],
                body=data["body"],
                folder=data["folder"] or None,
                aliases=data["aliases"],
            )
    except NoteConflict as conflict:
        if autosave:
            return JsonResponse(
                {"conflict": True, "error": str(conflict), "revision": conflict.current_revision},
                status=409,
            )
        return _conflict(request, conflict, form)
    except (Invalid, TooLarge) as exc:
        form.add_service_error(exc)
        if autosave:
            return JsonResponse({"error": str(exc)}, status=exc.http_status)
        return _editor(request, form, note=note, link=link_target, status=exc.http_status)
    if autosave:
        return JsonResponse(
            {
                "id": saved.public_id,
                "revision": saved.revision,
                "saved_at": timezone.localtime(saved.updated_at).strftime("%H:%M:%S"),
                "edit_url": reverse("notes:edit", args=[saved.public_id]),
                "note_url": reverse("notes:note", args=[saved.public_id]),
            }
        )
    flash.success(request, f"Saved “{saved.title}” (revision {saved.revision}).")
    return redirect("notes:note", public_id=saved.public_id)


def _conflict(request: HttpRequest, conflict: NoteConflict, form: NoteForm) -> HttpResponse:
    """Both texts side by side, and the ways on: keep yours, keep the saved one, or save
    the two merged over the revision yours was made from (markers where both changed the
    same lines)."""
    note = conflict.note
    base = revision_text(note, conflict.edited)
    base_title, base_body = base if base is not None else (conflict.current_title, "")
    merged = merge(base_body, conflict.body, conflict.current_body)
    # The title too: yours where you changed it, else the saved one.
    title = conflict.current_title if conflict.title == base_title else conflict.title
    data = form.cleaned_data
    return render(
        request,
        "notes/conflict.html",
        {
            "note": note,
            "conflict": conflict,
            "merged": merged,
            "merged_title": title,
            "folder": data.get("folder", ""),
            "aliases": ", ".join(data.get("aliases") or []),
            "diff": text_diff(conflict.current_body, conflict.body),
            "no_base": base is None,
        },
        status=409,
    )


@require_POST
def note_preview(request: HttpRequest) -> HttpResponse:
    """The editor's live preview: the body as the note's page would show it, its links
    resolved as a save would resolve them now."""
    body = request.POST.get("body", "")
    if len(body) > BODY_MAX:
        raise TooLarge(f"body: at most {BODY_MAX:,} characters, not {len(body):,}")
    html = note_html(body, targets=preview_targets(body))
    return render(request, "notes/_preview.html", {"html": html, "empty": not body.strip()})


@require_GET
def note_suggest(request: HttpRequest) -> JsonResponse:
    """What `[[q` may link to, for the editor's list: each with its kind, its name, a
    detail, and what goes between the brackets."""
    found = suggestions(request.GET.get("q", ""))
    return JsonResponse(
        {
            "items": [
                {"kind": s.kind, "label": s.label, "detail": s.detail, "insert": s.insert}
                for s in found
            ]
        }
    )


# --- revisions and delete -----------------------------------------------------------------


@require_GET
def note_revisions(request: HttpRequest, public_id: str) -> HttpResponse:
    """The note's revisions; one of them (`r`, the newest by default) against the one
    before it, as a diff."""
    note = note_get(public_id)
    raw = request.GET.get("r", "")
    number = int(raw) if raw.isdigit() and len(raw) < 10 else note.revision
    shown, before = revision_pair(note, number)
    if shown is None:
        raise NotFound(f"note {note.public_id} has no revision {number}")
    return render(
        request,
        "notes/revisions.html",
        {
            "note": note,
            "revisions": revision_list(note),
            "shown": shown,
            "before": before,
            "diff": text_diff(before.body if before else "", shown.body),
        },
    )


@require_http_methods(["GET", "POST"])
def note_delete_view(request: HttpRequest, public_id: str) -> HttpResponse:
    """Asks first (a page of its own, so it works without JavaScript), then deletes."""
    note = note_get(public_id)
    if request.method == "POST":
        note_delete(public_id=note.public_id)
        flash.success(request, f"Deleted “{note.title}”. Links to it now wait for its name.")
        return redirect("notes:list")
    incoming = rows_for([note])
    return render(request, "notes/delete.html", {"note": note, "row": incoming[0]})
