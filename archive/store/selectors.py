"""Reading the store: chat lists, a chat's messages by cursor, one message."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, Prefetch, Q, QuerySet

from archive.store.models import Attachment, Chat, Message
from wirecat.errors import Invalid, NotFound

PAGE_SIZE = 50


CHAT_SORTS = {
    "recent": ("-last_message_at", "-id"),
    "oldest": ("last_message_at", "id"),
    "title": ("title", "id"),
    "messages": ("-message_count", "-id"),
}


def chat_list(*, sort: str = "recent") -> QuerySet[Chat]:
    order = CHAT_SORTS.get(sort, CHAT_SORTS["recent"])
    qs = Chat.objects.select_related("account")
    if order[0] == "-last_message_at":  # chats without messages go last
        return qs.order_by(F("last_message_at").desc(nulls_last=True), "-id")
    return qs.order_by(*order)


def recent_messages(*, limit: int = 10) -> list[Message]:
    return list(
        Message.objects.visible()
        .select_related("chat", "sender")
        .order_by("-sent_at", "-id")[:limit]
    )


def chat_get(*, chat_id: int) -> Chat:
    chat = Chat.objects.select_related("account").filter(pk=chat_id).first()
    if chat is None:
        raise NotFound(f"chat {chat_id} does not exist")
    return chat


def message_get(*, public_id: str) -> Message:
    message = Message.objects.select_related("chat").filter(public_id=public_id).first()
    if message is None:
        raise NotFound(f"message {public_id!r} does not exist")
    return message


# --- cursors over (sent_at, id) ------------------------------------------------------------


def encode_cursor(message: Message) -> str:
    raw = json.dumps([message.sent_at.isoformat(), message.pk]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        sent_at_raw, pk = json.loads(base64.urlsafe_b64decode(padded.encode()))
        sent_at = datetime.fromisoformat(sent_at_raw)
        if sent_at.tzinfo is None or not isinstance(pk, int) or not 0 <= pk < 2**62:
            raise ValueError("bad cursor")
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise Invalid(f"not a valid page cursor: {cursor[:40]!r}") from exc
    return sent_at, pk


@dataclass(frozen=True)
class MessageWindow:
    messages: list[Message]
    older: str | None  # cursor to fetch the messages before the first one
    newer: str | None  # cursor to fetch the messages after the last one
    focus: Message | None = None


def _window_queryset(chat: Chat, include_deleted: bool) -> QuerySet[Message]:
    qs = (
        Message.objects.filter(chat=chat)
        .select_related("sender", "reply_to", "reply_to__sender")
        .prefetch_related(Prefetch("attachments", queryset=Attachment.objects.order_by("id")))
    )
    return qs if include_deleted else qs.visible()


def _before(
    qs: QuerySet[Message], sent_at: datetime, pk: int, limit: int
) -> tuple[list[Message], bool]:
    rows = list(
        qs.filter(Q(sent_at__lt=sent_at) | Q(sent_at=sent_at, id__lt=pk)).order_by(
            "-sent_at", "-id"
        )[: limit + 1]
    )
    more = len(rows) > limit
    return list(reversed(rows[:limit])), more


def _after(
    qs: QuerySet[Message], sent_at: datetime, pk: int, limit: int
) -> tuple[list[Message], bool]:
    rows = list(
        qs.filter(Q(sent_at__gt=sent_at) | Q(sent_at=sent_at, id__gt=pk)).order_by("sent_at", "id")[
            : limit + 1
        ]
    )
    return rows[:limit], len(rows) > limit


def chat_messages(
    *,
    chat: Chat,
    before: str | None = None,
    after: str | None = None,
    around: Message | None = None,
    limit: int = PAGE_SIZE,
    include_deleted: bool = False,
) -> MessageWindow:
    """A window of a chat's messages in time order: the newest by default, or the page
    before/after a cursor, or centred on one message (a permalink)."""
    limit = max(1, min(limit, 200))
    qs = _window_queryset(chat, include_deleted)
    if around is not None:
        if around.chat_id != chat.pk:
            raise NotFound("that message is not in this chat")
        half = limit // 2
        older_rows, more_older = _before(qs, around.sent_at, around.pk, half)
        newer_rows, more_newer = _after(qs, around.sent_at, around.pk, half)
        focus = qs.filter(pk=around.pk).first() or around
        rows = [*older_rows, focus, *newer_rows]
        return MessageWindow(
            messages=rows,
            older=encode_cursor(rows[0]) if more_older else None,
            newer=encode_cursor(rows[-1]) if more_newer else None,
            focus=focus,
        )
    if after is not None:
        rows, more = _after(qs, *decode_cursor(after), limit)
        return MessageWindow(
            messages=rows,
            older=encode_cursor(rows[0]) if rows else None,
            newer=encode_cursor(rows[-1]) if rows and more else None,
        )
    if before is not None:
        rows, more = _before(qs, *decode_cursor(before), limit)
        return MessageWindow(
            messages=rows,
            older=encode_cursor(rows[0]) if rows and more else None,
            newer=encode_cursor(rows[-1]) if rows else None,
        )
    rows = list(qs.order_by("-sent_at", "-id")[: limit + 1])
    more = len(rows) > limit
    rows = list(reversed(rows[:limit]))
    return MessageWindow(
        messages=rows, older=encode_cursor(rows[0]) if rows and more else None, newer=None
    )


def messages_full(ids: list[int]) -> list[Message]:
    """Messages with what message_out reads, in the order of `ids`, in four queries."""
    by_id = (
        Message.objects.select_related("chat", "chat__account", "sender", "reply_to")
        .prefetch_related(Prefetch("attachments", queryset=Attachment.objects.order_by("id")))
        .in_bulk(ids)
    )
    return [by_id[i] for i in ids if i in by_id]
