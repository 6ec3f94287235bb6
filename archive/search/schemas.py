"""The API shapes of search hits, snippets and facets."""

from __future__ import annotations

from typing import Annotated, Any

from ninja import Schema

from archive.search.everything import KINDS, MODES
from archive.web.schemas import At, Choice


class SnippetPart(Schema):
    """A piece of the hit's text; `hit` marks the pieces that matched a search term."""

    text: str
    hit: bool


class MatchedInOut(Schema):
    """The file a hit matched in (`content:`, `transcript:`): its attachment, its name, the
    page of the first match (null for a text without pages) and a snippet of its text."""

    attachment: str  # the attachment's public id (att_…)
    file_name: str
    page: int | None
    snippet: list[SnippetPart]


class HitConversationOut(Schema):
    """The conversation a hit is in (its chat's current build): its reference
    (`conversation:<id>`), its title and how many messages it holds."""

    id: str  # cnv_…: `conv:<id>` narrows a search to it
    title: str
    message_count: int


class SearchHitOut(Schema):
    """One message that matched, with where it is and a snippet around the match."""

    id: str  # the message's public id (msg_…)
    chat_id: int
    chat_title: str
    source: str
    sender: str | None
    direction: str
    sent_at: At
    date_estimated: bool  # `sent_at` is an estimate (the message says from what)
    deleted: bool
    text: str
    snippet: list[SnippetPart]
    score: float | None  # bm25 (lower is better) when sorted by relevance
    tagged: list[str] = []  # why a tag: of the query holds: "urgent (chat)", "family (person)"
    matched_in: MatchedInOut | None = None  # the file it matched in, for content:/transcript:
    # Its conversation; null while its chat's conversations are not built.
    conversation: HitConversationOut | None = None


class FacetValueOut(Schema):
    """How many matches fall in one chat, sender, source or year, and the operator that
    narrows the query to it (null when none can)."""

    label: str
    count: int
    operator: str | None


class FacetsOut(Schema):
    """Facet counts of the query (of a sample of its newest matches when `sampled`), and
    how many messages match: `total` when every match was counted; when `sampled`, at
    least `counted`, and `estimate` about how many in all (null when it cannot be told)."""

    chat: list[FacetValueOut]
    sender: list[FacetValueOut]
    source: list[FacetValueOut]
    year: list[FacetValueOut]
    sampled: bool
    counted: int = 0  # the matches the counts cover
    total: int | None = None  # every match, when all were counted (not `sampled`)
    estimate: int | None = None  # about how many match, when `sampled` from the newest


class FromSenderOut(Schema):
    """One sender a `from:` matched: a person (all their identities) or an identity no
    person holds; `operator` (a quoted `from:`) names just them."""

    label: str
    person_id: int | None
    identity_ids: list[int]
    operator: str | None


class FromMatchOut(Schema):
    """Whom one `from:` of the query named: with several, the hits are from all of them;
    with none, it matches nothing (docs/search.md)."""

    operator: str  # the `from:` as the query has it
    senders: list[FromSenderOut]
    more: int  # matched beyond the senders listed


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
    senders: list[FromMatchOut] = []  # whom each `from:` named (not `from:me`)


# --- search all -----------------------------------------------------------------------------

AllKind = Annotated[str, Choice("kind", KINDS)]


class AllItemOut(Schema):
    """One thing search all found: its kind, its typed reference (`message:msg_…`,
    `note:note_…`, `meeting:mtg_…`, `conversation:cnv_…`, `attachment:att_…`), what it is
    called, a snippet (the words that matched marked; a meaning hit shows the start of its
    text), when it was, why it matched, its fused score (higher is better), the owner's
    page of it, and for a meeting found in its transcript the moment (ms from its start)."""

    kind: AllKind
    ref: str
    title: str
    snippet: list[SnippetPart]
    when: At | None
    why: list[Annotated[str, Choice("why", ("words", "meaning"))]]
    score: float
    url: str
    at_ms: int | None = None


class SearchAllOut(Schema):
    """A page of search all: the items best first by fused rank, the next page's cursor,
    per kind how many were found (`capped`: its list was full, so more may match), the
    kinds (or `kind:meaning`, one side of a hybrid) that could not answer and why, and how
    many meaning hits were left out because their source changed since it was indexed."""

    query: str
    mode: Annotated[str, Choice("mode", MODES)]
    kinds: list[AllKind]
    like: str | None  # "more like this": the reference the search started from
    items: list[AllItemOut]
    next_cursor: str | None
    counts: dict[str, int]
    capped: dict[str, bool]
    skipped: dict[str, str]
    stale: int
