"""The API shapes of the statistics: what each answer holds, and the scope it was about."""

from __future__ import annotations

from datetime import date

from ninja import Schema

from archive.web.schemas import At


class ScopeOut(Schema):
    """What the numbers are about: local days `since` to `until` (both included) in
    `time_zone`, and the account, chat or person asked for (null: all)."""

    since: date
    until: date
    time_zone: str
    account: int | None
    chat: int | None
    person: int | None
    described: str


class BucketOut(Schema):
    start: date  # the bucket's first local day (a week starts on Monday)
    count: int


class VolumeOut(Schema):
    """Messages per day, week or month: every bucket in the range, zeros included; `sent`
    counts the owner's own."""

    scope: ScopeOut
    unit: str
    buckets: list[BucketOut]
    total: int
    sent: int


class HeatmapOut(Schema):
    """Messages by local weekday (rows Monday to Sunday) and hour (24 columns); messages
    with an estimated date are left out."""

    scope: ScopeOut
    cells: list[list[int]]
    peak: int
    total: int


class TopOut(Schema):
    kind: str  # "chat", "person" or "identity" (someone no person holds yet)
    id: int
    name: str
    count: int
    sent: int


class TopsOut(Schema):
    scope: ScopeOut
    chats: list[TopOut]
    people: list[TopOut]


class UnansweredOut(Schema):
    message_id: str  # the message's public id
    chat_id: int
    chat_title: str
    sender: str
    sent_at: At
    text: str
    why: str  # "direct message", "mention" or "question"
    waiting: int


class UnansweredPageOut(Schema):
    """The newest waiting message of each run the owner left unanswered, newest first;
    `total` runs in all; `within_hours` the time an answer had."""

    scope: ScopeOut
    within_hours: float
    total: int
    items: list[UnansweredOut]


class ResponseRowOut(Schema):
    kind: str  # "chat", "person" or "identity"
    id: int
    name: str
    count: int
    median: float | None  # seconds
    p90: float | None


class ResponsePointOut(Schema):
    start: date
    median: float | None
    p90: float | None
    count: int


class ResponsesOut(Schema):
    """The owner's response times in seconds: overall, per chat, per person, over time."""

    scope: ScopeOut
    count: int
    median: float | None
    p90: float | None
    by_chat: list[ResponseRowOut]
    by_person: list[ResponseRowOut]
    over_time: list[ResponsePointOut]
