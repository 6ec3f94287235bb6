"""The records the conversations work with: a message as the rules see it, the rules'
candidates, a message's chosen parent, and the fingerprint that tells an answer is stale."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

# A conversation's public id is its first message's, with this prefix instead of `msg_`.
CONVERSATION_PREFIX = "cnv_"
MESSAGE_PREFIX = "msg_"


@dataclass(frozen=True, slots=True)
class Line:
    """One live message of a chat, in the chat's order, as the rules read it."""

    pk: int
    sender: int  # the sender identity's id; 0 when unknown
    name: str  # how the sender is called (display name, else handle), "" when unknown
    at: float  # seconds since the epoch
    text: str
    service: bool = False  # a join, a topic change, a pinned message…
    reply_to: int | None = None  # the parent the messenger recorded (a live, earlier message)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A parent the rules propose: `parent` is a message id, or None (starts a
    conversation); `confidence` 0 to 1; `rule` names the strongest reason."""

    parent: int | None
    confidence: float
    rule: str


@dataclass(frozen=True, slots=True)
class Choice:
    """The parent a message was given and where the choice came from (reply, agent, rule)."""

    parent: int | None
    source: str
    confidence: float
    rule: str = ""


def message_print(*, text: str, sent_at: datetime, deleted: bool, sender_id: int | None) -> str:
    """A short fingerprint of what an answer about a message depended on: its text, time,
    sender and whether it is deleted. An answer whose message or parent no longer has the
    print it was given with is stale."""
    raw = f"{sent_at.isoformat()}\x1f{int(deleted)}\x1f{sender_id or 0}\x1f{text}"
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def conversation_public_id(root_public_id: str) -> str:
    """`cnv_…` from its first message's `msg_…`."""
    suffix = root_public_id.removeprefix(MESSAGE_PREFIX)
    return f"{CONVERSATION_PREFIX}{suffix}"


def root_public_id(conversation_id: str) -> str | None:
    """The first message's `msg_…` named by a `cnv_…`; None when it is not one."""
    if not conversation_id.startswith(CONVERSATION_PREFIX):
        return None
    suffix = conversation_id.removeprefix(CONVERSATION_PREFIX)
    if not suffix or len(suffix) > 40 or not suffix.isalnum():
        return None
    return f"{MESSAGE_PREFIX}{suffix}"
