"""The meetings search selector: what was said in meetings, and their titles and descriptions.

The query language is the messages' (`archive.search`'s parser, read through its public
face): words, "phrases", prefix*, *infix*, -excluded, OR, parentheses, `exact:`, and the
operators a meeting can answer: `from:` (who said it; for a meeting's own title or
description, a participant or the organizer), `in:` (the calendar), `before:`, `after:`,
`on:` (the meeting's start, read as the messages' search reads a date). Operators only a
message has (`has:`, `is:`, `source:`, `filename:`, `tag:`) are refused with a sentence.

A hit is one document of the words index (migration 0002): a transcript segment (the
meeting, the line's seq, speaker and the millisecond it was said) or a meeting (its title
or description). Every term must hold in that one document. Words also match by their
stems (the messages' analyzer, `meetings.search_index`); infixes and terms with
punctuation match as substrings. Hits are ranked by bm25 (a title counts twice the text),
exact forms above stem-only ones, then the newest meeting first. A page is read from a
window of the best-ranked matches (FTS5's `ORDER BY rank LIMIT`, so a common word is not
scored into a table and sorted whole); the query's other conditions are checked on the
window's candidates only, a wider window is read while they leave too few, and the whole
query answers only when the window cannot decide the page (see `WINDOW`). Snippets are the
messages' own (`archive.search.selectors.snippet`). A first page with few hits offers "did
you mean" (`suggestion`) as the messages' search does, from the words index's vocabulary
(`meeting_words_vocab`). The pieces every search over the query language shares (cursors,
the operators refused, MATCH strings, the tree's SQL) are `archive/search/querykit.py`'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection

from archive.search.selectors import (
    SUGGEST_BELOW,
    WORD_KINDS,
    DocumentPage,
    Filter,
    Group,
    IndexCompiler,
    Node,
    Term,
    Vocabulary,
    cursor_offset,
    date_condition,
    did_you_mean,
    highlights,
    like_pattern,
    offset_cursor,
    rank_match,
    read_query,
    snippet,
    to_json,
    word_match,
)
from archive.search.selectors import Segment as SnippetPart
from archive.search.services.index import Analyzer
from meetings.models import Meeting, Segment
from meetings.search_index import meeting_stems_for_search

MAX_LIMIT = 100
MAX_QUERY_CHARS = 2_000  # the parser's own limit (archive.search.parser), for the API's schema
# bm25 weights of the words index's columns: title, body (a segment's text, a description).
TITLE_WEIGHT, BODY_WEIGHT = 2.0, 1.0
# The operators a meeting answers (the parser's names: `in:` is "chat").
ANSWERED = ("from", "chat", "before", "after", "on")
# The typo vocabulary: the words index's own terms (no trigram snapshot, see
# `archive.search.suggest.Vocabulary`).
VOCABULARY = Vocabulary(terms="meeting_words_vocab")
REFUSED = (
    'meetings are searched by words, "phrases", from:, in: (a calendar), before:, after:'
    " and on:; {name}: is for messages"
)
_CURSOR_MARK = "m"  # this search's offset cursors


@dataclass(frozen=True)
class MeetingHit:
    """A line of a transcript (`segment` set: who, and when from the recording's start), or
    a meeting whose title or description matched (`segment` None)."""

    meeting: Meeting
    segment: Segment | None
    score: float | None  # bm25, lower is better; None when not ranked by words
    snippet: tuple[SnippetPart, ...]

    @property
    def kind(self) -> str:
        return "meeting" if self.segment is None else "segment"

    @property
    def start_ms(self) -> int | None:
        return self.segment.start_ms if self.segment is not None else None


@dataclass
class MeetingSearchPage(DocumentPage[MeetingHit]):
    """A page of transcript lines and meetings."""


class _Compiler(IndexCompiler):
    """SQL over `m` (meetings_meeting) and, for segments, `s` (meetings_segment)."""

    def __init__(
        self,
        *,
        segments: bool,
        now: datetime,
        analyzer: Analyzer | None,
        correlated: bool = False,
        bounded: bool = False,
    ) -> None:
        self.segments = segments
        # `correlated`: checking given candidates (a term is a rowid lookup in its index);
        # `bounded`: a term narrows the documents to few (per-document filter checks).
        self.correlated = correlated
        self.bounded = bounded or correlated
        self.now = now
        self.analyzer = analyzer
        self.params: list[str] = []
        # The document's id and the parity of its rowid in the words index.
        self.doc_id, self.parity = ("s.id", 0) if segments else ("m.id", 1)
        self.text = "s.text" if segments else "(m.title || ' ' || m.description)"

    def select(self, table: str, match: str) -> str:
        """The documents of this kind `table` matches; in a candidates' check, only whether
        this document does (a rowid lookup, not every match)."""
        self.params.append(match)
        if self.correlated:
            return (
                f"SELECT 1 FROM {table} WHERE {table} MATCH %s"
                f" AND {table}.rowid = {self.doc_id} * 2 + {self.parity}"
            )
        return (
            f"SELECT rowid >> 1 FROM {table} WHERE {table} MATCH %s AND (rowid & 1) = {self.parity}"
        )

    def any_of(self, selects: list[str]) -> str:
        if self.correlated:
            return "(" + " OR ".join(f"EXISTS ({select})" for select in selects) + ")"
        # One IN over a compound select (an OR of two INs keeps SQLite from driving the
        # query from the documents' ids).
        return f"({self.doc_id} IN ({' UNION ALL '.join(selects)}))"

    def term(self, term: Term) -> str:
        if term.kind in WORD_KINDS:
            return self.word_term(term, "meeting_words", "meeting_stems")
        # infix and substring: a bounded scan of the text
        self.params.append(like_pattern(term.text))
        return f"({self.text} LIKE %s ESCAPE '\\')"

    def filter(self, node: Filter) -> str:
        value = node.value
        if node.name == "from":
            return self._from(value, exact=node.exact)
        if node.name == "chat":
            self.params.extend([like_pattern(value), value])
            return (
                "(m.calendar_id IN (SELECT c.id FROM meetings_calendar AS c"
                " WHERE c.name LIKE %s ESCAPE '\\' OR c.public_id = %s))"
            )
        # before, after, on: the days the messages' search means by the date
        sql, params = date_condition(node, "m.start", self.now)
        self.params.extend(params)
        return sql

    def _from(self, value: str, *, exact: bool) -> str:
        """A quoted name is that whole name (or address); a bare one, any name with a word
        starting so, or an address starting so."""
        if exact:
            names = "lower({0}) = lower(%s)"
            name_params = [value]
        else:
            names = "({0} LIKE %s ESCAPE '\\' OR {0} LIKE %s ESCAPE '\\')"
            prefix = like_pattern(value)[1:]  # `value%`
            name_params = [prefix, "% " + prefix]
        if self.segments:
            self.params.extend(name_params)
            return f"({names.format('s.speaker')})"
        email = "lower({0}) = lower(%s)" if exact else "{0} LIKE %s ESCAPE '\\'"
        email_param = value if exact else like_pattern(value)[1:]
        self.params.extend([*name_params, email_param, *name_params, email_param])
        if self.bounded:
            # Few meetings to ask about: each one's own participants and event (by index),
            # not every participant's name.
            return (
                "(EXISTS (SELECT 1 FROM meetings_participant AS p WHERE p.meeting_id = m.id"
                f" AND ({names.format('p.name')} OR {email.format('p.email')}))"
                " OR EXISTS (SELECT 1 FROM meetings_event AS e WHERE e.id = m.event_id"
                f" AND ({names.format('e.organizer_name')}"
                f" OR {email.format('e.organizer_email')})))"
            )
        return (
            "(m.id IN (SELECT p.meeting_id FROM meetings_participant AS p"
            f" WHERE {names.format('p.name')} OR {email.format('p.email')})"
            " OR m.event_id IN (SELECT e.id FROM meetings_event AS e"
            f" WHERE {names.format('e.organizer_name')}"
            f" OR {email.format('e.organizer_email')}))"
        )


_Row = tuple[int, int, float | None]
# Ranked candidates per window: the best `WINDOW` (or `needed` times WIDEN) by bm25, then
# WIDEN times more while the other conditions leave too few, up to WINDOW_MAX; past that
# (or when the ranked matches run out before a page is full) the whole query answers.
WINDOW, WIDEN, WINDOW_MAX = 200, 8, 12_800
_ORDER = " ORDER BY score IS NULL, score, start DESC, id DESC, kind DESC, seq"


def _residual(tree: Node) -> Node | None:
    """What a document matching the rank's MATCH must still satisfy: the query without the
    top-level words the MATCH holds (None: nothing more)."""
    if _implied(tree):
        return None
    if isinstance(tree, Group) and tree.op == "and" and not tree.negated:
        rest = tuple(item for item in tree.items if word_match(item) is None)
        return rest[0] if len(rest) == 1 else Group("and", rest)
    return tree


def _implied(tree: Node) -> bool:
    """Whether every document matching the rank's MATCH matches the whole query: a word,
    phrase or prefix, or an AND / OR of only those (each term is its words OR its stems,
    so matching the words is enough)."""
    if isinstance(tree, Group):
        return not tree.negated and all(word_match(item) for item in tree.items)
    return word_match(tree) is not None


def _windowed(
    tree: Node, rank_match: str, needed: int, *, now: datetime, analyzer: Analyzer | None
) -> list[_Row] | None:
    """The first `needed` hits from the best-ranked words-index matches, driven by FTS5's
    `ORDER BY rank LIMIT` (bm25 is computed for the window, not sorted for every match);
    None when the ranked matches cannot decide the page (see WINDOW)."""
    implied = _implied(tree)
    residual = _residual(tree)
    segment_check = meeting_check = ""
    check_params: list[str] = []
    if residual is not None:
        segments = _Compiler(segments=True, now=now, analyzer=analyzer, correlated=True)
        meetings = _Compiler(segments=False, now=now, analyzer=analyzer, correlated=True)
        segment_check = f" AND {segments.node(residual)}"
        meeting_check = f" AND {meetings.node(residual)}"
        check_params = [*segments.params, *meetings.params]
    window = max(WINDOW, needed * WIDEN)
    while window <= WINDOW_MAX:
        with connection.cursor() as db:
            db.execute(
                "SELECT rowid, rank FROM meeting_words WHERE meeting_words MATCH %s"
                " AND rank MATCH %s ORDER BY rank LIMIT %s",
                [rank_match, f"bm25({TITLE_WEIGHT}, {BODY_WEIGHT})", window],
            )
            ranked = db.fetchall()
            if not ranked:
                break
            full = len(ranked) == window
            db.execute(
                "WITH cand AS MATERIALIZED (SELECT value ->> 0 AS doc, value ->> 1 AS score"
                " FROM json_each(%s)) SELECT kind, id, score FROM ("
                "SELECT 0 AS kind, s.id AS id, cand.score AS score, m.start AS start,"
                " s.seq AS seq FROM cand CROSS JOIN meetings_segment AS s ON s.id = cand.doc >> 1"
                " JOIN meetings_transcript AS t ON t.id = s.transcript_id"
                " JOIN meetings_meeting AS m ON m.id = t.meeting_id"
                f" WHERE (cand.doc & 1) = 0{segment_check}"
                " UNION ALL SELECT 1, m.id, cand.score, m.start, -1 FROM cand"
                " CROSS JOIN meetings_meeting AS m ON m.id = cand.doc >> 1"
                f" WHERE (cand.doc & 1) = 1{meeting_check})" + _ORDER,
                [json.dumps(ranked), *check_params],
            )
            rows: list[_Row] = [
                (int(kind), int(row_id), float(score)) for kind, row_id, score in db.fetchall()
            ]
        if full:
            # Matches scored as the window's last one may lie past the window: only the
            # hits ranked strictly better are certainly the best.
            last = float(ranked[-1][1])
            settled = [row for row in rows if row[2] is not None and row[2] < last]
            if len(settled) >= needed:
                return settled[:needed]
            window *= WIDEN
            continue
        # Every ranked match is in; the unranked (stem-only) ones come after them, and
        # there are none when each word is its words alone.
        if len(rows) >= needed or (implied and analyzer is None):
            return rows[:needed]
        return None
    return None


def _everything(
    tree: Node, rank_match: str | None, needed: int, *, now: datetime, analyzer: Analyzer | None
) -> list[_Row]:
    """The first `needed` hits of every document matching the query, ranked as a whole."""
    bounded = rank_match is not None
    segments = _Compiler(segments=True, now=now, analyzer=analyzer, bounded=bounded)
    meetings = _Compiler(segments=False, now=now, analyzer=analyzer, bounded=bounded)
    segment_where, meeting_where = segments.node(tree), meetings.node(tree)
    params: list[str | int | float] = []
    sql: list[str] = []
    if rank_match is not None:
        # Scored once, as a table (joined as a subquery, the MATCH would run per row).
        sql.append(
            "WITH rank AS MATERIALIZED (SELECT rowid AS doc, bm25(meeting_words, %s, %s)"
            " AS score FROM meeting_words WHERE meeting_words MATCH %s) "
        )
        params.extend([TITLE_WEIGHT, BODY_WEIGHT, rank_match])
        segment_score, meeting_score = "rank.score", "rank.score"
        segment_join = " LEFT JOIN rank ON rank.doc = s.id * 2"
        meeting_join = " LEFT JOIN rank ON rank.doc = m.id * 2 + 1"
    else:
        segment_score = meeting_score = "NULL"
        segment_join = meeting_join = ""
    sql.append(
        f"SELECT kind, id, score FROM (SELECT 0 AS kind, s.id AS id, {segment_score} AS score,"
        " m.start AS start, s.seq AS seq FROM meetings_segment AS s"
        " JOIN meetings_transcript AS t ON t.id = s.transcript_id"
        f" JOIN meetings_meeting AS m ON m.id = t.meeting_id{segment_join}"
        f" WHERE {segment_where}"
        f" UNION ALL SELECT 1, m.id, {meeting_score}, m.start, -1 FROM meetings_meeting AS m"
        f"{meeting_join} WHERE {meeting_where})" + _ORDER + " LIMIT %s"
    )
    params.extend([*segments.params, *meetings.params, needed])
    with connection.cursor() as db:
        db.execute("".join(sql), params)
        return [
            (int(kind), int(row_id), float(score) if score is not None else None)
            for kind, row_id, score in db.fetchall()
        ]


def meeting_search(
    *,
    query: str,
    cursor: str | None = None,
    limit: int = 20,
    now: datetime | None = None,
) -> MeetingSearchPage:
    """One page of the transcript lines and meetings matching `query`, best first. Raises
    Invalid (QuerySyntaxError, with its position, for the query itself; a sentence for an
    operator meetings cannot answer, a bad cursor or limit) and nothing else for any
    input."""
    tree = read_query(query, limit=limit, most=MAX_LIMIT, answered=ANSWERED, refused=REFUSED)
    page = MeetingSearchPage(query=query, parsed=to_json(tree))
    if tree is None:
        return page
    offset = cursor_offset(cursor, _CURSOR_MARK)
    stems = meeting_stems_for_search()
    page.stems_behind = stems.behind
    moment = now or datetime.now(UTC)
    needed = offset + limit + 1
    ranking = rank_match(tree)
    rows = (
        _windowed(tree, ranking, needed, now=moment, analyzer=stems.analyzer)
        if ranking is not None
        else None
    )
    if rows is None:
        rows = _everything(tree, ranking, needed, now=moment, analyzer=stems.analyzer)
    rows = rows[offset:]
    if len(rows) > limit:
        page.next_cursor = offset_cursor(offset + limit, _CURSOR_MARK)
    rows = rows[:limit]
    found_segments = Segment.objects.select_related(
        "transcript__meeting__calendar", "transcript__meeting__event"
    ).in_bulk([row[1] for row in rows if row[0] == 0])
    found_meetings = Meeting.objects.select_related("calendar", "event").in_bulk(
        [row[1] for row in rows if row[0] == 1]
    )
    marks = highlights(tree, stems.analyzer)
    for kind, row_id, score in rows:
        ranked = float(score) if score is not None else None
        if kind == 0:
            segment = found_segments.get(row_id)
            if segment is None:
                continue
            page.hits.append(
                MeetingHit(
                    meeting=segment.transcript.meeting,
                    segment=segment,
                    score=ranked,
                    snippet=snippet(segment.text, marks),
                )
            )
        else:
            meeting = found_meetings.get(row_id)
            if meeting is None:
                continue
            text = " — ".join(part for part in (meeting.title, meeting.description) if part)
            page.hits.append(
                MeetingHit(
                    meeting=meeting,
                    segment=None,
                    score=ranked,
                    snippet=snippet(text, marks),
                )
            )
    if offset == 0 and len(page.hits) < SUGGEST_BELOW:
        page.suggestion = did_you_mean(query, tree, VOCABULARY)
    return page
