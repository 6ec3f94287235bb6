"""The API shapes of unread pages, read marks, the changes feed and sends."""

from __future__ import annotations

from datetime import datetime

from ninja import Schema

from archive.store.schemas import MessageOut


class UnreadOut(Schema):
    messages: list[MessageOut]
    next_cursor: str | None


class MarkReadIn(Schema):
    """Exactly one of: `ids` (msg_…, at most 1,000), `up_to` (msg_…: everything stored up
    to it), `chat_id` (the whole chat as it is now)."""

    ids: list[str] = []
    up_to: str | None = None
    chat_id: int | None = None

    model_config = {
        "json_schema_extra": {
            "examples": [
                {"ids": ["msg_01JD8ZV3Q0V6Y1T9B2C4D5E6F7"]},
                {"up_to": "msg_01JD8ZV3Q0V6Y1T9B2C4D5E6F7"},
                {"chat_id": 12},
            ]
        }
    }


class MarkReadOut(Schema):
    marked: int
    unread_first: str | None  # msg_… of the oldest message still unread


class ChangeOut(Schema):
    """One change: message.added, message.edited, message.tombstoned, tag.added,
    tag.removed. `message` is null when the message has been purged since."""

    seq: int
    kind: str
    at: datetime
    message: str | None
    chat_id: int | None
    tag: str | None
    target_kind: str | None
    target_id: int | None


class ChangesOut(Schema):
    changes: list[ChangeOut]
    cursor: str  # poll again with it; it never skips a change


class SendIn(Schema):
    """Send `text` to chat `chat_id` of account `account_id` (ids from /chats), optionally
    as a reply to a message (msg_…)."""

    account_id: int
    chat_id: int
    text: str
    reply_to: str | None = None

    model_config = {
        "json_schema_extra": {
            "examples": [{"account_id": 1, "chat_id": 12, "text": "On my way", "reply_to": None}]
        }
    }


class SendOut(Schema):
    """A send and what became of it: awaiting (the owner decides), queued (on its way),
    sent, failed, rejected (by the owner) or refused (by the guard: `rule` says which)."""

    send_id: str
    status: str
    message_id: str | None
    rule: str | None
    error: str | None
    at: datetime
