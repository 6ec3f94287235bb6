"""Cutting text into chunks, and cutting it again the same way (pure: no store).

Lines (a conversation's messages, a transcript's segments) are gathered whole into chunks
of at most `limit` characters; a line longer than that becomes pieces of its own, each
`limit` long at most and overlapping the one before by `OVERLAP`, cut at a space where one
is near. A document (a note's body, a file's text) is cut at paragraph breaks the same way.
Every reader rebuilds a chunk's text with `lines_text` or `document_text`, so the text an
embedding was made of and the text a search checks are the same string.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

OVERLAP = 100  # characters a piece of a long text repeats of the one before
_BREAK = re.compile(r"\n\s*\n")


def text_sha(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True)
class Piece:
    """A chunk before it is stored: the first and last line it holds (ids in the source's
    order), and for a piece of one long line or of a document, the stretch of text it holds
    (`text_end` 0: the lines whole)."""

    first_id: int
    last_id: int
    text_start: int
    text_end: int
    text: str


def spans(text: str, limit: int) -> list[tuple[int, int]]:
    """[start, end) stretches of `text` at most `limit` long covering it, each after the
    first starting `OVERLAP` characters before the last one ended, cut at a space where one
    lies in the last fifth of the stretch."""
    limit = max(limit, 2 * OVERLAP)
    found: list[tuple[int, int]] = []
    start = 0
    while True:
        end = min(start + limit, len(text))
        if end < len(text):
            space = text.rfind(" ", start + limit * 4 // 5, end)
            if space > start:
                end = space
        found.append((start, end))
        if end >= len(text):
            return found
        start = max(end - OVERLAP, start + 1)


def cut_lines(lines: Sequence[tuple[int, str]], limit: int) -> list[Piece]:
    """Chunks of (id, text) lines in their order; empty lines are in a chunk's range but
    add no text."""
    pieces: list[Piece] = []
    first: int | None = None
    last = 0
    texts: list[str] = []
    size = 0

    def flush() -> None:
        nonlocal first, texts, size
        if first is not None and texts:
            pieces.append(Piece(first, last, 0, 0, "\n".join(texts)))
        first, texts, size = None, [], 0

    for line_id, text in lines:
        text = text.strip()
        if len(text) > limit:
            flush()
            for start, end in spans(text, limit):
                pieces.append(Piece(line_id, line_id, start, end, text[start:end]))
            continue
        if texts and size + 1 + len(text) > limit:
            flush()
        if first is None:
            first = line_id
        last = line_id
        if text:
            texts.append(text)
            size += len(text) + (1 if size else 0)
    flush()
    return pieces


def lines_text(
    lines: Sequence[tuple[int, str]], first_id: int, last_id: int, text_start: int, text_end: int
) -> str | None:
    """The text of the chunk from `first_id` to `last_id` of `lines` (in order), as
    `cut_lines` made it; None when either end is no longer among the lines."""
    ids = [line_id for line_id, _ in lines]
    try:
        begin, end = ids.index(first_id), ids.index(last_id)
    except ValueError:
        return None
    if text_end:
        return lines[begin][1].strip()[text_start:text_end]
    return "\n".join(t for _, text in lines[begin : end + 1] if (t := text.strip()))


def cut_document(text: str, limit: int) -> list[tuple[int, int]]:
    """[start, end) stretches of a document, whole paragraphs gathered up to `limit`
    characters, a longer paragraph cut into overlapping pieces."""
    found: list[tuple[int, int]] = []
    start: int | None = None
    end = 0
    position = 0
    paragraphs: list[tuple[int, int]] = []
    for brk in _BREAK.finditer(text):
        paragraphs.append((position, brk.start()))
        position = brk.end()
    paragraphs.append((position, len(text)))
    for p_start, p_end in paragraphs:
        if p_end - p_start > limit:
            if start is not None:
                found.append((start, end))
                start = None
            found.extend((p_start + s, p_start + e) for s, e in spans(text[p_start:p_end], limit))
            continue
        if start is not None and p_end - start > limit:
            found.append((start, end))
            start = None
        if start is None:
            start = p_start
        end = p_end
    if start is not None and end > start:
        found.append((start, end))
    return [(s, e) for s, e in found if text[s:e].strip()]


def document_text(title: str, text: str, start: int, end: int) -> str:
    """The text of a document's chunk: its title (a note's, a file's name), then the
    stretch."""
    body = text[start:end].strip()
    return f"{title.strip()}\n\n{body}" if title.strip() else body
