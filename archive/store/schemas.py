"""The API shapes of chats, messages and attachments."""

from __future__ import annotations

from typing import Literal

from ninja import Schema

from archive.store.models import Message
from archive.web.schemas import At


class AttachmentOut(Schema):
    id: str  # att_…
    file_name: str
    mime_type: str
    size: int | None
    sha256: str
    stored: bool  # false: the export held only the name (no bytes to download)


class MessageOut(Schema):
    """One message as agents see it."""

    id: str  # msg_…
    chat_id: int
    chat_title: str
    source: str
    sender: str | None
    sender_id: int | None  # the identity
    direction: str  # in | out
    kind: str
    sent_at: At
    # The export gave no usable date: `sent_at` is the best evidence there was, and
    # `date_estimated_from` says which (the mbox From line, a Received header, a neighbour).
    date_estimated: bool
    date_estimated_from: str | None
    edited_at: At | None
    deleted: bool
    text: str
    reply_to: str | None  # msg_… of the parent
    delivery_status: str
    attachments: list[AttachmentOut]


class ChatOut(Schema):
    id: int
    title: str
    kind: str
    source: str
    account: str
    message_count: int
    last_message_at: At | None


class ChatMessagesOut(Schema):
    messages: list[MessageOut]  # oldest first
    older: str | None  # cursor for the page before
    newer: str | None  # cursor for the page after


class ContextConversationOut(Schema):
    """The conversation a message's context was drawn from (`around=conversation`)."""

    id: str  # cnv_…
    title: str
    message_count: int  # its live messages when it was built
    complete: bool  # every one of them is in `before`, `message` and `after`


class MessageContextOut(Schema):
    message: MessageOut
    before: list[MessageOut]  # oldest first
    after: list[MessageOut]
    # time: the chat's messages either side; conversation: its thread's
    around: Literal["time", "conversation"] = "time"
    conversation: ContextConversationOut | None = None  # with around=conversation


def message_out(m: Message) -> MessageOut:
    """A message as the API shows it (read it with `messages_full` first)."""
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
        date_estimated=m.date_estimated,
        date_estimated_from=m.estimated_from,
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
