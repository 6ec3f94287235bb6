"""The API shapes of people, their identities and suggested links."""

from __future__ import annotations

from datetime import datetime

from ninja import Schema

from archive.tags.schemas import TagOut


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
