"""The Conversations pages: a chat's conversations, newest active first, each a fold with
its title, participants, time span and size, its messages drawn as the chat page draws
them; one conversation on its own page (`conversation:cnv_…`); a message opened in its
conversation."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from archive.conversations.page_reads import (
    ConversationCard,
    build_status,
    conversation_cards,
    conversation_list,
    conversation_window,
    list_page_of,
    page_number,
)
from archive.conversations.selectors import (
    ConversationView,
    conversation_by_public_id,
    conversation_of,
)
from archive.store.models import Chat, Message
from archive.store.selectors import (
    AVATAR_COLOURS,
    MessageWindow,
    chat_get,
    initial,
    message_get,
    message_rows,
)
from archive.tags.selectors import tag_names, tags_of
from archive.web.pages import HtmxHttpRequest
from tasks.selectors import tasks_of_messages
from wirecat.errors import NotFound

PUBLIC_ID_MAX = 60  # longer than any msg_/cnv_ id: read no further


def _links() -> dict[str, str]:
    """The start of each address a message links to, reversed once per page (as the chat
    page does)."""
    return {
        "message": reverse("archive:message", args=["0"]).removesuffix("0/"),
        "task": reverse("tasks:task", args=["0"]).removesuffix("0/"),
        "task_new": f"{reverse('tasks:new')}?message=",
        "note_new": f"{reverse('notes:new')}?link=message:",
        "sends": reverse("archive:sends"),
        "conversation": reverse("archive:conversation", args=["0"]).removesuffix("0/"),
        "note_conversation": f"{reverse('notes:new')}?link=conversation:",
    }


def _window_context(window: MessageWindow, *, tag: str = "") -> dict[str, Any]:
    """What the chat page's message partial needs for a window of messages."""
    ids = [m.pk for m in window.messages]
    focus_pk = window.focus.pk if window.focus else None
    return {
        "window": window,
        "rows": message_rows(
            window.messages, tags=tags_of("message", ids), tasks=tasks_of_messages(ids)
        ),
        "focus_pk": focus_pk,
        # "Add a tag" without JavaScript: the page opens at the message with its tag box.
        "tag_open": focus_pk if tag and window.focus and tag == window.focus.public_id else None,
        "deleted_param": "",
    }


def _message_in(raw: str, chat_id: int) -> Message | None:
    """The message `?at=` names, when it is one of this chat's (else none: the page opens
    as it would without it)."""
    if not raw:
        return None
    return Message.objects.filter(public_id=raw[:PUBLIC_ID_MAX], chat_id=chat_id).first()


def _chat_head(chat: Chat) -> dict[str, Any]:
    return {
        "chat": chat,
        "chat_initial": initial(chat.title or chat.external_id),
        "chat_colour": chat.pk % AVATAR_COLOURS,
    }


@require_GET
def chat_conversations_view(request: HttpRequest, chat_id: int) -> HttpResponse:
    """The chat's conversations, newest active first, a page at a time. `?at=msg_…` opens
    the page holding that message's conversation, unfolded at the message, highlighted;
    `?open=cnv_…` unfolds one conversation (what a fold's link does without JavaScript)."""
    chat = chat_get(chat_id=chat_id)
    status = build_status(chat_id=chat.pk)
    at = _message_in(request.GET.get("at", ""), chat.pk)
    opened: ConversationView | None = None
    if at is not None:
        opened = conversation_of(message_id=at.pk)
    elif request.GET.get("open"):
        found = conversation_by_public_id(request.GET["open"][:PUBLIC_ID_MAX])
        opened = found if found is not None and found.chat_id == chat.pk else None
    if opened is not None and "page" not in request.GET:
        page = list_page_of(opened)
    else:
        page = page_number(request.GET.get("page"), pages=10**9)
    listing = conversation_list(chat_id=chat.pk, page=page)
    context: dict[str, Any] = {
        **_chat_head(chat),
        "status": status,
        "listing": listing,
        "opened": opened.public_id if opened is not None else "",
        "at": at,
        "at_unbuilt": at is not None and opened is None,
        "links": _links(),
        "tag_choices": tag_names(limit=200),
    }
    if opened is not None and any(c.public_id == opened.public_id for c in listing.cards):
        window = conversation_window(opened, around=at)
        context.update(_window_context(window, tag=request.GET.get("tag", "")))
    return render(request, "archive/conversations/chat_conversations.html", context)


@require_GET
@vary_on_headers("HX-Request")
def conversation_view(request: HtmxHttpRequest, public_id: str) -> HttpResponse:
    """One conversation (`conversation:cnv_…`): its messages in order, a page at a time,
    who took part and when, the notes that link to it. An htmx request gets its messages
    only (a fold of the list opened, a page before or after)."""
    view = conversation_by_public_id(public_id[:PUBLIC_ID_MAX])
    if view is None:
        raise NotFound(
            f"no conversation {public_id[:PUBLIC_ID_MAX]!r}: it does not exist, or its chat's"
            " conversations are not built yet"
        )
    before = request.GET.get("before") or None
    after = request.GET.get("after") or None
    at = _message_in(request.GET.get("at", ""), view.chat_id) if not (before or after) else None
    window = conversation_window(view, before=before, after=after, around=at)
    context: dict[str, Any] = {
        "conv": view,
        "links": _links(),
        **_window_context(window, tag=request.GET.get("tag", "")),
    }
    if request.htmx and before:
        return render(request, "archive/conversations/conversation.html#earlier", context)
    if request.htmx and after:
        return render(request, "archive/conversations/conversation.html#later", context)
    if request.htmx:
        return render(request, "archive/conversations/conversation.html#messages", context)
    chat = chat_get(chat_id=view.chat_id)
    card: ConversationCard = conversation_cards([view])[0]
    context.update(_chat_head(chat))
    context["card"] = card
    context["tag_choices"] = tag_names(limit=200)
    context["list_url"] = (
        reverse("archive:chat_conversations", args=[chat.pk]) + f"?open={view.public_id}"
    )
    return render(request, "archive/conversations/conversation.html", context)


@require_GET
def message_conversation_view(request: HttpRequest, public_id: str) -> HttpResponse:
    """ "Show its conversation" from a message's menu: the chat's conversations opened at it."""
    message = message_get(public_id=public_id[:PUBLIC_ID_MAX])
    url = reverse("archive:chat_conversations", args=[message.chat_id])
    return HttpResponseRedirect(f"{url}?at={message.public_id}#{message.public_id}")
