"""The API shapes of search hits, snippets and facets."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Schema


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
    # The stems index is behind (messages wait for their stems, or it is being rebuilt): a
    # word's other forms are found only in what it holds, the words as written everywhere.
    stems_behind: bool = False
