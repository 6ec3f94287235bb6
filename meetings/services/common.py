"""What the meetings services share: the bounded batch size, the actor check."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

from wirecat.errors import Invalid

# Rows per bulk INSERT/UPDATE and ids per IN (...) lookup: bounded statements whatever the
# size of a calendar (a 5-year weekly series with 10 attendees is 2,600 participants).
BATCH = 1000
ACTOR_MAX = 120

T = TypeVar("T")


def chunks(items: Sequence[T], size: int = BATCH) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def actor_clean(actor: str) -> str:
    """ "owner", "agent:<name>" or "system" (WireCat itself: an invitation read from a
    mail), as the archive's audit rows write them."""
    actor = str(actor or "").strip()
    if actor in ("owner", "system"):
        return actor
    if actor.startswith("agent:") and actor[len("agent:") :].strip() and len(actor) <= ACTOR_MAX:
        return actor
    raise Invalid(
        f'actor: "owner", "system" or "agent:<name>" (at most {ACTOR_MAX} characters), '
        f"not {actor!r}"
    )
