"""The notes search selector: the owner's notes, by their titles and bodies.

The query language is the messages' (`archive.search`'s parser, read through its public
face), and a query means the same thing here as there: words (each word also by its stems,
the messages' analyzer), "phrases", prefix*, *infix* and terms with punctuation (substrings,
by a trigram index made as the messages' is), -excluded, OR, parentheses, `exact:` (the form
as written, never a stem), and the operators a note can answer: `tag:` (a tag on the note,
its name in any case), `in:` (a folder, by its path or name, with the folders inside it),
`before:`, `after:`, `on:` (the note's last change, the dates read by the messages' own
compiler). Operators only a message has (`from:`, `has:`, `is:`, `source:`, `filename:`)
are refused with a sentence saying so, never answered with nothing.

Hits are ranked as the messages' are: by bm25 of the words index (a title counts twice the
body), exact forms above stem-only ones (those by the stems index's bm25), then the most
recently changed note first. Candidates come from the indexes a window at a time, the newest
`WINDOW` matches of each (by rowid, the order notes were written in), and are ranked within
their window: a query matching fewer notes is ranked over every match, and a word in most
notes costs one window, not a bm25 score for each of its matches. `tag:`, `in:` and dates
that hold few notes narrow the scan itself. The windows are the messages' own
(`archive/search/windows.py`), run over the notes' table and indexes (`_corpus`). A query
with no word to rank by (filters, exclusions, substrings) lists its notes most recently
changed first. Snippets are the messages' own (`archive.search.selectors.snippet`); a first
page with few hits offers "did you mean" from the words index's vocabulary
(`note_words_vocab`). The pieces every search over the query language shares (cursors, the
operators refused, MATCH strings, the tree's SQL) are `archive/search/querykit.py`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection

from archive.search.selectors import (
    SUGGEST_BELOW,
    WORD_KINDS,
    Corpus,
    DocumentPage,
    Filter,
    Group,
    IndexCompiler,
    Node,
    Plan,
    Term,
    Vocabulary,
    cursor_offset,
    date_condition,
    did_you_mean,
    filters,
    fts_string,
    highlights,
    like_pattern,
    offset_cursor,
    read_query,
    snippet,
    stem_alternatives,
    to_json,
    window_page,
    window_position,
    word_match,
)
from archive.search.selectors import Segment as SnippetPart
from archive.search.services.index import Analyzer
from notes.models import Folder, Note
from notes.search_index import note_stems_for_search
from notes.services.folders import folder_paths

MAX_LIMIT = 100
MAX_QUERY_CHARS = 2_000  # the parser's own limit (archive.search.parser), for the API's schema
# bm25 weights of the words index's columns: title, body.
TITLE_WEIGHT, BODY_WEIGHT = 2.0, 1.0
# The operators a note answers (the parser's names: `in:` is "chat").
ANSWERED = ("chat", "tag", "before", "after", "on")
VOCABULARY = Vocabulary(terms="note_words_vocab")
REFUSED = (
    'notes are searched by words, "phrases", exact:, tag:, in: (a folder), before:, after:'
    " and on:; {name}: is for messages"
)
_NOTHING = "(0 = 1)"
_CURSOR_MARK = "n"  # the offset cursor of a query with no words to rank by


@dataclass(frozen=True)
class NoteHit:
    note: Note
    folder: str  # the note's folder path, "" at the top
    score: float | None  # bm25, lower is better; None when not ranked by words
    snippet: tuple[SnippetPart, ...]


@dataclass
class NoteSearchPage(DocumentPage[NoteHit]):
    """A page of notes (`stems_behind`: notes wait for their stems)."""


def _path_key(path: str) -> str:
    """A folder path as `in:` compares it: parts trimmed, either slash, any case."""
    parts = (part.strip() for part in path.replace("\\", "/").split("/"))
    return "/".join(part for part in parts if part).casefold()


def _folders_named(tree: Node) -> dict[str, tuple[int, ...]]:
    """For each `in:` value of the query, the folders it names (a folder whose path is the
    value, or ends with it: `Clients` and `Work/Clients` both name Work/Clients) and every
    folder inside them. From two small reads of the folder table."""
    values = {found.value for found in filters(tree) if found.name == "chat"}
    if not values:
        return {}
    paths = {pk: _path_key(path) for pk, path in folder_paths().items()}
    children: dict[int, list[int]] = {}
    for pk, parent in Folder.objects.values_list("pk", "parent_id"):
        if parent is not None:
            children.setdefault(parent, []).append(pk)
    named: dict[str, tuple[int, ...]] = {}
    for value in values:
        wanted = _path_key(value)
        found = {
            pk
            for pk, path in paths.items()
            if wanted and (path == wanted or path.endswith("/" + wanted))
        }
        frontier = list(found)
        while frontier:
            inside = [
                pk for parent in frontier for pk in children.get(parent, ()) if pk not in found
            ]
            found.update(inside)
            frontier = inside
        named[value] = tuple(sorted(found))
    return named


class _Compiler(IndexCompiler):
    """SQL over `n` (notes_note). A term is the set of its index's matches, read once per
    statement (a rowid lookup per candidate costs more than reading the set)."""

    def __init__(
        self,
        *,
        now: datetime,
        analyzer: Analyzer | None,
        folders: dict[str, tuple[int, ...]],
    ) -> None:
        self.now = now
        self.analyzer = analyzer
        self.folders = folders
        self.params: list[str] = []

    def select(self, table: str, match: str) -> str:
        self.params.append(match)
        return f"SELECT rowid FROM {table} WHERE {table} MATCH %s"

    def any_of(self, selects: list[str]) -> str:
        # One IN over a compound select (an OR of two INs keeps SQLite from driving the
        # query from the notes' ids).
        return f"(n.id IN ({' UNION ALL '.join(selects)}))"

    def term(self, term: Term) -> str:
        if term.kind in WORD_KINDS:
            return self.word_term(term, "note_words", "note_stems")
        # infix and substring: the trigram index needs three characters (as the messages')
        if len(term.text) >= 3:
            return self.any_of([self.select("note_trigram", fts_string(term.text))])
        self.params.extend([like_pattern(term.text), like_pattern(term.text)])
        return "(n.title LIKE %s ESCAPE '\\' OR n.body LIKE %s ESCAPE '\\')"

    def filter(self, node: Filter) -> str:
        value = node.value
        if node.name == "chat":
            # Integers, inlined: no text reaches the SQL. Never NULL (a note at the top
            # has no folder), so NOT in:… holds for it.
            ids = self.folders.get(value, ())
            if not ids:
                return _NOTHING
            listed = ",".join(str(int(pk)) for pk in ids)
            return f"(n.folder_id IS NOT NULL AND n.folder_id IN ({listed}))"
        if node.name == "tag":
            # The messages' tag: compares names in any case; a note's own taggings.
            self.params.append(value)
            return (
                "(n.id IN (SELECT g.target_id FROM archive_tagging AS g WHERE g.tag_id ="
                " (SELECT t.id FROM archive_tag AS t WHERE lower(t.name) = lower(%s))"
                " AND g.target_kind = 'note'))"
            )
        # before, after, on: the days the messages' search means by the date
        sql, params = date_condition(node, "n.updated_at", self.now)
        self.params.extend(params)
        return sql


# --- ranking by windows -----------------------------------------------------------------

# A window is the newest `WINDOW` matches of each index (by rowid: the order notes were
# written in), ranked as a whole; a query matching fewer notes is one window, ranked over
# every match. When a window's candidates mostly fail the query's other conditions, the
# next one is larger, up to WINDOW_MAX. The messages' sizes: at 50,000 notes a window of
# a word in most of them costs about 10 ms (bm25 reads each candidate's column sizes).
WINDOW = 2_000
WINDOW_MAX = 64_000
# A `tag:`, `in:` or date holding at most this many notes narrows the index scan itself
# (the MATCH runs over just its notes); a larger one is checked per candidate.
SCOPE_MAX = 20_000
_SCOPE_FILTERS = ("chat", "tag", "before", "after", "on")


def _corpus() -> Corpus:
    """The notes as the messages' windows rank them: a title counts twice the body, the
    most recently changed first among equals; the sizes as this module holds them when
    asked (a test may change them)."""
    return Corpus(
        table="notes_note AS n",
        id="n.id",
        words="note_words",
        stems="note_stems",
        trigram="note_trigram",
        words_score=f"bm25(note_words, {TITLE_WEIGHT}, {BODY_WEIGHT})",
        stems_score="bm25(note_stems)",
        order="n.updated_at DESC, n.id DESC",
        kept="",
        window=WINDOW,
        window_max=WINDOW_MAX,
        scope_max=SCOPE_MAX,
    )


def _plan(
    tree: Node,
    *,
    now: datetime,
    analyzer: Analyzer | None,
    folders: dict[str, tuple[int, ...]],
) -> Plan | None:
    """The windowed form of the query, when its shape has one: a positive AND holding
    words, or a positive OR of words only (as the messages' search plans): the words-index
    MATCH its candidates come from (scored by bm25), the stems-index MATCH of its stem-only
    candidates (and the words those must also hold: the terms without stems), the filters
    that can narrow the scan, and what else a candidate must satisfy (SQL over `n`).

    Why the candidates are every match: a word matches by its words or its stems, and a
    stemmed note holds the stem of every word it holds, so the stems index alone finds
    every match of the stemmed words; the words index adds the exact hits (and ranks them)
    and the notes whose stems wait in the queue."""
    if tree.negated:
        return None
    options: dict[str, Any] = {"now": now, "analyzer": analyzer, "folders": folders}
    if isinstance(tree, Group) and tree.op == "or":
        matches = [word_match(item) for item in tree.items]
        if not all(matches):
            return None
        either = [stem_alternatives(item, analyzer) for item in tree.items]
        return Plan(
            words=" OR ".join(str(match) for match in matches),
            stems=" OR ".join(f"({alt})" for alt in either if alt) or None,
        )
    items = tree.items if isinstance(tree, Group) else (tree,)
    words = [item for item in items if word_match(item)]
    if not words:
        return None
    scope = [
        item
        for item in items
        if isinstance(item, Filter) and not item.negated and item.name in _SCOPE_FILTERS
    ]
    rest = [item for item in items if item not in words and item not in scope]
    plan = Plan(words=" AND ".join(str(word_match(item)) for item in words))
    alternatives = {item: stem_alternatives(item, analyzer) for item in words}
    if any(alternatives.values()):
        plan.stems = " AND ".join(f"({alt})" for alt in alternatives.values() if alt)
        unstemmed = [str(word_match(item)) for item, alt in alternatives.items() if not alt]
        plan.stems_also = " AND ".join(unstemmed) or None
    if scope:
        compiler = _Compiler(**options)
        plan.scope = " AND ".join(compiler.node(item) for item in scope)
        plan.scope_params = compiler.params
    if rest:
        compiler = _Compiler(**options)
        plan.rest = " AND ".join(compiler.node(item) for item in rest)
        plan.rest_params = compiler.params
    return plan


def _newest_page(
    tree: Node,
    *,
    limit: int,
    offset: int,
    now: datetime,
    analyzer: Analyzer | None,
    folders: dict[str, tuple[int, ...]],
) -> list[tuple[int, float | None]]:
    """A query with no words to rank by (filters, exclusions, substrings, an OR mixing
    them): its notes, most recently changed first, `limit` + 1 of them from `offset`."""
    compiler = _Compiler(now=now, analyzer=analyzer, folders=folders)
    where = compiler.node(tree)
    with connection.cursor() as db:
        db.execute(
            f"SELECT n.id FROM notes_note AS n WHERE {where}"
            " ORDER BY n.updated_at DESC, n.id DESC LIMIT %s OFFSET %s",
            [*compiler.params, limit + 1, offset],
        )
        return [(int(row[0]), None) for row in db.fetchall()]


def note_search(
    *,
    query: str,
    cursor: str | None = None,
    limit: int = 20,
    now: datetime | None = None,
) -> NoteSearchPage:
    """One page of the notes matching `query`, best first. Raises Invalid (QuerySyntaxError,
    with its position, for the query itself; a sentence for an operator notes cannot
    answer, a bad cursor or limit) and nothing else for any input."""
    tree = read_query(query, limit=limit, most=MAX_LIMIT, answered=ANSWERED, refused=REFUSED)
    page = NoteSearchPage(query=query, parsed=to_json(tree))
    if tree is None:
        return page
    stems = note_stems_for_search()
    page.stems_behind = stems.behind
    options: dict[str, Any] = {
        "now": now or datetime.now(UTC),
        "analyzer": stems.analyzer,
        "folders": _folders_named(tree),
    }
    plan = _plan(tree, **options)
    if plan is not None:
        corpus = _corpus()
        start = window_position(cursor, corpus)
        rows, following = window_page(plan, corpus, limit=limit, start=start)
        page.next_cursor = following.token() if following else None
        first_page = start.first
    else:
        offset = cursor_offset(cursor, _CURSOR_MARK)
        rows = _newest_page(tree, limit=limit, offset=offset, **options)
        if len(rows) > limit:
            page.next_cursor = offset_cursor(offset + limit, _CURSOR_MARK)
        rows = rows[:limit]
        first_page = offset == 0
    found = Note.objects.in_bulk([pk for pk, _ in rows])
    paths = folder_paths() if any(note.folder_id for note in found.values()) else {}
    marks = highlights(tree, stems.analyzer)
    for pk, score in rows:
        note = found.get(pk)
        if note is None:
            continue
        page.hits.append(
            NoteHit(
                note=note,
                folder=paths.get(note.folder_id, "") if note.folder_id else "",
                score=score,
                snippet=_snippet(note, marks),
            )
        )
    if first_page and len(page.hits) < SUGGEST_BELOW:
        page.suggestion = did_you_mean(query, tree, VOCABULARY)
    return page


def _snippet(note: Note, marks: list[str]) -> tuple[SnippetPart, ...]:
    """Around the first match in the body (the title is shown beside it); the title when the
    body is empty."""
    return snippet(note.body or note.title, marks)
