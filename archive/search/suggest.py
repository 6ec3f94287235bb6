""" "Did you mean": the known terms closest to the words of a query that finds little."""

from __future__ import annotations

import re

from django.db import connection
from django.db.backends.utils import CursorWrapper

from archive.search.compiler import fts_string
from archive.search.parser import Group, Node, Term

CANDIDATES = 300


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


def _known(cursor: CursorWrapper, word: str) -> bool:
    cursor.execute("SELECT doc FROM message_fts_vocab WHERE term = %s", [word])
    return cursor.fetchone() is not None


def _closest(cursor: CursorWrapper, word: str) -> str | None:
    """Candidates: terms sharing a trigram with the word (a typo late in it), and terms of
    a like length sharing its first two letters (two swapped letters share no trigram)."""
    trigrams = {word[i : i + 3] for i in range(len(word) - 2)}
    if not trigrams:
        return None
    match = " OR ".join(fts_string(trigram) for trigram in sorted(trigrams))
    cursor.execute(
        "SELECT term, docs FROM search_terms WHERE search_terms MATCH %s ORDER BY rank LIMIT %s",
        [match, CANDIDATES],
    )
    candidates = list(cursor.fetchall())
    head = word[:2]
    if ord(head[-1]) < 0x10FFFF:
        cursor.execute(
            "SELECT term, doc FROM message_fts_vocab WHERE term >= %s AND term < %s"
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


def did_you_mean(query: str, tree: Node | None) -> str | None:
    """The query with each unknown word replaced by the closest known term (None when no
    word is unknown or nothing close is known)."""
    words = [word for word in _positive_words(tree) if len(word) >= 3]
    if not words:
        return None
    suggestion = query
    changed = False
    with connection.cursor() as cursor:
        for word in dict.fromkeys(words):
            folded = word.lower()
            if _known(cursor, folded):
                continue
            better = _closest(cursor, folded)
            if better is None:
                continue
            suggestion = re.sub(
                rf"(?<![\w:*\"-]){re.escape(word)}(?![\w*])", better, suggestion, count=1
            )
            changed = True
    return suggestion if changed and suggestion != query else None
