from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Schema


class StatsOut(Schema):
    """Counts of what the archive holds, and when a worker was last seen."""

    accounts: int
    chats: int
    messages: int
    attachments: int
    worker_seen_at: datetime | None
    worker_alive: bool


class SnippetPart(Schema):
    """A piece of the hit's text; `hit` marks the pieces that matched a search term."""

    text: str
    hit: bool


class SearchHitOut(Schema):
    """One message that matched, with where it is and a snippet around the match."""

    id: str  # the message's public id (msg_…)
    chat_id: int
    chat_title: str
    source: str
    sender: str | None
    direction: str
    sent_at: datetime
    deleted: bool
    text: str
    snippet: list[SnippetPart]
    score: float | None  # bm25 (lower is better) when sorted by relevance
    tagged: list[str] = []  # why a tag: of the query holds: "urgent (chat)", "family (person)"


class FacetValueOut(Schema):
    """How many matches fall in one chat, sender, source or year, and the operator that
    narrows the query to it (null when none can)."""

    label: str
    count: int
    operator: str | None


class FacetsOut(Schema):
    """Facet counts of the query (of a sample of its newest matches when `sampled`)."""

    chat: list[FacetValueOut]
    sender: list[FacetValueOut]
    source: list[FacetValueOut]
    year: list[FacetValueOut]
    sampled: bool


class SearchOut(Schema):
    """A page of search results, the query as parsed, facets, and the next page's cursor."""

    query: str
    sort: str
    parsed: dict[str, Any] | None
    hits: list[SearchHitOut]
    next_cursor: str | None
    facets: FacetsOut | None
    suggestion: str | None  # "did you mean": the query with known words, when it found little


class TagOut(Schema):
    name: str
    colour: str


class TagCountsOut(Schema):
    """A tag and how many chats, people and messages carry it."""

    name: str
    colour: str
    chats: int
    people: int
    messages: int


class TagTargetIn(Schema):
    """What a tag goes on: `kind` chat, person or message; `key` the chat's or person's id,
    or the message's `msg_…` id."""

    kind: str
    key: str
    name: str

    model_config = {
        "json_schema_extra": {
            "examples": [
                {"kind": "message", "key": "msg_01JD8ZV3Q0V6Y1T9B2C4D5E6F7", "name": "follow-up"},
                {"kind": "chat", "key": "12", "name": "family"},
            ]
        }
    }


class TagRenameIn(Schema):
    name: str
    new_name: str


class TagMergeIn(Schema):
    name: str
    into: str


class TagNameIn(Schema):
    name: str


class RemovedOut(Schema):
    removed: int


class IdentityOut(Schema):
    id: int
    provider: str
    external_id: str
    display_name: str
    handle: str
    phone: str
    email: str
    person_id: int | None


class PersonOut(Schema):
    id: int
    name: str
    identity_count: int
    last_at: datetime | None


class IdentityCountOut(Schema):
    identity: IdentityOut
    messages: int
    last_at: datetime | None


class ChatCountOut(Schema):
    chat_id: int
    title: str
    source: str
    messages: int  # from this person
    last_at: datetime | None


class PersonDetailOut(Schema):
    id: int
    name: str
    identities: list[IdentityCountOut]
    chats: list[ChatCountOut]
    tags: list[TagOut]
    messages: int


class PersonIn(Schema):
    name: str
    identity_ids: list[int] = []

    model_config = {
        "json_schema_extra": {"examples": [{"name": "Ann Lee", "identity_ids": [3, 17]}]}
    }


class IdentityIn(Schema):
    identity_id: int


class SuggestionOut(Schema):
    """Identities on different providers sharing `key` (a phone number or an e-mail)."""

    key: str
    identities: list[IdentityOut]


class SuggestionIn(Schema):
    identity_ids: list[int]


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
    sent_at: datetime
    edited_at: datetime | None
    deleted: bool
    text: str
    reply_to: str | None  # msg_… of the parent
    delivery_status: str
    attachments: list[AttachmentOut]


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


class ChatOut(Schema):
    id: int
    title: str
    kind: str
    source: str
    account: str
    message_count: int
    last_message_at: datetime | None


class ChatMessagesOut(Schema):
    messages: list[MessageOut]  # oldest first
    older: str | None  # cursor for the page before
    newer: str | None  # cursor for the page after


class MessageContextOut(Schema):
    message: MessageOut
    before: list[MessageOut]  # oldest first
    after: list[MessageOut]


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


class ErrorOut(Schema):
    """Every error: `error` (the kind: Invalid, NotFound, Forbidden, Conflict,
    Unauthorized, RateLimited, TooLarge, …) and `detail` (what was wrong and where).
    A query syntax error adds `position`; a refused send adds `send_id` and `rule`."""

    error: str
    detail: str
    position: int | None = None
    send_id: str | None = None
    rule: str | None = None
