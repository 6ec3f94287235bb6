"""The agent gateway's reading side: unread per agent, mark read, the changes feed, chats,
a chat's messages, one message in context, attachment bytes."""

from __future__ import annotations

from django.db.models import Prefetch
from django.http import FileResponse, HttpRequest
from django.http.response import HttpResponseBase
from ninja import Router

from archive.api_auth import agent_only, answers, requires, scope, window
from archive.blobs import blob_open
from archive.models import Attachment, Chat, Message
from archive.schemas import (
    AttachmentOut,
    ChangeOut,
    ChangesOut,
    ChatMessagesOut,
    ChatOut,
    ErrorOut,
    MarkReadIn,
    MarkReadOut,
    MessageContextOut,
    MessageOut,
    UnreadOut,
)
from archive.selectors.agents import changes_page, first_unread_id, unread_page
from archive.selectors.archive import chat_get, chat_messages, message_get
from archive.services.agents import mark_read
from archive.services.attachments import attachment_download
from wirecat.errors import Invalid, NotFound, TooLarge

router = Router(tags=["messages"])

ATTACHMENT_MAX = 100 * 1024 * 1024  # larger files are refused here (413): use the page


def message_out(m: Message) -> MessageOut:
    return MessageOut(
        id=m.public_id,
        chat_id=m.chat_id,
        chat_title=m.chat.title or m.chat.external_id,
        source=m.chat.account.provider,
        sender=str(m.sender) if m.sender else None,
        sender_id=m.sender_id,
        direction=m.direction,
        kind=m.kind,
        sent_at=m.sent_at,
        edited_at=m.edited_at,
        deleted=m.deleted_at is not None,
        text=m.text,
        reply_to=m.reply_to.public_id if m.reply_to_id and m.reply_to else None,
        delivery_status=m.delivery_status,
        attachments=[
            AttachmentOut(
                id=a.public_id,
                file_name=a.file_name,
                mime_type=a.mime_type,
                size=a.size,
                sha256=a.sha256,
                stored=bool(a.path),
            )
            for a in m.attachments.all()
        ],
    )


def _full(ids: list[int]) -> list[Message]:
    """Messages with what message_out reads, in the order of `ids`, in four queries."""
    by_id = (
        Message.objects.select_related("chat", "chat__account", "sender", "reply_to")
        .prefetch_related(Prefetch("attachments", queryset=Attachment.objects.order_by("id")))
        .in_bulk(ids)
    )
    return [by_id[i] for i in ids if i in by_id]


@router.get(
    "/messages/unread",
    response=answers(UnreadOut),
    summary="This agent's unread inbound messages, oldest first",
    **scope("messages.read"),
)
@requires("messages.read")
def unread(request: HttpRequest, cursor: str | None = None, limit: int = 50) -> UnreadOut:
    """Read state is the calling agent's own: never shared with other agents, never sent to
    any messenger. An agent starts with the history before its creation (or before its
    `since`) counted as read."""
    agent = agent_only(request, "unread")
    page = unread_page(agent=agent, cursor=cursor, limit=limit)
    messages = _full([m.pk for m in page.messages])
    return UnreadOut(messages=[message_out(m) for m in messages], next_cursor=page.next_cursor)


@router.post(
    "/messages/mark_read",
    response=answers(MarkReadOut),
    summary="Mark messages read for this agent: by ids, up to one, or a whole chat",
    **scope("messages.read"),
)
@requires("messages.read")
def mark_read_view(request: HttpRequest, body: MarkReadIn) -> MarkReadOut:
    agent = agent_only(request, "mark_read")
    marked = mark_read(agent=agent, ids=body.ids, up_to=body.up_to, chat_id=body.chat_id)
    agent.refresh_from_db(fields=["read_through"])
    first = first_unread_id(agent)
    public = None
    if first is not None:
        public = Message.objects.filter(pk=first).values_list("public_id", flat=True).first()
    return MarkReadOut(marked=marked, unread_first=public)


@router.get(
    "/changes",
    response=answers(ChangesOut),
    summary="What changed, in order, after a cursor (for agents that poll)",
    **scope("messages.read"),
)
@requires("messages.read")
def changes(request: HttpRequest, cursor: str | None = None, limit: int = 100) -> ChangesOut:
    page = changes_page(cursor=cursor, limit=limit)
    return ChangesOut(
        changes=[
            ChangeOut(
                seq=c.pk,
                kind=c.kind,
                at=c.at,
                message=page.public_ids.get(c.message_pk or 0),
                chat_id=c.chat_pk,
                tag=c.tag or None,
                target_kind=c.target_kind or None,
                target_id=c.target_id,
            )
            for c in page.changes
        ],
        cursor=page.cursor,
    )


@router.get(
    "/chats",
    response=answers(list[ChatOut]),
    summary="Chats, newest activity first",
    **scope("messages.read"),
)
@requires("messages.read")
def chats(request: HttpRequest, limit: int = 100, offset: int = 0) -> list[ChatOut]:
    page = window(limit, offset, 500)
    rows = Chat.objects.select_related("account").order_by("-last_message_at", "-id")
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
    messages = _full([m.pk for m in window.messages])
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
    ordered = _full([m.pk for m in window.messages])
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
    try:
        handle = blob_open(download.path)
    except Invalid as exc:
        raise NotFound(str(exc)) from exc
    response = FileResponse(
        handle, as_attachment=True, filename=download.name, content_type="application/octet-stream"
    )
    response["X-Content-SHA256"] = download.attachment.sha256
    response["X-Content-Type-Options"] = "nosniff"
    return response
