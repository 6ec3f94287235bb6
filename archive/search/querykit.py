"""What a search over other documents (notes, meetings) builds from the messages' query language.

Those searches parse with the messages' parser and keep the messages' meaning for a query;
what they share with each other, and with the messages' selector, is here so that it is
written once: a page of hits and its offset cursor, reading a query (the limit checked,
the operators a search refuses), the terms that rank and mark a hit, the FTS5 MATCH of a
word and of its stems, the tree walk that joins a compiled tree's SQL, a word's selects
from a words and a stems index, and a date filter over a time column. They reach it
through `archive.search.selectors`.
"""

from __future__ import annotations

import base64
import binascii
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from archive.search.analyzer import Analyzer
from archive.search.compiler import compile_query, fts_string
from archive.search.parser import Filter, Group, Node, Term, parse
from wirecat.errors import Invalid

WORD_KINDS = ("word", "phrase", "prefix")  # the terms the words index answers
MAX_OFFSET = 1_000_000  # the furthest an offset cursor reaches
_NOT_OURS = "cursor: not a cursor this search gave out"

HitT = TypeVar("HitT")


# --- pages and cursors ---------------------------------------------------------------------


@dataclass
class DocumentPage(Generic[HitT]):
    """A page of hits: the query as given and as parsed (JSON), the hits and the next
    page's cursor."""

    query: str
    parsed: dict[str, Any] | None
    hits: list[HitT] = field(default_factory=list)
    next_cursor: str | None = None
    # Documents wait for their stems (or the stems are being rebuilt): a word's other forms
    # are found only in what the stems index holds; the words as written everywhere.
    stems_behind: bool = False
    # "Did you mean": the query with known words instead, when its first page found little.
    suggestion: str | None = None


def offset_cursor(offset: int, mark: str) -> str:
    """The cursor of a page that starts `offset` hits in; `mark` tells one search's cursors
    from another's."""
    return base64.urlsafe_b64encode(f"{mark}{offset}".encode()).decode().rstrip("=")


def cursor_offset(cursor: str | None, mark: str) -> int:
    """The offset an `offset_cursor` of this `mark` names (0 for none); Invalid for anything
    else."""
    if not cursor:
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii") + b"==").decode("ascii")
        offset = int(raw.removeprefix(mark))
    except (ValueError, binascii.Error, UnicodeError) as exc:
        raise Invalid(_NOT_OURS) from exc
    if not raw.startswith(mark) or not 0 <= offset <= MAX_OFFSET:
        raise Invalid(_NOT_OURS)
    return offset


# --- reading the query --------------------------------------------------------------------


def read_query(
    query: str, *, limit: int, most: int, answered: Collection[str], refused: str
) -> Node | None:
    """The parsed query (None: nothing to search for). Invalid for a limit outside 1 to
    `most`, a query the parser cannot read (QuerySyntaxError, with its position), or an
    operator outside `answered` (`refused`, as for `refuse_filters`)."""
    if not 1 <= limit <= most:
        raise Invalid(f"limit: between 1 and {most}")
    tree = parse(query)
    if tree is not None:
        refuse_filters(tree, answered, refused)
    return tree


def filters(node: Node) -> Iterator[Filter]:
    """Every operator of the tree, in the order written (negated ones too)."""
    if isinstance(node, Group):
        for item in node.items:
            yield from filters(item)
    elif isinstance(node, Filter):
        yield node


def refuse_filters(tree: Node, answered: Collection[str], refused: str) -> None:
    """Raise Invalid(`refused`, its `{name}` the operator's) for the first operator of the
    tree not in `answered`: what only a message has is refused before any SQL is made."""
    for found in filters(tree):
        if found.name not in answered:
            raise Invalid(refused.format(name=found.name))


def positive_terms(node: Node) -> list[Term]:
    """The terms a hit is shown for: every term outside a negation."""
    if isinstance(node, Group):
        if node.negated:
            return []
        return [term for item in node.items for term in positive_terms(item)]
    if isinstance(node, Filter) or node.negated:
        return []
    return [node]


def highlights(tree: Node, analyzer: Analyzer | None) -> list[str]:
    """The messages' snippet patterns for the tree's positive terms (and, with an analyzer,
    their stems)."""
    terms = positive_terms(tree)
    if not terms:
        return []
    return compile_query(Group("and", tuple(terms)), analyzer=analyzer).highlights


# --- MATCH strings -----------------------------------------------------------------------


def term_match(term: Term) -> str:
    """The words-index MATCH of a word, phrase or prefix term (its negation aside)."""
    return fts_string(term.text) + ("*" if term.kind == "prefix" else "")


def word_match(node: Node) -> str | None:
    """The words-index MATCH of a positive word, phrase or prefix; None for anything else."""
    if not isinstance(node, Term) or node.negated or node.kind not in WORD_KINDS:
        return None
    return term_match(node)


def rank_match(node: Node) -> str | None:
    """What bm25 ranks by: the positive words of a top-level AND, or of a word-only OR."""
    if not isinstance(node, Group):
        return word_match(node)
    if node.negated:
        return None
    parts = [word_match(item) for item in node.items]
    if node.op == "and":
        found = [part for part in parts if part]
        return " AND ".join(found) if found else None
    if all(parts):
        return " OR ".join(part for part in parts if part)
    return None


def stem_alternatives(node: Node, analyzer: Analyzer | None) -> str | None:
    """The stems-index MATCH of a plain word (`"stem1" OR "stem2"`); None for exact:,
    phrases, prefixes and whatever the analyzer does not stem."""
    if analyzer is None or not isinstance(node, Term):
        return None
    if node.kind != "word" or node.exact:
        return None
    stems = analyzer.word_stems(node.text)
    return " OR ".join(fts_string(stem) for stem in stems) if stems else None


# --- compiling -----------------------------------------------------------------------------


class NodeCompiler(ABC):
    """SQL for a parsed tree: groups joined, negations applied, bound values gathered in
    `params`; a subclass says what a term and an operator are over its own tables."""

    params: list[str]

    def node(self, node: Node) -> str:
        if isinstance(node, Group):
            joiner = " AND " if node.op == "and" else " OR "
            sql = "(" + joiner.join(self.node(item) for item in node.items) + ")"
        elif isinstance(node, Filter):
            sql = self.filter(node)
        else:
            sql = self.term(node)
        return f"NOT {sql}" if node.negated else sql

    @abstractmethod
    def term(self, term: Term) -> str: ...

    @abstractmethod
    def filter(self, node: Filter) -> str: ...


class IndexCompiler(NodeCompiler):
    """A compiler whose terms are sets of index rows: `select` is one index's MATCH over
    the compiler's documents, `any_of` the documents any of those selects holds."""

    analyzer: Analyzer | None

    @abstractmethod
    def select(self, table: str, match: str) -> str: ...

    @abstractmethod
    def any_of(self, selects: list[str]) -> str: ...

    def word_term(self, term: Term, words: str, stems: str) -> str:
        """A word, phrase or prefix: its matches in the `words` index or, for a word the
        analyzer stems, in the `stems` index."""
        selects = [self.select(words, term_match(term))]
        alternatives = stem_alternatives(term, self.analyzer)
        if alternatives:
            selects.append(self.select(stems, alternatives))
        return self.any_of(selects)


def date_condition(node: Filter, column: str, now: datetime) -> tuple[str, list[str]]:
    """`before:`, `after:` or `on:` over `column` (a time as the store holds it), and its
    bound values. The messages' compiler reads the date (its parameters are the day range's
    [start, end)), so one query means the same days in every search."""
    bounds = compile_query(Filter(node.name, node.value), now=now).params
    if node.name == "before":
        return f"({column} < %s)", [bounds[0]]
    if node.name == "after":
        return f"({column} >= %s)", [bounds[0]]
    return f"({column} >= %s AND {column} < %s)", list(bounds[:2])
