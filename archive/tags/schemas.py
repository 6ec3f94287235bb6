"""The API shapes of tags and tag targets."""

from __future__ import annotations

from ninja import Schema

from archive.tags.models import Tag


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


def tag_out(tag: Tag) -> TagOut:
    return TagOut(name=tag.name, colour=tag.colour)
