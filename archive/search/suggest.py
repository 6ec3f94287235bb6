""" "Did you mean": the known terms closest to the words of a query that finds little.

A `Vocabulary` names where the known terms are: the messages' (`MESSAGES`, the default) or
another words index's, such as the meetings' (`meetings.search`), so both searches suggest
the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import connection
from django.db.backends.utils import CursorWrapper

from archive.search.compiler import fts_string
from archive.search.parser import Group, Node, Term

CANDIDATES = 300
_TABLE = re.compile(r"[a-z_][a-z0-9_]*")


@dataclass(frozen=True)
class Vocabulary:
    """The known terms: `terms`, an fts5vocab table (`row`) over a words index; `trigrams`,
    a trigram-indexed snapshot of them (columns `term`, `docs`), or None when the index has
    none: candidates then come from the terms sharing the word's first two letters, also
    swapped, or with the second left out (a typo in the first two letters otherwise goes
    unnoticed)."""

    terms: str
    trigrams: str | None = None

    def __post_init__(self) -> None:
        # Names go into the SQL text (they cannot be bound): table names only.
        for name in (self.terms, self.trigrams):
            if name is not None and not _TABLE.fullmatch(name):
                raise ValueError(f"not a table name: {name!r}")


MESSAGES = Vocabulary(terms="message_fts_vocab", trigrams="search_terms")


def edit_distance(a: str, b: str, limit: int) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`, or
    `limit + 1` as soon as it is certain to exceed `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                cost = min(cost, before[j - 2] + 1)  # "ia" for "ai": one swap
            current.append(cost)
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return previous[-1]


def _positive_words(node: Node | None) -> list[str]:
    if node is None:
        return []
    if isinstance(node, Term):
        if node.kind == "word" and not node.negated and not node.exact:
            return [node.text]
        return []
    if isinstance(node, Group) and not node.negated:
        return [word for item in node.items for word in _positive_words(item)]
    return []


def _known(cursor: CursorWrapper, vocabulary: Vocabulary, word: str) -> bool:
    cursor.execute(f"SELECT doc FROM {vocabulary.terms} WHERE term = %s", [word])
    return cursor.fetchone() is not None


def _closest(cursor: CursorWrapper, vocabulary: Vocabulary, word: str) -> str | None:
    """Candidates: terms sharing a trigram with the word (a typo late in it), and terms of
    a like length sharing its first two letters (two swapped letters share no trigram)."""
    trigrams = {word[i : i + 3] for i in range(len(word) - 2)}
    if not trigrams:
        return None
    candidates: list[tuple[str, int]] = []
    heads = [word[:2]]
    if vocabulary.trigrams is not None:
        match = " OR ".join(fts_string(trigram) for trigram in sorted(trigrams))
        cursor.execute(
            f"SELECT term, docs FROM {vocabulary.trigrams} WHERE {vocabulary.trigrams}"
            " MATCH %s ORDER BY rank LIMIT %s",
            [match, CANDIDATES],
        )
        candidates.extend(cursor.fetchall())
    else:
        heads.extend([word[1] + word[0], word[0] + word[2]])
    for head in dict.fromkeys(heads):
        if ord(head[-1]) >= 0x10FFFF:
            continue
        cursor.execute(
            f"SELECT term, doc FROM {vocabulary.terms} WHERE term >= %s AND term < %s"
            " AND length(term) BETWEEN %s AND %s LIMIT %s",
            [head, head[:-1] + chr(ord(head[-1]) + 1), len(word) - 2, len(word) + 2, CANDIDATES],
        )
        candidates.extend(cursor.fetchall())
    limit = 1 if len(word) <= 5 else 2
    best: tuple[int, int, str] | None = None
    for term, docs in candidates:
        distance = edit_distance(word, term, limit)
        if distance <= limit and term != word:
            key = (distance, -int(docs), term)
            if best is None or key < best:
                best = key
    return best[2] if best else None


def did_you_mean(query: str, tree: Node | None, vocabulary: Vocabulary = MESSAGES) -> str | None:
    """The query with each unknown word replaced by the closest term known to `vocabulary`
    (None when no word is unknown or nothing close is known)."""
    words = [word for word in _positive_words(tree) if len(word) >= 3]
    if not words:
        return None
    suggestion = query
    changed = False
    with connection.cursor() as cursor:
        for word in dict.fromkeys(words):
            folded = word.lower()
            if _known(cursor, vocabulary, folded):
                continue
            better = _closest(cursor, vocabulary, folded)
            if better is None:
                continue
            suggestion = re.sub(
                rf"(?<![\w:*\"-]){re.escape(word)}(?![\w*])", better, suggestion, count=1
            )
            changed = True
    return suggestion if changed and suggestion != query else None
