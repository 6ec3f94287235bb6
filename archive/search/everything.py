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

How each list is made: messages and mail are the messages' search scoped to the accounts
the connectors' registry calls mail (or to the others); notes and meetings their own
searches (a meeting once, at its best line); conversations those of the best messages;
files the files' own search (`file_search.py`). The meaning side embeds the query's
positive words once (a query with operators is answered by words alone) and turns the
nearest chunks into things (`all_meaning.py`). The fused list is paged by offset; each
kind is counted over it. "More like this" (`like`) starts from one thing's text instead.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection

from archive.connectors.registry import MAIL_PROVIDERS
from archive.meaning.selectors import query_vector
from archive.search.all_meaning import (
    Found,
    Reference,
    anything_embedded,
    meaning_lists,
    message_found,
    reference,
)
from archive.search.file_search import file_text_search
from archive.search.parser import Node, QuerySyntaxError, parse
from archive.search.querykit import cursor_offset, filters, offset_cursor, positive_terms
from archive.search.selectors import SearchPage, Segment, message_search
from meetings.selectors import meeting_search
from notes.selectors import note_search
from wirecat.errors import Invalid

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


_CURSOR_MARK = "a"  # search all's offset cursors (querykit.offset_cursor)
WIDE = 100  # hits read of a search whose items are gathered from them (meetings, conversations)


def search_all(
    *,
    query: str,
    mode: str = "hybrid",
    kinds: Collection[str] | None = None,
    cursor: str | None = None,
    limit: int = 20,
    like: str | None = None,
) -> AllPage:
    """One page of everything `query` finds, by words, meaning or both (`mode`), of
    `kinds` (None: every kind), best first by fused rank. `like` ("more like this": a
    `message:`, `note:`, `meeting:` or `conversation:` reference) finds what is nearest in
    meaning to that thing instead, itself left out; the mode is then meaning and the query
    is not searched (it may be empty). Raises Invalid (QuerySyntaxError for the query
    itself; a sentence for a bad mode, kind, limit, cursor or reference) and nothing else
    for any input."""
    if mode not in MODES:
        raise Invalid(f"mode: one of {', '.join(MODES)}")
    wanted = _kinds(kinds)
    if not 1 <= limit <= MAX_LIMIT:
        raise Invalid(f"limit: between 1 and {MAX_LIMIT}")
    offset = cursor_offset(cursor, _CURSOR_MARK)
    tree = parse(query)
    start: Reference | None = None
    if like is not None and like.strip():
        start = reference(like)
        mode = "meaning"
    page = AllPage(query=query, mode=mode, kinds=wanted, like=start.ref if start else None)
    lists: list[tuple[str, list[Found]]] = []  # (side, ranked things)
    meaning_wanted = mode != "words" and (tree is not None or start is not None)
    beside: Future[tuple[list[list[Found]], AllPage]] | None = None
    if meaning_wanted and mode == "hybrid" and not connection.in_atomic_block:
        # Both sides: the meaning side (the model, the vector scan: both let go of the
        # GIL) runs on the other core while the words are searched. Not inside a
        # transaction, whose writes the other thread's connection would not see.
        scratch = AllPage(query=query, mode=mode, kinds=wanted)
        beside = _BESIDE.submit(_meaning, tree, start, wanted, scratch)
    if mode != "meaning" and tree is not None:
        stored = _stored(wanted)
        searched: dict[bool | None, SearchPage] = {}  # the message searches, run once each
        for kind in wanted:
            if not stored[kind]:
                page.skipped[kind] = _STORED[kind][1]
                continue
            found = _words(kind, query, page.skipped, searched)
            if found is not None:
                lists.append(("words", found))
    if beside is not None:
        found_lists, scratch = beside.result()
        page.skipped.update(scratch.skipped)
        page.stale += scratch.stale
        lists.extend(("meaning", found) for found in found_lists)
    elif meaning_wanted:
        lists.extend(("meaning", found) for found in _meaning(tree, start, wanted, page)[0])
    if start is not None:
        lists = [(side, [f for f in found if f.ref != start.ref]) for side, found in lists]
    items = _fused(lists)
    for kind in wanted:
        page.counts[kind] = sum(1 for item in items if item.kind == kind)
        page.capped[kind] = any(
            len(found) >= DEPTH for _, found in lists if found and found[0].kind == kind
        )
    page.items = items[offset : offset + limit]
    if offset + limit < len(items):
        page.next_cursor = offset_cursor(offset + limit, _CURSOR_MARK)
    return page


def _kinds(kinds: Collection[str] | None) -> tuple[str, ...]:
    """The kinds asked for, in KINDS' order (None or none: all); Invalid for another.
    A string is read as kinds separated by commas."""
    if isinstance(kinds, str):
        kinds = [part.strip() for part in kinds.split(",") if part.strip()]
    if not kinds:
        return KINDS
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown:
        raise Invalid(f"kinds: {unknown[0]!r} is not a kind; the kinds: {', '.join(KINDS)}")
    return tuple(kind for kind in KINDS if kind in kinds)


# --- fusion -------------------------------------------------------------------------------


def _fused(lists: list[tuple[str, list[Found]]]) -> list[Item]:
    """The lists' things fused by RRF, best first; each says which sides found it, and
    shows what its words' list gave (the words marked) before what its meaning's did."""
    ranked = [[found.ref for found in things] for _, things in lists]
    scores = rrf(ranked)
    first_seen: dict[str, int] = {}
    sides: dict[str, set[str]] = {}
    shown: dict[str, Found] = {}
    for index, (side, things) in enumerate(lists):
        for rank, found in enumerate(things):
            # Ties by the best rank any list gave, then by the list's order (KINDS, words
            # before meaning).
            seen = rank * len(lists) + index
            first_seen[found.ref] = min(first_seen.get(found.ref, seen), seen)
            sides.setdefault(found.ref, set()).add(side)
            # The words' lists come first: what they show (the words marked) wins.
            shown.setdefault(found.ref, found)
    return [
        Item(
            kind=shown[ref].kind,
            ref=ref,
            title=shown[ref].title,
            snippet=shown[ref].snippet,
            when=shown[ref].when,
            why=frozenset(sides[ref]),
            score=scores[ref],
            target=shown[ref].target,
            at_ms=shown[ref].at_ms,
        )
        for ref in fused_order(scores, first_seen)
    ]


# --- words --------------------------------------------------------------------------------


def _words(
    kind: str, query: str, skipped: dict[str, str], searched: dict[bool | None, SearchPage]
) -> list[Found] | None:
    """The kind's own search of `query`, its best DEPTH things; None (and the reason in
    `skipped`) when it cannot answer: an operator it lacks."""
    try:
        if kind in ("message", "mail"):
            return _messages(query, mail=kind == "mail", searched=searched)
        if kind == "conversation":
            return _conversations(query, searched)
        return _SEARCHES[kind](query)
    except QuerySyntaxError:
        raise
    except Invalid as refused:
        skipped[kind] = str(refused)
        return None


def _message_page(
    query: str, mail: bool | None, searched: dict[bool | None, SearchPage]
) -> SearchPage:
    """The message search of this scope (mail, not mail, both), WIDE hits, run once for the
    messages', mail's and conversations' lists alike."""
    if mail not in searched:
        searched[mail] = message_search(query=query, limit=WIDE, mail=mail)
    return searched[mail]


def _messages(query: str, *, mail: bool, searched: dict[bool | None, SearchPage]) -> list[Found]:
    kind = "mail" if mail else "message"
    page = _message_page(query, mail, searched)
    found: list[Found] = []
    for hit in page.hits[:DEPTH]:
        shown = hit.snippet
        if hit.matched_in is not None and not any(part.hit for part in shown):
            shown = hit.matched_in.snippet  # found by its file: where the file matched
        found.append(message_found(hit.message, kind, shown))
    return found


def _notes(query: str) -> list[Found]:
    page = note_search(query=query, limit=DEPTH)
    return [
        Found(
            kind="note",
            ref=f"note:{hit.note.public_id}",
            title=hit.note.title,
            snippet=hit.snippet,
            when=hit.note.updated_at,
            target=hit.note,
        )
        for hit in page.hits
    ]


def _meetings(query: str) -> list[Found]:
    """One thing per meeting, at its best line (or its title)."""
    page = meeting_search(query=query, limit=WIDE)
    found: dict[int, Found] = {}
    for hit in page.hits:
        if hit.meeting.pk in found:
            continue
        found[hit.meeting.pk] = Found(
            kind="meeting",
            ref=f"meeting:{hit.meeting.public_id}",
            title=hit.meeting.title,
            snippet=hit.snippet,
            when=hit.meeting.start,
            target=hit.meeting,
            at_ms=hit.start_ms,
        )
    return list(found.values())[:DEPTH]


def _conversations(query: str, searched: dict[bool | None, SearchPage]) -> list[Found]:
    """The conversations of the best messages, in the order their first message came,
    each shown by that message. The messages' and mail's searches of this search all serve
    when they ran (the All tab); else one search of every account."""
    pages = [searched[scope] for scope in (False, True) if scope in searched]
    hits = [hit for page in pages for hit in page.hits] or _message_page(query, None, searched).hits
    found: dict[str, Found] = {}
    for hit in hits:
        view = hit.conversation
        if view is None or view.public_id in found:
            continue
        found[view.public_id] = Found(
            kind="conversation",
            ref=f"conversation:{view.public_id}",
            title=view.title,
            snippet=hit.snippet,
            when=view.last_at,
            target=view,
        )
    return list(found.values())[:DEPTH]


def _files(query: str) -> list[Found]:
    return [
        Found(
            kind="file",
            ref=f"attachment:{hit.text.attachment.public_id}",
            title=hit.text.attachment.file_name,
            snippet=hit.snippet,
            when=hit.text.attachment.message.sent_at,
            target=hit.text,
        )
        for hit in file_text_search(query=query, limit=DEPTH)
    ]


_SEARCHES: dict[str, Callable[[str], list[Found]]] = {
    "note": _notes,
    "meeting": _meetings,
    "file": _files,
}
# Per kind: whether anything of it is stored, and what to say when not (one statement
# for every kind, `_stored`).
_STORED = {
    "message": (
        "SELECT 1 FROM archive_chat AS c JOIN archive_account AS a ON a.id = c.account_id"
        " WHERE c.message_count > 0 AND a.provider NOT IN ({mail})",
        "no messages stored",
    ),
    "mail": (
        "SELECT 1 FROM archive_chat AS c JOIN archive_account AS a ON a.id = c.account_id"
        " WHERE c.message_count > 0 AND a.provider IN ({mail})",
        "no mail stored",
    ),
    "note": ("SELECT 1 FROM notes_note", "no notes stored"),
    "meeting": ("SELECT 1 FROM meetings_meeting", "no meetings stored"),
    "conversation": (
        "SELECT 1 FROM archive_conversationstate WHERE current_id IS NOT NULL",
        "no conversations built yet (they are built after an import or a sync)",
    ),
    "file": (
        "SELECT 1 FROM archive_attachmenttext WHERE state = 'done'",
        "no file text stored (files are read after an import or a sync)",
    ),
}


def _stored(kinds: tuple[str, ...]) -> dict[str, bool]:
    """Whether anything of each kind is stored, in one statement."""
    providers = sorted(MAIL_PROVIDERS)
    mail = ",".join("%s" for _ in providers)
    parts: list[str] = []
    params: list[str] = []
    for kind in kinds:
        sql = _STORED[kind][0]
        parts.append(f"EXISTS ({sql.format(mail=mail)})")
        if "{mail}" in sql:
            params.extend(providers)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(parts)}", params)
        row = cursor.fetchone()
    return {kind: bool(value) for kind, value in zip(kinds, row, strict=True)}


# --- meaning ------------------------------------------------------------------------------


def _meaning(
    tree: Node | None, start: Reference | None, kinds: tuple[str, ...], page: AllPage
) -> tuple[list[list[Found]], AllPage]:
    """The meaning side's lists, one per kind that answered; the others' reasons in the
    page's `skipped` (under `kind:meaning` when words answer too), its stale hits counted."""

    def skip(kind: str, reason: str) -> None:
        page.skipped[kind if page.mode == "meaning" else f"{kind}:meaning"] = reason

    text = start.text if start is not None else _meaning_text(tree)
    operator = next(iter(filters(tree)), None) if tree is not None and start is None else None
    reason = None
    if operator is not None:
        name = _OPERATOR_NAMES.get(operator.name, operator.name)
        reason = f"meaning search reads words only; {name}: is answered by words"
    elif not text.strip():
        reason = "meaning search needs words to compare (this query only excludes)"
    elif not anything_embedded():
        reason = "nothing is embedded yet (`wirecat embeddings refresh`)"
    else:
        try:
            vector = start.vector() if start is not None else query_vector(text)
            answer = meaning_lists(
                vector, kinds, most=DEPTH, exclude=start.exclude if start is not None else ()
            )
        except Invalid as failed:  # the model's setting or package: words still answer
            reason = str(failed)
    if reason is not None:
        for kind in kinds:
            skip(kind, reason)
        return [], page
    page.stale += answer.stale
    for kind, reason in answer.skipped.items():
        skip(kind, reason)
    return [answer.lists[kind] for kind in kinds if answer.lists.get(kind)], page


# The parser's names of operators written otherwise (`in:` is "chat").
_OPERATOR_NAMES = {"chat": "in"}
# The thread a hybrid search's meaning side runs on (one: a web worker answers one request
# at a time; its own connection to the store stays open for the next).
_BESIDE = ThreadPoolExecutor(max_workers=1, thread_name_prefix="search-meaning")


def _meaning_text(tree: Node | None) -> str:
    """What the meaning side embeds of a query: its positive words and phrases."""
    if tree is None:
        return ""
    return " ".join(term.text for term in positive_terms(tree))
