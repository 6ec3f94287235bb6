"""Chat pages, message permalinks and revisions, attachment downloads and thumbnails."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from archive.people.selectors import (
    activity_weeks,
)
from archive.store.selectors import (
    CHAT_SORTS,
    chat_get,
    chat_messages,
    message_get,
)
from archive.store.selectors import chat_list as chat_list_selector
from archive.store.services.attachments import attachment_download, attachment_thumbnail
from archive.tags.selectors import tag_names, tags_of
from archive.web.files import attachment_response, thumbnail_response
from archive.web.pages import HtmxHttpRequest


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
def message_permalink(request: HttpRequest, public_id: str) -> HttpResponse:
    message = message_get(public_id=public_id)
    url = reverse("archive:chat", kwargs={"chat_id": message.chat_id})
    return HttpResponseRedirect(f"{url}?at={message.public_id}#{message.public_id}")


# --- attachments --------------------------------------------------------------------------


@require_GET
def attachment_download_view(request: HttpRequest, public_id: str) -> HttpResponseBase:
    """The stored bytes, always as a download (never rendered), with their SHA-256."""
    return attachment_response(attachment_download(public_id=public_id))


@require_GET
def attachment_thumbnail_view(request: HttpRequest, public_id: str) -> HttpResponseBase:
    return thumbnail_response(attachment_thumbnail(public_id=public_id))


@require_GET
@vary_on_headers("HX-Request")
def message_revisions(request: HtmxHttpRequest, public_id: str) -> HttpResponse:
    """The earlier texts of an edited message, oldest first."""
    message = message_get(public_id=public_id)
    revisions = list(message.revisions.order_by("recorded_at", "id"))
    template = "archive/revisions.html" + ("#list" if request.htmx else "")
    return render(request, template, {"m": message, "revisions": revisions})
