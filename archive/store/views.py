"""Chat pages, a chat's export, message permalinks and revisions, attachment downloads and
thumbnails."""

from __future__ import annotations

from datetime import date
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from archive.people.selectors import (
    activity_weeks,
)
from archive.store.chat_export import export_title
from archive.store.chat_list import (
    CHAT_LIST_PAGE,
    ChatEntry,
    ChatRows,
    account_get,
    chat_filter,
    chat_sources,
)
from archive.store.models import Chat, ChatKind
from archive.store.rendering import revision_steps
from archive.store.selectors import (
    AVATAR_COLOURS,
    CHAT_SORTS,
    chat_date_jump,
    chat_get,
    chat_members,
    chat_messages,
    initial,
    message_get,
    message_rows,
)
from archive.store.services.attachments import attachment_download, attachment_thumbnail
from archive.tags.selectors import tag_names, tags_of
from archive.web.chat_export import chat_export_zip
from archive.web.files import attachment_response, thumbnail_response
from archive.web.pages import HtmxHttpRequest
from tasks.selectors import tasks_of_messages


@require_GET
@vary_on_headers("HX-Request")
def chat_list(request: HtmxHttpRequest) -> HttpResponse:
    """The chats newest first, each with its last message, filtered by title and source;
    a mail account's threads folded into one row (`?account=` lists them). The filter
    form swaps the rows in place (htmx) and is a plain GET form without JavaScript."""
    where = chat_filter(
        q=request.GET.get("q", ""),
        source=request.GET.get("source", ""),
        account=request.GET.get("account", ""),
        sort=request.GET.get("sort", ""),
    )
    account = account_get(account_id=where.account) if where.account is not None else None
    page: Page[ChatEntry] = Paginator(ChatRows(where), CHAT_LIST_PAGE).get_page(
        request.GET.get("page")
    )
    kept = {"q": where.q, "source": where.source, "sort": where.sort, "account": where.account}
    context = {
        "page": page,
        "where": where,
        "account": account,
        "query": urlencode({k: v for k, v in kept.items() if v and v != "recent"}),
        "sorts": list(CHAT_SORTS),
        "sources": chat_sources(),
    }
    template = "archive/chat_list.html" + ("#chat-rows" if request.htmx else "")
    return render(request, template, context)


@require_GET
@vary_on_headers("HX-Request")
def chat_detail(request: HtmxHttpRequest, chat_id: int) -> HttpResponse:
    chat = chat_get(chat_id=chat_id)
    find = request.GET.get("find")
    if find is not None:  # search in this chat: the search page, scoped to it
        return HttpResponseRedirect(_search_in_chat(chat, find))
    include_deleted = request.GET.get("deleted") == "1"
    at = request.GET.get("at")
    focus = message_get(public_id=at) if at else None
    jump, date_problem = None, ""
    if "date" in request.GET and not at:
        day, date_problem = _day(request.GET["date"])
        if day is not None:
            jump = chat_date_jump(chat=chat, day=day, include_deleted=include_deleted)
            focus = jump.message
    window = chat_messages(
        chat=chat,
        before=request.GET.get("before") or None,
        after=request.GET.get("after") or None,
        around=focus,
        include_deleted=include_deleted or bool(focus and focus.deleted_at),
    )
    ids = [m.pk for m in window.messages]
    rows = message_rows(window.messages, tags=tags_of("message", ids), tasks=tasks_of_messages(ids))
    focus_pk = window.focus.pk if window.focus else None
    context = {
        "chat": chat,
        "window": window,
        "rows": rows,
        "focus_pk": focus_pk,
        # "Add a tag" without JavaScript: the page opens at the message with its tag box.
        "tag_open": focus_pk if at and request.GET.get("tag") == at else None,
        "links": _links(),
        "include_deleted": include_deleted,
        "deleted_param": "&deleted=1" if include_deleted else "",
        "tag_choices": tag_names(limit=200),
    }
    if request.htmx and request.GET.get("before"):
        return render(request, "archive/chat_detail.html#older", context)
    if request.htmx and request.GET.get("after"):
        return render(request, "archive/chat_detail.html#newer", context)
    context["chat_tags"] = tags_of("chat", [chat.pk]).get(chat.pk, [])
    context["chat_initial"] = initial(chat.title or chat.external_id)
    context["chat_colour"] = chat.pk % AVATAR_COLOURS  # as on the chat list
    context["weeks"] = activity_weeks(chat_id=chat.pk)
    context["members"] = chat_members(chat=chat) if chat.kind != ChatKind.DM else None
    context["jump"] = jump
    context["date_problem"] = date_problem
    return render(request, "archive/chat_detail.html", context)


def _links() -> dict[str, str]:
    """The start of each address a message links to: 50 messages on a page reverse
    nothing (reversing each of their links took a third of the page's time)."""
    return {
        "message": reverse("archive:message", args=["0"]).removesuffix("0/"),
        "task": reverse("tasks:task", args=["0"]).removesuffix("0/"),
        "task_new": f"{reverse('tasks:new')}?message=",
        "note_new": f"{reverse('notes:new')}?link=message:",
        "sends": reverse("archive:sends"),
    }


def _search_in_chat(chat: Chat, words: str) -> str:
    """The search page's address for `words` in this chat (`chat:` matches the chat's id)."""
    scope = chat.external_id.replace('"', "")
    query = f'chat:"{scope}" source:{chat.account.provider} {words.strip()}'.strip()
    return f"{reverse('archive:search')}?{urlencode({'q': query})}"


def _day(raw: str) -> tuple[date | None, str]:
    """The day a "jump to date" form asks for, or why it is not one."""
    text = raw.strip()
    if not text:
        return None, "Pick a day to jump to."
    try:
        return date.fromisoformat(text), ""
    except ValueError:
        shown = text[:40]
        return None, f"“{shown}” is not a date. Pick a day with the date picker (year-month-day)."


@require_GET
def message_permalink(request: HttpRequest, public_id: str) -> HttpResponse:
    message = message_get(public_id=public_id)
    url = reverse("archive:chat", kwargs={"chat_id": message.chat_id})
    return HttpResponseRedirect(f"{url}?at={message.public_id}#{message.public_id}")


# --- a chat's export -----------------------------------------------------------------------


@require_GET
def chat_export_view(request: HttpRequest, chat_id: int) -> StreamingHttpResponse:
    """The chat as a zip to keep (its page and its media), written as it is sent."""
    chat = chat_get(chat_id=chat_id)
    response = StreamingHttpResponse(chat_export_zip(chat), content_type="application/zip")
    disposition = content_disposition_header(True, f"{export_title(chat)}.zip")
    response["Content-Disposition"] = disposition or "attachment"
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, no-store"
    return response


# --- attachments --------------------------------------------------------------------------


@require_GET
def attachment_download_view(request: HttpRequest, public_id: str) -> HttpResponseBase:
    """The stored bytes, always as a download (never rendered), with their SHA-256; one
    byte range of them when asked (a player seeking)."""
    play = request.GET.get("play") == "1"  # audio or video opened to play (a #t= link)
    return attachment_response(request, attachment_download(public_id=public_id), play=play)


@require_GET
def attachment_thumbnail_view(request: HttpRequest, public_id: str) -> HttpResponseBase:
    return thumbnail_response(attachment_thumbnail(public_id=public_id))


@require_GET
@vary_on_headers("HX-Request")
def message_revisions(request: HtmxHttpRequest, public_id: str) -> HttpResponse:
    """What each edit of a message changed, word by word, newest first."""
    message = message_get(public_id=public_id)
    revisions = list(message.revisions.order_by("recorded_at", "id"))
    steps = revision_steps(revisions=revisions, current=message.text, edited_at=message.edited_at)
    template = "archive/revisions.html" + ("#list" if request.htmx else "")
    return render(request, template, {"m": message, "revisions": revisions, "steps": steps})
