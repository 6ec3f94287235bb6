"""The API shapes of tags and tag targets."""

from __future__ import annotations

import re
from typing import Annotated

from ninja import Schema
from pydantic import Field, model_validator

from archive.tags.models import Tag, TagTargetKind
from archive.web.schemas import BodyIn, Choice, TagName

# A target's key: a message's or a note's public id (msg_…, note_…), or a row id of at
# most 18 digits (any kind). `target_key_error` says the same in Python, with the
# service's message.
TARGET_KEY = "^(msg_|note_|[0-9]{1,18}$)"
TargetKind = Annotated[str, Choice("target kind", TagTargetKind.values)]
TargetKey = Annotated[
    str,
    Field(
        pattern=TARGET_KEY,
        description="the chat's or person's id, or the message's msg_… or the note's note_…"
        " id (or its row id)",
    ),
]


def target_key_error(kind: str, key: str) -> str | None:
    """What is wrong with `key` as the key of a `kind` target, or None. A chat or a person
    named by a msg_… key is well formed and simply does not exist (404, in the api)."""
    if key.startswith(("msg_", "note_")) or re.fullmatch("[0-9]{1,18}", key):
        return None
    return f"{kind}: not an id: {key[:40]!r}"


class TagOut(Schema):
    name: str
    colour: str


class TagCountsOut(Schema):
    """A tag and how many chats, people, messages and notes carry it."""

    name: str
    colour: str
    chats: int
    people: int
    messages: int
    notes: int


class TagTargetIn(BodyIn):
    """What a tag goes on: `kind` chat, person, message or note; `key` the chat's or
    person's id, or the message's `msg_…` or the note's `note_…` id."""

    kind: TargetKind
    key: Annotated[str, Field(json_schema_extra={"pattern": TARGET_KEY})]
    name: TagName

    model_config = {
        "json_schema_extra": {
            "examples": [
                {"kind": "message", "key": "msg_01JD8ZV3Q0V6Y1T9B2C4D5E6F7", "name": "follow-up"},
                {"kind": "chat", "key": "12", "name": "family"},
            ]
        }
    }

    @model_validator(mode="after")
    def _key(self) -> TagTargetIn:
        problem = target_key_error(self.kind, self.key)
        if problem:
            raise ValueError(problem)
        return self


class TagRenameIn(BodyIn):
    name: TagName
    new_name: TagName


class TagMergeIn(BodyIn):
    name: TagName
    into: TagName


class TagNameIn(BodyIn):
    name: TagName


class RemovedOut(Schema):
    removed: int


def tag_out(tag: Tag) -> TagOut:
    return TagOut(name=tag.name, colour=tag.colour)
