"""The files' own search: attachments whose text holds the query's words, best first.

Search all lists files as a kind of their own (a message's search finds the message a file
came with; this finds the file). The query language is the messages': words (each also by
its stems, once the files' stems index was made by today's analyzer), "phrases", prefix*,
*infix* and terms with punctuation (substrings of the text), -excluded, OR, parentheses,
`exact:`, and the operators a file can answer: `filename:` (its name), `content:` (its
text, as a word of the query is), and `before:`, `after:`, `on:` (when its message was
sent). Others are refused with a sentence saying so. Ranked by bm25 of the files' words
index, exact forms above stem-only ones, then the newest message first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection

from archive.files.models import AttachmentText
from archive.search.compiler import file_term, like_pattern
from archive.search.files import search_reading
from archive.search.parser import Filter, Term
from archive.search.querykit import (
    WORD_KINDS,
    IndexCompiler,
    date_condition,
    highlights,
    rank_match,
    read_query,
)
from archive.search.selectors import Segment, snippet
from archive.search.services.index import Analyzer

MAX_LIMIT = 100
ANSWERED = ("filename", "content", "before", "after", "on")
REFUSED = (
    'files are searched by words, "phrases", exact:, filename:, content:, before:, after:'
    " and on:; {name}: is for messages"
)


@dataclass(frozen=True)
class FileHit:
    """A file whose text matched: its text row (with its attachment and message), the
    bm25 score (lower is better; None when not ranked by words) and a snippet of its text."""

    text: AttachmentText
    score: float | None
    snippet: tuple[Segment, ...]


class _Compiler(IndexCompiler):
    """SQL over `t` (the text rows), `f` (their attachments) and `m` (their messages)."""

    def __init__(self, *, now: datetime, analyzer: Analyzer | None) -> None:
        self.now = now
        self.analyzer = analyzer
        self.params: list[str] = []

    def select(self, table: str, match: str) -> str:
        self.params.append(match)
        return f"SELECT rowid FROM {table} WHERE {table} MATCH %s"

    def any_of(self, selects: list[str]) -> str:
        return f"(t.attachment_id IN ({' UNION ALL '.join(selects)}))"

    def term(self, term: Term) -> str:
        if term.kind in WORD_KINDS:
            return self.word_term(term, "attachment_words", "attachment_stems")
        # infix and substring: a scan of the texts left by the other terms
        self.params.append(like_pattern(term.text))
        return "(t.text LIKE %s ESCAPE '\\')"

    def filter(self, node: Filter) -> str:
        if node.name == "content":
            return self.term(file_term(node))
        if node.name == "filename":
            self.params.append(like_pattern(node.value))
            return "(f.file_name LIKE %s ESCAPE '\\')"
        # before, after, on: the days the messages' search means by the date
        sql, params = date_condition(node, "m.sent_at", self.now)
        self.params.extend(params)
        return sql


def file_text_search(*, query: str, limit: int = 20) -> list[FileHit]:
    """The files whose text matches `query`, best first, at most `limit`. Raises Invalid
    (QuerySyntaxError, with its position, for the query itself; a sentence for an operator
    files cannot answer or a bad limit) and nothing else for any input."""
    tree = read_query(query, limit=limit, most=MAX_LIMIT, answered=ANSWERED, refused=REFUSED)
    if tree is None:
        return []
    analyzer = search_reading().file_stems.analyzer
    compiler = _Compiler(now=datetime.now(UTC), analyzer=analyzer)
    where = compiler.node(tree)
    ranking = rank_match(tree)
    params: list[str | int] = []
    sql = ["SELECT t.attachment_id, "]
    if ranking is not None:
        # Scored once, as a table (a subquery would run the MATCH for every candidate).
        sql.insert(
            0,
            "WITH rank AS MATERIALIZED (SELECT rowid, bm25(attachment_words) AS score"
            " FROM attachment_words WHERE attachment_words MATCH %s) ",
        )
        params.append(ranking)
        sql.append("rank.score")
    else:
        sql.append("NULL")
    sql.append(
        " FROM archive_attachmenttext AS t"
        " CROSS JOIN archive_attachment AS f ON f.id = t.attachment_id"
        " CROSS JOIN archive_message AS m ON m.id = f.message_id"
    )
    if ranking is not None:
        sql.append(" LEFT JOIN rank ON rank.rowid = t.attachment_id")
    sql.append(f" WHERE t.state = 'done' AND m.deleted_at IS NULL AND {where}")
    params.extend(compiler.params)
    order = "rank.score IS NULL, rank.score, " if ranking is not None else ""
    sql.append(f" ORDER BY {order}m.sent_at DESC, t.attachment_id DESC LIMIT %s")
    params.append(limit)
    with connection.cursor() as cursor:
        cursor.execute("".join(sql), params)
        rows = cursor.fetchall()
    found = AttachmentText.objects.select_related("attachment__message__chat").in_bulk(
        [row[0] for row in rows]
    )
    marks = highlights(tree, analyzer)
    hits: list[FileHit] = []
    for attachment_id, score in rows:
        row = found.get(attachment_id)
        if row is None:
            continue
        # A file's lines and pages read as one text in a snippet (a page break a space).
        text = " ".join(row.text.split())
        hits.append(
            FileHit(
                text=row,
                score=float(score) if score is not None else None,
                snippet=snippet(text, marks),
            )
        )
    return hits
