"""Search all: every resource that can answer a query, each ranked its own way, merged by
reciprocal rank fusion (RRF), so no resource's scores are compared with another's.

The resources (kinds): messages (every messenger account but mail), mail (messages of mail
accounts), notes, meetings (titles, descriptions and transcripts), conversations, files
(the text of attachments). Each gives a ranked list by **words** (its own search, with the
one query language: the same parser and compiler as the messages' search) and, for the
kinds the meaning index holds, by **meaning** (the nearest chunks, `archive.meaning`).
`mode` picks words, meaning, or both fused (hybrid). A resource that cannot answer — an
operator it lacks, nothing stored, its index not ready — is listed in `skipped` with the
reason instead of failing the search.

Every item says why it matched (words, meaning or both) and carries a snippet.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from archive.search.selectors import Segment

KINDS = ("message", "mail", "note", "meeting", "conversation", "file")
KIND_LABELS = {
    "message": "Messages",
    "mail": "Mail",
    "note": "Notes",
    "meeting": "Meetings",
    "conversation": "Conversations",
    "file": "Files",
}
MODES = ("words", "meaning", "hybrid")
RRF_K = 60  # the usual constant: a list's first item scores 1/61, its tenth 1/70
DEPTH = 50  # items each list gives to the fusion
MAX_LIMIT = 50


def rrf(lists: Iterable[Sequence[str]], *, k: int = RRF_K) -> dict[str, float]:
    """Each key's fused score: the sum, over the lists holding it, of 1 / (k + its rank),
    ranks from 1. Lists are ranked lists of distinct keys; a key missing from a list adds
    nothing for it."""
    scores: dict[str, float] = {}
    for ranked in lists:
        for rank, key in enumerate(ranked, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return scores


def fused_order(scores: dict[str, float], first_seen: dict[str, int]) -> list[str]:
    """Keys by fused score, best first; ties by where they were first seen."""
    return sorted(scores, key=lambda key: (-scores[key], first_seen.get(key, 0)))


@dataclass(frozen=True)
class Item:
    """One thing found. `ref` is its typed reference (`message:msg_…`, `note:note_…`,
    `meeting:mtg_…`, `conversation:cnv_…`, `attachment:att_…`), unique across kinds."""

    kind: str
    ref: str
    title: str
    snippet: tuple[Segment, ...]
    when: datetime | None
    why: frozenset[str]  # {"words"}, {"meaning"} or both
    score: float  # the fused score (higher is better)
    # What the page draws it from: the Message, Note, Meeting (with `at_ms` for a
    # transcript's moment), ConversationView, or AttachmentText.
    target: Any = None
    at_ms: int | None = None


@dataclass
class AllPage:
    query: str
    mode: str
    kinds: tuple[str, ...]
    items: list[Item] = field(default_factory=list)
    next_cursor: str | None = None
    # Per kind: items found (at most DEPTH per list fused; `capped` when a list was full).
    counts: dict[str, int] = field(default_factory=dict)
    capped: dict[str, bool] = field(default_factory=dict)
    # Per kind (or "kind:meaning" for one side of a hybrid): why it gave nothing.
    skipped: dict[str, str] = field(default_factory=dict)
    stale: int = 0  # meaning hits left out: their source changed since it was indexed
    like: str | None = None  # "more like this": the reference the search started from
