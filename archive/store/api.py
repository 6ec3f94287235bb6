"""The API for chats and messages: chat lists, a chat's messages, a message in context,
attachment bytes."""

from __future__ import annotations

from typing import Annotated

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from ninja import Query, Router
from pydantic import Field

from archive.conversations.selectors import conversation_message_ids, conversation_of
from archive.gateway.selectors import (
    agent_chat_check,
    agent_chat_get,
    agent_chat_scope,
    agent_message_get,
)
from archive.store.schemas import (
    ChatMessagesOut,
    ChatOut,
    ContextConversationOut,
    MessageContextOut,
    message_out,
)
from archive.store.selectors import chat_get, chat_list, chat_messages, messages_full
from archive.store.services.attachments import attachment_download, attachment_get
from archive.web.api import (
    answers,
    caller_agent,
    limit_query,
    offset_query,
    public_id,
    requires,
    row_id,
    scope,
    window,
)
from archive.web.files import attachment_response
from archive.web.schemas import Choice, ErrorOut, Format
from wirecat.errors import Conflict, TooLarge

ChatCursor = Annotated[
    str,
    Format("wirecat-chat-cursor"),
    Field(description="the `older` (for before) or `newer` (for after) cursor of a page"),
]

router = Router(tags=["messages"])

ATTACHMENT_MAX = 100 * 1024 * 1024  # larger files are refused here (413): use the page
AROUND = ("time", "conversation")  # what a message's context is drawn from
# Messages of a conversation given around one of them (the operation's description says 200).
CONVERSATION_CONTEXT_MAX = 200


@router.get(
    "/chats",
    response=answers(list[ChatOut]),
    summary="Chats, newest activity first",
    **scope("messages.read"),
)
@requires("messages.read")
def chats(
    request: HttpRequest, limit: int = limit_query(100, 500), offset: int = offset_query()
) -> list[ChatOut]:
    page = window(limit, offset, 500)
    rows = chat_list(sort="recent")  # the Chats page's list, in its order
    rows = rows.filter(agent_chat_scope(caller_agent(request)))  # within the agent's limits
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
    chat_id: int = row_id("chat"),
    before: ChatCursor | None = None,
    after: ChatCursor | None = None,
    limit: int = limit_query(50, 200),
    deleted: bool = False,
) -> ChatMessagesOut:
    """`before`/`after` are the `older`/`newer` cursors of a previous page."""
    window = chat_messages(
        chat=agent_chat_get(agent=caller_agent(request), chat_id=chat_id),
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
    summary="One message with up to N messages of its chat either side, or its conversation",
    **scope("messages.read"),
)
@requires("messages.read")
def message_context(
    request: HttpRequest,
    message_id: str = public_id("msg", "message"),
    context: int = Query(5, ge=0, le=50, description="messages either side, 0 to 50"),
    around: Annotated[str, Choice("around", AROUND)] = Query(
        "time", description="time: the chat's messages either side; conversation: its thread's"
    ),
) -> MessageContextOut:
    """`around=time` (the default): up to `context` messages of the chat either side, deleted
    ones included. `around=conversation`: the messages of the conversation the message is
    in (its chat's current build, deleted ones left out), the 200 closest to it in the
    conversation's order at most (`conversation.complete` says whether that is all of
    them); `context` is not used. 409 when the message is in no conversation yet (its
    chat's conversations are not built, or it was deleted): ask again after the build, or
    with `around=time`."""
    message = agent_message_get(agent=caller_agent(request), public_id=message_id)
    if around == "conversation":
        return _conversation_context(message.pk)
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


def _conversation_context(message_id: int) -> MessageContextOut:
    """The message amid the messages of its conversation (at most the closest
    CONVERSATION_CONTEXT_MAX); Conflict when it is in none."""
    found = conversation_of(message_id=message_id)
    members = conversation_message_ids(found.id) if found is not None else []
    if found is None or message_id not in members:
        raise Conflict(
            "this message is in no conversation yet: its chat's conversations are not built"
            " (or it was deleted); ask again after they are, or with around=time"
        )
    at = members.index(message_id)
    start = max(0, min(at - CONVERSATION_CONTEXT_MAX // 2, len(members) - CONVERSATION_CONTEXT_MAX))
    shown = members[start : start + CONVERSATION_CONTEXT_MAX]
    ordered = messages_full(shown)
    at = next(i for i, m in enumerate(ordered) if m.pk == message_id)
    return MessageContextOut(
        message=message_out(ordered[at]),
        before=[message_out(m) for m in ordered[:at]],
        after=[message_out(m) for m in ordered[at + 1 :]],
        around="conversation",
        conversation=ContextConversationOut(
            id=found.public_id,
            title=found.title,
            message_count=found.message_count,
            complete=len(shown) == len(members),
        ),
    )


BYTES = {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
BYTES_HEADERS = {
    "X-Content-SHA256": {
        "description": "the SHA-256 of the whole file's bytes, in hex",
        "required": True,
        "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    },
    "Content-Disposition": {
        "description": "attachment, with the file's name",
        "required": True,
        "schema": {"type": "string", "pattern": "^attachment"},
    },
    "Accept-Ranges": {
        "description": "bytes: one byte range can be asked for with `Range`",
        "required": True,
        "schema": {"type": "string", "enum": ["bytes"]},
    },
}


def _content_range(description: str, pattern: str) -> dict[str, object]:
    return {
        "description": description,
        "required": True,
        "schema": {"type": "string", "pattern": pattern},
    }


@router.get(
    "/attachments/{attachment_id}",
    summary="An attachment's bytes (SHA-256 in X-Content-SHA256)",
    description=(
        "The whole file (200), or one byte range of it when the request carries "
        "`Range: bytes=first-last`, `bytes=first-` or `bytes=-suffix` (206, with "
        "`Content-Range`); a range starting past the end is 416. Several ranges or a "
        "malformed `Range` get the whole file; so does an `If-Range` other than the ETag "
        "sent (the bytes' SHA-256, quoted)."
    ),
    response={**answers(None), 206: None, 413: ErrorOut, 416: ErrorOut},
    **scope(
        "attachments.read",
        responses={
            200: {"content": BYTES, "headers": BYTES_HEADERS},
            206: {
                "description": "Partial Content: the byte range asked for",
                "content": BYTES,
                "headers": {
                    **BYTES_HEADERS,
                    "Content-Range": _content_range(
                        "the range sent and the file's size", r"^bytes \d+-\d+/\d+$"
                    ),
                },
            },
            416: {
                "description": "Range Not Satisfiable: the range starts past the end",
                "headers": {"Content-Range": _content_range("the file's size", r"^bytes \*/\d+$")},
            },
        },
    ),
)
@requires("attachments.read")
def attachment_bytes(
    request: HttpRequest, attachment_id: str = public_id("att", "attachment")
) -> HttpResponseBase:
    chat = attachment_get(public_id=attachment_id).message.chat  # within the agent's limits
    agent_chat_check(caller_agent(request), chat, f"attachment {attachment_id!r}")
    download = attachment_download(public_id=attachment_id)
    if (download.attachment.size or 0) > ATTACHMENT_MAX:
        raise TooLarge(
            f"attachment: larger than {ATTACHMENT_MAX // (1 << 20)} MB; download it from the page"
        )
    return attachment_response(request, download)
