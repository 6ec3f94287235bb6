"""The API shapes of people, their identities and suggested links."""

from __future__ import annotations

from typing import Annotated

from ninja import Schema
from pydantic import Field, model_validator

from archive.people.services import NAME_MAX
from archive.tags.schemas import TagOut
from archive.web.schemas import At, BodyIn, Id, Text

IDS_MAX = 1_000  # identities in one request


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
    last_at: At | None
    is_owner: bool = False  # the owner: their own accounts' identities are linked here


class IdentityCountOut(Schema):
    identity: IdentityOut
    messages: int
    last_at: At | None


class ChatCountOut(Schema):
    chat_id: int
    title: str
    source: str
    messages: int  # from this person
    last_at: At | None


class PersonDetailOut(Schema):
    id: int
    name: str
    is_owner: bool = False  # the owner: their own accounts' identities are linked here
    identities: list[IdentityCountOut]
    chats: list[ChatCountOut]
    tags: list[TagOut]
    messages: int


class PersonIn(BodyIn):
    name: Annotated[str, Text("name", most=NAME_MAX)]
    identity_ids: Annotated[list[Id], Field(max_length=IDS_MAX)] = []

    model_config = {
        "json_schema_extra": {"examples": [{"name": "Ann Lee", "identity_ids": [3, 17]}]}
    }


class IdentityIn(BodyIn):
    identity_id: Id


class SuggestionOut(Schema):
    """Identities on different providers sharing `key` (a phone number or an e-mail)."""

    key: str
    identities: list[IdentityOut]


class SuggestionIn(BodyIn):
    """Two or more different identities (ids from /people/suggestions) that share a phone
    number or an e-mail address."""

    identity_ids: Annotated[
        list[Id], Field(min_length=2, max_length=IDS_MAX, json_schema_extra={"uniqueItems": True})
    ]

    @model_validator(mode="after")
    def _different(self) -> SuggestionIn:
        if len(set(self.identity_ids)) != len(self.identity_ids):
            raise ValueError("identity_ids: each identity once")
        return self
