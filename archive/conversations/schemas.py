"""The API's shapes of the agent's batches: the messages a batch asks about with their
context and the rules' candidates, and the answers the agent gives back."""

from __future__ import annotations

from typing import Annotated, Literal

import annotated_types
from ninja import Schema
from pydantic import ConfigDict, Field

from archive.conversations.services.batches import BATCH_MAX, MODEL_MAX
from archive.web.schemas import At, BodyIn, Matching, Text

MessageId = Annotated[
    str,
    Matching("message id", "msg_[0-9A-Za-z]{1,40}", "msg_ and 1 to 40 letters or digits"),
]


class CandidateOut(Schema):
    """A parent the rules propose: `parent` a message of the batch or its context (null:
    the message starts a conversation), `confidence` 0 to 1, `rule` the strongest reason."""

    parent: str | None
    confidence: float
    rule: str


class ContextMessageOut(Schema):
    """A message as the agent reads it: its id, who sent it (display name, else handle;
    "" when unknown), when, its text, the parent the messenger recorded (`reply_to`; null
    when none), and whether it is a service message (a join, a topic change…)."""

    id: str  # msg_…
    sender: str
    sent_at: At
    text: str
    reply_to: str | None
    service: bool


class BatchMessageOut(ContextMessageOut):
    """A message of the batch: `asked` when the batch asks about it (the messenger recorded
    no reply), `answered` when a fresh answer of the agent already stands (a new one
    replaces it), and for an asked message the rules' `candidates`, best first."""

    asked: bool
    answered: bool
    candidates: list[CandidateOut]


class BatchOut(Schema):
    """A batch: its `id` (for the answers; it holds the chat, the first and last message
    and a hash of every live message between them), the chat, the batch's `messages` in
    the chat's order and up to 50 messages before them as `context`."""

    id: str  # bat_…
    chat_id: int
    messages: list[BatchMessageOut]
    context: list[ContextMessageOut]


class BatchNextOut(Schema):
    """The next batch, or null when no message of the chat needs the agent."""

    batch: BatchOut | None


class BatchStatusOut(Schema):
    """How many of the chat's live messages need the agent (no reply the messenger
    recorded, no fresh answer of the agent)."""

    chat_id: int
    waiting: int


class AnswerIn(BodyIn):
    """One answer: the `message` (asked about by the batch), its `parent` (a message of the
    batch or its context earlier than it; null: it starts a conversation) and the
    `confidence`, 0 to 1."""

    model_config = ConfigDict(strict=True, extra="forbid")

    message: MessageId
    parent: MessageId | None
    confidence: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


class AnswersIn(BodyIn):
    """The agent's answers to a batch, and the `model` that gave them."""

    model_config = ConfigDict(strict=True, extra="forbid")

    model: Annotated[str, Text("model", most=MODEL_MAX)]
    answers: Annotated[list[AnswerIn], annotated_types.Len(1, BATCH_MAX)]


class AnswersOut(Schema):
    """What was stored: the batch, the chat, how many answers, and what the chat's
    conversations need now (`rebuild`: the build job chooses the answers)."""

    batch: str
    chat_id: int
    stored: int
    need: Literal["nothing", "grown", "rebuild"]
