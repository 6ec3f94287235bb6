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
that hold few notes narrow the scan itself. A query with no word to rank by (filters,
exclusions, substrings) lists its notes most recently changed first. Snippets are the
messages' own (`archive.search.selectors.snippet`); a first page with few hits offers "did
you mean" from the words index's vocabulary (`note_words_vocab`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import connection

from archive.search.selectors import (
    SUGGEST_BELOW,
    Filter,
    Group,
    Node,
    Vocabulary,
    compile_query,
    did_you_mean,
    parse,
    snippet,
    to_json,
)
from archive.search.selectors import Segment as SnippetPart
from archive.search.services.index import Analyzer
from notes.models import Folder, Note
from notes.search_index import note_stems_for_search
from notes.services.folders import folder_paths
from wirecat.errors import Invalid

MAX_LIMIT = 100
MAX_QUERY_CHARS = 2_000  # the parser's own limit (archive.search.parser), for the API's schema
MAX_OFFSET = 1_000_000
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


@dataclass(frozen=True)
class NoteHit:
    note: Note
    folder: str  # the note's folder path, "" at the top
    score: float | None  # bm25, lower is better; None when not ranked by words
    snippet: tuple[SnippetPart, ...]


@dataclass
class NoteSearchPage:
    query: str
    parsed: dict[str, Any] | None
    hits: list[NoteHit] = field(default_factory=list)
    next_cursor: str | None = None
    # Notes wait for their stems (or the stems are being rebuilt): a word's other forms are
    # found only in what the stems index holds; the words as written everywhere.
    stems_behind: bool = False
    # "Did you mean": the query with known words instead, when its first page found little.
    suggestion: str | None = None


def _fts_string(text: str) -> str:
    """An FTS5 string literal (as archive.search.compiler.fts_string): user text is never
    MATCH syntax."""
    return '"' + text.replace('"', '""') + '"'


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _cursor_offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii") + b"==").decode("ascii")
        offset = int(raw.removeprefix("n"))
    except (ValueError, binascii.Error, UnicodeError) as exc:
        raise Invalid("cursor: not a cursor this search gave out") from exc
    if not raw.startswith("n") or not 0 <= offset <= MAX_OFFSET:
        raise Invalid("cursor: not a cursor this search gave out")
    return offset


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"n{offset}".encode()).decode().rstrip("=")


def _filters(node: Node) -> Iterable[Filter]:
    if isinstance(node, Group):
        for item in node.items:
            yield from _filters(item)
    elif isinstance(node, Filter):
        yield node


def _check(tree: Node) -> None:
    """Refuse what a note cannot answer, before any SQL is made."""
    for found in _filters(tree):
        if found.name not in ANSWERED:
            raise Invalid(REFUSED.format(name=found.name))


def _path_key(path: str) -> str:
    """A folder path as `in:` compares it: parts trimmed, either slash, any case."""
    parts = (part.strip() for part in path.replace("\\", "/").split("/"))
    return "/".join(part for part in parts if part).casefold()


def _folders_named(tree: Node) -> dict[str, tuple[int, ...]]:
    """For each `in:` value of the query, the folders it names (a folder whose path is the
    value, or ends with it: `Clients` and `Work/Clients` both name Work/Clients) and every
    folder inside them. From two small reads of the folder table."""
    values = {found.value for found in _filters(tree) if found.name == "chat"}
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


def _positive_terms(node: Node) -> list[Node]:
    if isinstance(node, Group):
        if node.negated:
            return []
        return [term for item in node.items for term in _positive_terms(item)]
    if isinstance(node, Filter) or node.negated:
        return []
    return [node]


def _word_match(node: Node) -> str | None:
    if isinstance(node, Group | Filter) or node.negated:
        return None
    if node.kind not in ("word", "phrase", "prefix"):
        return None
    return _fts_string(node.text) + ("*" if node.kind == "prefix" else "")


def _stems_of(node: Node, analyzer: Analyzer | None) -> tuple[str, ...]:
    """The stems a plain word also matches by (none for exact:, phrases, prefixes)."""
    if analyzer is None or isinstance(node, Group | Filter):
        return ()
    if node.kind != "word" or node.exact:
        return ()
    return analyzer.word_stems(node.text)


class _Compiler:
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

    def node(self, node: Node) -> str:
        if isinstance(node, Group):
            joiner = " AND " if node.op == "and" else " OR "
            sql = "(" + joiner.join(self.node(item) for item in node.items) + ")"
        elif isinstance(node, Filter):
            sql = self.filter(node)
        else:
            sql = self.term(node)
        return f"NOT {sql}" if node.negated else sql

    def _select(self, table: str, match: str) -> str:
        self.params.append(match)
        return f"SELECT rowid FROM {table} WHERE {table} MATCH %s"

    def _any(self, selects: list[str]) -> str:
        # One IN over a compound select (an OR of two INs keeps SQLite from driving the
        # query from the notes' ids).
        return f"(n.id IN ({' UNION ALL '.join(selects)}))"

    def term(self, node: Node) -> str:
        assert not isinstance(node, Group | Filter)
        if node.kind in ("word", "phrase", "prefix"):
            match = _fts_string(node.text) + ("*" if node.kind == "prefix" else "")
            selects = [self._select("note_words", match)]
            stems = _stems_of(node, self.analyzer)
            if stems:
                selects.append(
                    self._select("note_stems", " OR ".join(_fts_string(stem) for stem in stems))
                )
            return self._any(selects)
        # infix and substring: the trigram index needs three characters (as the messages')
        if len(node.text) >= 3:
            return self._any([self._select("note_trigram", _fts_string(node.text))])
        self.params.extend([_like(node.text), _like(node.text)])
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
        # before, after, on: the messages' compiler reads the date (its bound parameters
        # are the day range's [start, end) as the store holds times), so one query means
        # the same days in both searches.
        bounds = compile_query(Filter(node.name, value), now=self.now).params
        if node.name == "before":
            self.params.append(bounds[0])
            return "(n.updated_at < %s)"
        if node.name == "after":
            self.params.append(bounds[0])
            return "(n.updated_at >= %s)"
        self.params.extend(bounds[:2])
        return "(n.updated_at >= %s AND n.updated_at < %s)"


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
_TOP = 2**62  # above every rowid
_SCOPE_FILTERS = ("chat", "tag", "before", "after", "on")


@dataclass(frozen=True)
class _Position:
    """Where a ranked page starts: in the window of rowids below `below`, of `size`
    candidates per index, after its first `skip` hits."""

    below: int
    size: int
    skip: int

    @property
    def first(self) -> bool:
        return self.below == _TOP and self.skip == 0

    def token(self) -> str:
        raw = f"w{self.below}.{self.size}.{self.skip}"
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _position(cursor: str | None) -> _Position:
    if not cursor:
        return _Position(_TOP, WINDOW, 0)
    problem = Invalid("cursor: not a cursor this search gave out")
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii") + b"==").decode("ascii")
        below, size, skip = (int(part) for part in raw.removeprefix("w").split("."))
    except (ValueError, binascii.Error, UnicodeError) as exc:
        raise problem from exc
    if not raw.startswith("w") or not (
        0 < below <= _TOP and 1 <= size <= WINDOW_MAX and 0 <= skip <= 2 * WINDOW_MAX
    ):
        raise problem
    return _Position(below, size, skip)


@dataclass
class _Plan:
    """A query split for ranking by windows: the words-index MATCH its candidates come from
    (scored by bm25), the stems-index MATCH of its stem-only candidates (and the words those
    must also hold: the terms without stems), the filters that can narrow the scan, and
    what else a candidate must satisfy (SQL over `n`)."""

    words: str
    stems: str | None = None
    stems_also: str | None = None
    scope: str = ""
    scope_params: list[str] = field(default_factory=list)
    rest: str = "1"
    rest_params: list[str] = field(default_factory=list)


def _plan(
    tree: Node,
    *,
    now: datetime,
    analyzer: Analyzer | None,
    folders: dict[str, tuple[int, ...]],
) -> _Plan | None:
    """The windowed form of the query, when its shape has one: a positive AND holding
    words, or a positive OR of words only (as the messages' search plans).

    Why the candidates are every match: a word matches by its words or its stems, and a
    stemmed note holds the stem of every word it holds, so the stems index alone finds
    every match of the stemmed words; the words index adds the exact hits (and ranks them)
    and the notes whose stems wait in the queue."""
    if tree.negated:
        return None
    options: dict[str, Any] = {"now": now, "analyzer": analyzer, "folders": folders}
    if isinstance(tree, Group) and tree.op == "or":
        matches = [_word_match(item) for item in tree.items]
        if not all(matches):
            return None
        either = [_alternatives(item, analyzer) for item in tree.items]
        return _Plan(
            words=" OR ".join(str(match) for match in matches),
            stems=" OR ".join(f"({alt})" for alt in either if alt) or None,
        )
    items = tree.items if isinstance(tree, Group) else (tree,)
    words = [item for item in items if _word_match(item)]
    if not words:
        return None
    scope = [
        item
        for item in items
        if isinstance(item, Filter) and not item.negated and item.name in _SCOPE_FILTERS
    ]
    rest = [item for item in items if item not in words and item not in scope]
    plan = _Plan(words=" AND ".join(str(_word_match(item)) for item in words))
    alternatives = {item: _alternatives(item, analyzer) for item in words}
    if any(alternatives.values()):
        plan.stems = " AND ".join(f"({alt})" for alt in alternatives.values() if alt)
        unstemmed = [str(_word_match(item)) for item, alt in alternatives.items() if not alt]
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


def _alternatives(node: Node, analyzer: Analyzer | None) -> str | None:
    """`"stem1" OR "stem2"` for a plain word the analyzer stems, else None."""
    stems = _stems_of(node, analyzer)
    return " OR ".join(_fts_string(stem) for stem in stems) if stems else None


def _narrow(plan: _Plan) -> bool:
    """Whether the plan's filters hold few enough notes to scan within."""
    if not plan.scope:
        return False
    with connection.cursor() as db:
        db.execute(
            "SELECT count(*) FROM (SELECT 1 FROM notes_note AS n"
            f" WHERE {plan.scope} LIMIT {SCOPE_MAX + 1})",
            plan.scope_params,
        )
        return int(db.fetchone()[0]) <= SCOPE_MAX


def _window_sql(plan: _Plan, narrow: bool, below: int, size: int) -> tuple[str, list[Any]]:
    """One window's hits, best first (LIMIT and OFFSET left as parameters), followed by a
    row (NULL, lo) naming the lowest rowid the window covers (0: it reached the first
    note)."""
    ctes: list[str] = []
    params: list[Any] = []
    within = ""
    if narrow:
        ctes.append(f"scope AS MATERIALIZED (SELECT n.id FROM notes_note AS n WHERE {plan.scope})")
        params.extend(plan.scope_params)
        within = " AND +rowid IN scope"
    edges: list[str] = []

    def window(name: str, table: str, match: str, score: str, also: str | None) -> None:
        extra = ""
        params.extend([match, below])
        if also is not None:
            extra = " AND +rowid IN (SELECT rowid FROM note_words WHERE note_words MATCH %s)"
            params.append(also)
        # bm25 is computed for the window's rows only (ordered by rowid, not by rank).
        ctes.append(
            f"{name} AS MATERIALIZED (SELECT rowid, {score} FROM {table} WHERE {table} MATCH %s"
            f" AND rowid < %s{within}{extra} ORDER BY rowid DESC LIMIT {int(size)})"
        )
        # A full window ends at its lowest rowid; a short one reaches the first note.
        edges.append(f"coalesce((SELECT min(rowid) FROM {name} HAVING count(*) >= {int(size)}), 0)")

    window(
        "words",
        "note_words",
        plan.words,
        f"bm25(note_words, {TITLE_WEIGHT}, {BODY_WEIGHT}) AS score",
        None,
    )
    found = "SELECT rowid, score, NULL AS by_stem FROM words"
    if plan.stems is not None:
        window("stems", "note_stems", plan.stems, "bm25(note_stems) AS by_stem", plan.stems_also)
        found += (
            " UNION ALL SELECT rowid, NULL, by_stem FROM stems"
            " WHERE rowid NOT IN (SELECT rowid FROM words)"
        )
    ctes.append(f"edge AS MATERIALIZED (SELECT max({', '.join(edges)}, 0) AS lo)")
    ctes.append(f"found AS ({found})")
    where = [plan.rest]
    params_after = list(plan.rest_params)
    if plan.scope and not narrow:
        where.append(plan.scope)
        params_after.extend(plan.scope_params)
    sql = (
        f"WITH {', '.join(ctes)} SELECT * FROM (SELECT n.id, found.score FROM edge"
        " CROSS JOIN found CROSS JOIN notes_note AS n ON n.id = found.rowid"
        f" WHERE found.rowid >= edge.lo AND {' AND '.join(where)}"
        " ORDER BY found.score IS NULL, found.score, found.by_stem,"
        " n.updated_at DESC, n.id DESC LIMIT %s OFFSET %s) UNION ALL SELECT NULL, lo FROM edge"
    )
    return sql, [*params, *params_after]


def _ranked_page(
    plan: _Plan, *, limit: int, start: _Position
) -> tuple[list[tuple[int, float | None]], _Position | None]:
    """One page of (note id, bm25 or None) from `start`, and where the next page starts."""
    narrow = _narrow(plan)
    found: list[tuple[int, float | None, _Position]] = []
    below, size, skip = start.below, start.size, start.skip
    while True:
        need = limit + 1 - len(found)
        sql, params = _window_sql(plan, narrow, below, size)
        with connection.cursor() as db:
            db.execute(sql, [*params, need, skip])
            rows = db.fetchall()
        low = int(rows[-1][1])
        for index, (note_id, score) in enumerate(rows[:-1]):
            ranked = float(score) if score is not None else None
            found.append((int(note_id), ranked, _Position(below, size, skip + index)))
        if len(found) > limit or low <= 0:
            break
        # This window is spent: the next, older one, larger when this one gave little.
        if len(rows) - 1 < need // 2:
            size = min(size * 4, WINDOW_MAX)
        below, skip = low, 0
    following = found[limit][2] if len(found) > limit else None
    return [(note_id, score) for note_id, score, _ in found[:limit]], following


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
    if not 1 <= limit <= MAX_LIMIT:
        raise Invalid(f"limit: between 1 and {MAX_LIMIT}")
    tree = parse(query)
    page = NoteSearchPage(query=query, parsed=to_json(tree))
    if tree is None:
        return page
    _check(tree)
    stems = note_stems_for_search()
    page.stems_behind = stems.behind
    options: dict[str, Any] = {
        "now": now or datetime.now(UTC),
        "analyzer": stems.analyzer,
        "folders": _folders_named(tree),
    }
    plan = _plan(tree, **options)
    if plan is not None:
        start = _position(cursor)
        rows, following = _ranked_page(plan, limit=limit, start=start)
        page.next_cursor = following.token() if following else None
        first_page = start.first
    else:
        offset = _cursor_offset(cursor)
        rows = _newest_page(tree, limit=limit, offset=offset, **options)
        if len(rows) > limit:
            page.next_cursor = _cursor(offset + limit)
        rows = rows[:limit]
        first_page = offset == 0
    found = Note.objects.in_bulk([pk for pk, _ in rows])
    paths = folder_paths() if any(note.folder_id for note in found.values()) else {}
    terms = _positive_terms(tree)
    highlights = (
        compile_query(Group("and", tuple(terms)), analyzer=stems.analyzer).highlights
        if terms
        else []
    )
    for pk, score in rows:
        note = found.get(pk)
        if note is None:
            continue
        page.hits.append(
            NoteHit(
                note=note,
                folder=paths.get(note.folder_id, "") if note.folder_id else "",
                score=score,
                snippet=_snippet(note, highlights),
            )
        )
    if first_page and len(page.hits) < SUGGEST_BELOW:
        page.suggestion = did_you_mean(query, tree, VOCABULARY)
    return page


def _snippet(note: Note, highlights: list[str]) -> tuple[SnippetPart, ...]:
    """Around the first match in the body (the title is shown beside it); the title when the
    body is empty."""
    return snippet(note.body or note.title, highlights)
