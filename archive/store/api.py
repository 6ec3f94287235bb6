"""The API for chats and messages: chat lists, a chat's messages, a message in context,
attachment bytes."""

from __future__ import annotations

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from ninja import Router

from archive.store.schemas import (
    ChatMessagesOut,
    ChatOut,
    MessageContextOut,
    message_out,
)
from archive.store.selectors import chat_get, chat_list, chat_messages, message_get, messages_full
from archive.store.services.attachments import attachment_download
from archive.web.api import answers, requires, scope, window
from archive.web.files import attachment_response
from archive.web.schemas import ErrorOut
from wirecat.errors import Invalid, TooLarge

router = Router(tags=["messages"])

ATTACHMENT_MAX = 100 * 1024 * 1024  # larger files are refused here (413): use the page


@router.get(
    "/chats",
    response=answers(list[ChatOut]),
    summary="Chats, newest activity first",
    **scope("messages.read"),
)
@requires("messages.read")
def chats(request: HttpRequest, limit: int = 100, offset: int = 0) -> list[ChatOut]:
    page = window(limit, offset, 500)
    rows = chat_list(sort="recent")  # the Chats page's list, in its order
    return [
        ChatOut(
            id=c.pk,
            title=c.title or c.external_id,
            kind=c.kind,
            source=c.account.provider,
            account=c.account.name or c.account.external_id,
            message_count=c.message_count,
            last_message_at=c.last_message_at,
        )
        for c in rows[page]
    ]


@router.get(
    "/chats/{chat_id}/messages",
    response=answers(ChatMessagesOut),
    summary="A chat's messages, a page at a time (newest page first)",
    **scope("messages.read"),
)
@requires("messages.read")
def chat_messages_view(
    request: HttpRequest,
    chat_id: int,
    before: str | None = None,
    after: str | None = None,
    limit: int = 50,
    deleted: bool = False,
) -> ChatMessagesOut:
    """`before`/`after` are the `older`/`newer` cursors of a previous page."""
    if not 1 <= limit <= 200:
        raise Invalid("limit: between 1 and 200")
    window = chat_messages(
        chat=chat_get(chat_id=chat_id),
        before=before,
        after=after,
        limit=limit,
        include_deleted=deleted,
    )
    messages = messages_full([m.pk for m in window.messages])
    return ChatMessagesOut(
        messages=[message_out(m) for m in messages], older=window.older, newer=window.newer
    )


@router.get(
    "/messages/{message_id}",
    response=answers(MessageContextOut),
    summary="One message with up to N messages of its chat either side",
    **scope("messages.read"),
)
@requires("messages.read")
def message_context(request: HttpRequest, message_id: str, context: int = 5) -> MessageContextOut:
    if not 0 <= context <= 50:
        raise Invalid("context: between 0 and 50")
    message = message_get(public_id=message_id)
    window = chat_messages(
        chat=chat_get(chat_id=message.chat_id),
        around=message,
        limit=max(2 * context, 1),
        include_deleted=True,
    )
    ordered = messages_full([m.pk for m in window.messages])
    at = next(i for i, m in enumerate(ordered) if m.pk == message.pk)
    return MessageContextOut(
        message=message_out(ordered[at]),
        before=[message_out(m) for m in ordered[max(0, at - context) : at]],
        after=[message_out(m) for m in ordered[at + 1 : at + 1 + context]],
    )


@router.get(
    "/attachments/{attachment_id}",
    summary="An attachment's bytes (SHA-256 in X-Content-SHA256)",
    response={**answers(None), 413: ErrorOut},
    **scope("attachments.read"),
)
@requires("attachments.read")
def attachment_bytes(request: HttpRequest, attachment_id: str) -> HttpResponseBase:
    download = attachment_download(public_id=attachment_id)
    if (download.attachment.size or 0) > ATTACHMENT_MAX:
        raise TooLarge(
            f"attachment: larger than {ATTACHMENT_MAX // (1 << 20)} MB; download it from the page"
        )
    return attachment_response(download)
