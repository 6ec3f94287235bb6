"""The API shapes of unread pages, read marks, the changes feed and sends."""

from __future__ import annotations

from typing import Annotated, Any

from ninja import Schema
from pydantic import Field, model_validator

from archive.gateway.services.agents import MARK_MAX
from archive.gateway.services.sends import TEXT_MAX
from archive.store.schemas import MessageOut
from archive.web.schemas import At, BodyIn, Id, Text


class UnreadOut(Schema):
    messages: list[MessageOut]
    next_cursor: str | None


class MarkReadIn(BodyIn):
    """Exactly one of: `ids` (msg_…, 1 to 1,000), `up_to` (msg_…: everything stored up
    to it), `chat_id` (the whole chat as it is now). An empty `ids` or a null counts as
    not given."""

    ids: Annotated[list[str], Field(max_length=MARK_MAX)] = []
    up_to: str | None = None
    chat_id: Id | None = None

    model_config = {
        "json_schema_extra": {
            # Exactly one given: each branch holds when its field is given (present,
            # not null, and for `ids` not empty), and `oneOf` wants one branch only.
            "oneOf": [
                {"required": ["ids"], "properties": {"ids": {"minItems": 1}}},
                {"required": ["up_to"], "properties": {"up_to": {"type": "string"}}},
                {"required": ["chat_id"], "properties": {"chat_id": {"type": "integer"}}},
            ],
            "examples": [
                {"ids": ["msg_01JD8ZV3Q0V6Y1T9B2C4D5E6F7"]},
                {"up_to": "msg_01JD8ZV3Q0V6Y1T9B2C4D5E6F7"},
                {"chat_id": 12},
            ],
        }
    }

    @model_validator(mode="after")
    def _exactly_one(self) -> Any:
        if sum([bool(self.ids), self.up_to is not None, self.chat_id is not None]) != 1:
            raise ValueError("mark_read: give exactly one of ids, up_to, chat_id")
        return self


class MarkReadOut(Schema):
    marked: int
    unread_first: str | None  # msg_… of the oldest message still unread


class ChangeOut(Schema):
    """One change: message.added, message.edited, message.tombstoned, messages.imported,
    tag.added, tag.removed, send.status, note.created, note.updated, note.deleted.
    `message` is null when the message has been purged since. `note` is the note's id
    (note_…) for a note's change (a deleted note's too) and for a tag on a note; null
    otherwise. A messages.imported row stands for the new messages of one chat
    (`chat_id`) that one quiet batch (an import, the sync's repair pass) stored: `count`
    of them, from `message` (the first) to `last_message` (the last), null for other
    kinds; `GET /api/changes/{seq}/messages` lists them."""

    seq: int
    kind: str
    at: At
    message: str | None
    chat_id: int | None
    tag: str | None
    target_kind: str | None
    target_id: int | None
    note: str | None = None
    last_message: str | None = None
    count: int | None = None


class ChangesOut(Schema):
    changes: list[ChangeOut]
    cursor: str  # poll again with it; it never skips a change


class ImportedMessagesOut(Schema):
    messages: list[MessageOut]  # in the order they were stored
    next_cursor: str | None


class SendIn(BodyIn):
    """Send `text` to chat `chat_id` of account `account_id` (ids from /chats), optionally
    as a reply to a message (msg_…)."""

    account_id: Id
    chat_id: Id
    text: Annotated[str, Text("text", most=TEXT_MAX)]
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
    at: At
