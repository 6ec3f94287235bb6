"""The message search selector: parse, compile, run, rank, page, and make snippets.

It is also the search's public face for the notes' and meetings' searches: they read the
messages' query language with its parser and compiler, build on `querykit.py`, and (the
notes) rank by its windows (`windows.py`), through the names re-exported below.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db import connection

from archive.connectors.registry import MAIL_PROVIDERS
from archive.conversations.domain import root_public_id
from archive.conversations.selectors import (
    ConversationView,
    conversation_by_public_id,
    conversations_of,
)
from archive.search import windows
from archive.search.analyzer import WORD
from archive.search.compiler import Compiled, compile_query
from archive.search.compiler import Plan as Plan
from archive.search.compiler import fts_string as fts_string
from archive.search.compiler import like_pattern as like_pattern
from archive.search.facets import FACET_WINDOW, Facets, message_facets
from archive.search.files import (
    FileMatch,
    file_filters,
    file_matches,
    search_reading,
    word_filters,
)
from archive.search.models import SavedSearch
from archive.search.parser import Filter, Group, Node, parse, to_json
from archive.search.parser import Term as Term
from archive.search.querykit import WORD_KINDS as WORD_KINDS
from archive.search.querykit import DocumentPage as DocumentPage
from archive.search.querykit import IndexCompiler as IndexCompiler
from archive.search.querykit import cursor_offset, offset_cursor
from archive.search.querykit import date_condition as date_condition
from archive.search.querykit import filters as filters
from archive.search.querykit import highlights as highlights
from archive.search.querykit import rank_match as rank_match
from archive.search.querykit import read_query as read_query
from archive.search.querykit import stem_alternatives as stem_alternatives
from archive.search.querykit import word_match as word_match
from archive.search.senders import FromMatch, resolved, sender_matches
from archive.search.suggest import Vocabulary as Vocabulary
from archive.search.suggest import did_you_mean
from archive.search.windows import Corpus as Corpus
from archive.store.models import Message
from archive.tags.selectors import tagged_via
from wirecat.errors import Invalid

if TYPE_CHECKING:
    from archive.search.everything import AllPage

SORTS = ("relevance", "newest", "oldest")
MAX_LIMIT = 100
SNIPPET_CHARS = 160
SUGGEST_BELOW = 3  # "did you mean" when a query finds fewer hits than this

# The messages' windows, for a search that ranks other documents by them (notes.search).
window_position = windows.position
window_page = windows.ranked_page


@dataclass(frozen=True)
class Segment:
    text: str
    hit: bool


@dataclass(frozen=True)
class MatchedIn:
    """The file a hit matched in (`content:`, `transcript:`): its attachment (att_…), its
    name, the page of the match (None for a text without pages) and a snippet of its text."""

    attachment: str
    file_name: str
    page: int | None
    snippet: tuple[Segment, ...]


@dataclass(frozen=True)
class Hit:
    message: Message
    score: float | None
    snippet: tuple[Segment, ...]
    # Why a `tag:` of the query holds for this hit: "urgent (chat)", "family (person)".
    tagged: tuple[str, ...] = ()
    matched_in: MatchedIn | None = None
    # The conversation the message is in (its chat's current build); None when not built.
    conversation: ConversationView | None = None


@dataclass
class SearchPage:
    query: str
    parsed: dict[str, Any] | None
    sort: str
    hits: list[Hit] = field(default_factory=list)
    next_cursor: str | None = None
    facets: Facets | None = None
    suggestion: str | None = None  # "did you mean": the query with known words instead
    # The stems index is behind (messages wait for their stems, or it is being rebuilt):
    # other forms of a word are found only in what it holds, the words index answers alone
    # for the rest.
    stems_behind: bool = False
    # Whom each `from:` of the query named (several: the owner picks one; none: says so).
    senders: list[FromMatch] = field(default_factory=list)


_CURSOR_MARK = "o"  # an offset cursor of this search (querykit.offset_cursor)


def message_search(
    *,
    query: str,
    sort: str = "relevance",
    cursor: str | None = None,
    limit: int = 20,
    facets: bool = False,
    mail: bool | None = None,
) -> SearchPage:
    """One page of the messages matching `query` (with facet counts when asked); `mail`
    True: of mail accounts only, False: of every other account (search all's two kinds).
    Raises Invalid (QuerySyntaxError for the query itself, with its position) and nothing
    else for any input."""
    if sort not in SORTS:
        raise Invalid(f"sort: one of {', '.join(SORTS)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise Invalid(f"limit: between 1 and {MAX_LIMIT}")
    tree = parse(query)
    page = SearchPage(query=query, parsed=to_json(tree), sort=sort)
    if tree is None:
        return page
    conversations_check(tree)
    # A search reads the stems index as it stands (the index job fills it, never a read).
    reading = search_reading()
    stems = reading.stems
    page.stems_behind = stems.behind
    # Whom each from: names, once: the statements below take those identity ids.
    page.senders = sender_matches(tree)
    # Words find messages by their files' text too, once any file has text.
    in_files = file_filters(tree)
    file_words = reading.file_text
    file_analyzer = reading.file_stems.analyzer
    if in_files or file_words:
        page.stems_behind = page.stems_behind or reading.file_stems.behind
    compiled = compile_query(
        tree,
        analyzer=stems.analyzer,
        senders=resolved(page.senders),
        file_analyzer=file_analyzer,
        file_words=file_words,
    )
    if mail is not None:
        _mail_scope(compiled, mail=mail)
    plan = compiled.plan
    if plan is not None and sort != "relevance":
        # Newest or oldest: candidates read whole when few, else a walk down the time index.
        after = windows.key(cursor)
        rows, past = windows.timed_page(compiled, plan, sort=sort, limit=limit, start=after)
        page.next_cursor = past.token() if past else None
        first_page = after is None
    elif plan is not None:
        # Relevance over index candidates, a window of the newest at a time (windows.py).
        corpus = windows.messages(compiled)
        start = windows.position(cursor, corpus)
        rows, following = windows.ranked_page(plan, corpus, limit=limit, start=start)
        page.next_cursor = following.token() if following else None
        first_page = start.first
    else:
        offset = cursor_offset(cursor, _CURSOR_MARK)
        sql, params = search_sql(compiled, sort=sort, limit=limit, offset=offset)
        with connection.cursor() as db:
            db.execute(sql, params)
            rows = db.fetchall()
        if len(rows) > limit:
            page.next_cursor = offset_cursor(offset + limit, _CURSOR_MARK)
        rows = rows[:limit]
        first_page = offset == 0
    related = Message.objects.select_related("chat", "chat__account", "sender").in_bulk(
        [row[0] for row in rows]
    )
    names = _tag_names(tree)
    via = tagged_via(names, list(related.values())) if names else {}
    snippets = {
        message_id: snippet(message.text, compiled.highlights)
        for message_id, message in related.items()
    }
    # Where a hit matched in a file: what `content:`/`transcript:` asked for, else, for a
    # hit whose own text shows no match, where its files hold the query's words.
    in_file = file_matches(in_files, list(related), file_analyzer)
    if file_words and (words := word_filters(tree)):
        unmatched = [
            message_id
            for message_id, parts in snippets.items()
            if message_id not in in_file and not any(part.hit for part in parts)
        ]
        in_file.update(file_matches(words, unmatched, file_analyzer))
    # Each hit's conversation, for the page of hits at once.
    conversations = conversations_of(list(related))
    for message_id, score in rows:
        message = related.get(message_id)
        if message is None:
            continue
        page.hits.append(
            Hit(
                message=message,
                score=float(score) if score is not None else None,
                snippet=snippets[message_id],
                tagged=tuple(via.get(message.pk, ())),
                matched_in=_matched_in(in_file.get(message_id)),
                conversation=conversations.get(message_id),
            )
        )
    if facets:
        if compiled.plan is not None:
            sample = windows.facet_sample(compiled, compiled.plan, FACET_WINDOW)
            page.facets = message_facets(compiled, sample, size=FACET_WINDOW)
        else:
            page.facets = message_facets(compiled)
    if first_page and len(page.hits) < SUGGEST_BELOW:
        page.suggestion = did_you_mean(query, tree)
    return page


def _mail_scope(compiled: Compiled, *, mail: bool) -> None:
    """Narrow `compiled` to the messages of mail accounts (`mail`), or of every other
    account: one more condition, over the accounts' index (for mail, a scope a windowed
    search may scan by, as a `source:` is)."""
    providers = sorted(MAIL_PROVIDERS)
    marks = ",".join("%s" for _ in providers)
    sql = (
        f"(m.account_id {'' if mail else 'NOT '}IN (SELECT a.id FROM archive_account AS a"
        f" WHERE a.provider IN ({marks})))"
    )
    compiled.where = f"({compiled.where}) AND {sql}"
    compiled.params = [*compiled.params, *providers]
    plan = compiled.plan
    if plan is None:
        return
    if mail:
        plan.scope = f"{plan.scope} AND {sql}" if plan.scope else sql
        plan.scope_params = [*plan.scope_params, *providers]
    else:
        plan.rest = f"({plan.rest}) AND {sql}"
        plan.rest_params = [*plan.rest_params, *providers]


def conversations_check(tree: Node) -> None:
    """Invalid for a `conv:` naming no conversation: a message id never stored, or a chat
    whose conversations are not built yet (a sentence for each, not an empty page)."""
    for found in filters(tree):
        if found.name != "conv" or conversation_by_public_id(found.value) is not None:
            continue
        root = root_public_id(found.value) or ""
        if Message.objects.filter(public_id=root).exists():
            raise Invalid(
                f"conv:{found.value}: its chat's conversations are not built yet"
                " (they are built after an import or a sync; `wirecat conversations build`)"
            )
        raise Invalid(f"conv:{found.value}: no conversation has this id")


def _matched_in(found: FileMatch | None) -> MatchedIn | None:
    if found is None:
        return None
    # A file's lines and pages read as one text in a snippet (a page break is a space).
    text = " ".join(found.text.split())
    return MatchedIn(
        attachment=found.attachment,
        file_name=found.file_name,
        page=found.page,
        snippet=snippet(text, list(found.patterns)),
    )


def _tag_names(node: Node) -> list[str]:
    """The tags the query asks for (not those it excludes)."""
    if isinstance(node, Filter):
        return [node.value] if node.name == "tag" and not node.negated else []
    if isinstance(node, Group) and not node.negated:
        return [name for item in node.items for name in _tag_names(item)]
    return []


def snippet(text: str, patterns: list[str], width: int = SNIPPET_CHARS) -> tuple[Segment, ...]:
    """A window of `text` around the first match of `patterns` (regular expressions, as
    the compiler makes them), as plain segments with the matches marked; the template
    escapes them, no HTML is made here."""
    if not patterns:
        return (Segment(text[:width] + ("…" if len(text) > width else ""), False),)
    pattern = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
    first = pattern.search(text)
    start = 0
    if first is not None and first.start() > width // 3:
        start = first.start() - width // 3
    window = text[start : start + width]
    segments: list[Segment] = []
    if start:
        segments.append(Segment("…", False))
    at = 0
    for found in pattern.finditer(window):
        if found.end() == found.start():
            continue
        if found.start() > at:
            segments.append(Segment(window[at : found.start()], False))
        segments.append(Segment(found.group(0), True))
        at = found.end()
    if at < len(window):
        segments.append(Segment(window[at:], False))
    if start + width < len(text):
        segments.append(Segment("…", False))
    return tuple(segments)


def saved_searches() -> list[SavedSearch]:
    """The owner's named searches, by name."""
    return list(SavedSearch.objects.exclude(name="").order_by("name"))


def recent_searches(limit: int = 8) -> list[SavedSearch]:
    """The most recently run searches of the recorded history."""
    return list(SavedSearch.objects.filter(name="").order_by("-last_run_at", "-pk")[:limit])


def search_sql(
    compiled: Compiled, *, sort: str, limit: int, offset: int
) -> tuple[str, list[str | int]]:
    """The hits' SQL: ids (and scores) of one page, in order."""
    params: list[str | int] = []
    sql: list[str] = []
    rank_match = compiled.rank_match if sort == "relevance" else None
    ranked = rank_match is not None
    if rank_match is not None:
        # Scored once, as a table: joined as a plain subquery, SQLite would run the
        # MATCH again for every candidate row.
        sql.append("WITH rank AS MATERIALIZED (SELECT rowid, bm25(message_fts) AS score")
        sql.append(" FROM message_fts WHERE message_fts MATCH %s) SELECT m.id, rank.score")
        sql.append(" FROM archive_message AS m LEFT JOIN rank ON rank.rowid = m.id")
        params.append(rank_match)
    else:
        sql.append("SELECT m.id, NULL FROM archive_message AS m")
    sql.append(f" WHERE {compiled.where}")
    params.extend(compiled.params)
    if not compiled.include_deleted:
        sql.append(" AND m.deleted_at IS NULL")
    if ranked:
        # Exact forms first (bm25 of the words index, lower is better), then what matched
        # by stem only; newer first among equals.
        sql.append(" ORDER BY rank.score IS NULL, rank.score, m.sent_at DESC, m.id DESC")
    elif sort == "oldest":
        sql.append(" ORDER BY m.sent_at, m.id")
    else:
        sql.append(" ORDER BY m.sent_at DESC, m.id DESC")
    sql.append(" LIMIT %s OFFSET %s")
    params.extend([limit + 1, offset])
    return "".join(sql), params


def message_ids_matching(query: str, *, most: int) -> list[int]:
    """The ids of every message `query` finds, oldest first; Invalid when more than `most`."""

    tree = parse(query)
    if tree is None:
        raise Invalid("query: empty; tag all results needs a search")
    reading = search_reading()
    compiled = compile_query(
        tree,
        analyzer=reading.stems.analyzer,
        file_analyzer=reading.file_stems.analyzer,
        file_words=reading.file_text,
    )
    deleted = "" if compiled.include_deleted else " AND m.deleted_at IS NULL"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.id FROM archive_message AS m WHERE {compiled.where}{deleted}"
            f" ORDER BY m.id LIMIT {int(most) + 1}",
            compiled.params,
        )
        ids = [int(row[0]) for row in cursor.fetchall()]
    if len(ids) > most:
        raise Invalid(f"query: matches more than {most:,} messages; narrow it to tag all results")
    return ids


def query_words(text: str) -> list[str]:
    """The words of `text` as the search analyzer cuts them (for searches outside FTS)."""
    return [str(word) for word in WORD.findall(text)]


def search_all(
    *,
    query: str,
    mode: str = "hybrid",
    kinds: Collection[str] | None = None,
    cursor: str | None = None,
    limit: int = 20,
    like: str | None = None,
) -> AllPage:
    """Search all (`archive.search.everything.search_all`) as other capabilities and the
    commands read it, through this public face. That module builds on this one's message
    search, so it is imported when first called."""
    from archive.search.everything import search_all as run

    return run(query=query, mode=mode, kinds=kinds, cursor=cursor, limit=limit, like=like)
