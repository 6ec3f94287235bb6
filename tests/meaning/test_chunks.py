"""Cutting text into chunks, pure: lines are kept whole up to the limit, a long line becomes
overlapping pieces that cover it, and the text of every chunk is rebuilt exactly by
`lines_text`; a document is cut at paragraph breaks; `spans` covers its text."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from archive.meaning.chunks import (
    OVERLAP,
    Piece,
    cut_document,
    cut_lines,
    document_text,
    lines_text,
    spans,
    text_sha,
)

# Words, spaces, line and paragraph breaks, and letters outside ASCII.
ALPHABET = st.sampled_from([*list("abcdefgh ñжé"), " ", " ", "\n", "\n\n", "  \n"])
TEXTS = st.lists(ALPHABET, max_size=900).map("".join)
LIMITS = st.integers(min_value=2 * OVERLAP, max_value=500)


@st.composite
def conversations(draw: st.DrawFn) -> list[tuple[int, str]]:
    """(id, text) lines in order, ids growing with gaps; some empty, some long."""
    texts = draw(st.lists(TEXTS, max_size=12))
    ids = draw(st.lists(st.integers(1, 5), min_size=len(texts), max_size=len(texts)))
    found, at = [], 0
    for step, text in zip(ids, texts, strict=True):
        at += step
        found.append((at, text))
    return found


def _whole(piece: Piece) -> bool:
    return piece.text_end == 0


def _covered(stretches: list[tuple[int, int]], length: int) -> bool:
    """Each stretch starts where the one before ended or inside it; the last ends at the end."""
    if not stretches:
        return length == 0
    at = 0
    for start, end in stretches:
        if start > at or end <= start:
            return False
        at = end
    return at == length and stretches[0][0] == 0


@hypothesis_settings(max_examples=300, deadline=None)
@given(lines=conversations(), limit=LIMITS)
def test_cut_lines_keeps_lines_whole_splits_long_ones_and_is_rebuilt_exactly(
    lines: list[tuple[int, str]], limit: int
) -> None:
    pieces = cut_lines(lines, limit)
    for piece in pieces:
        assert 0 < len(piece.text) <= limit
        # Every reader rebuilds the very text that was cut (so its hash matches).
        rebuilt = lines_text(lines, piece.first_id, piece.last_id, piece.text_start, piece.text_end)
        assert rebuilt == piece.text and text_sha(rebuilt) == text_sha(piece.text)
    by_id = dict(lines)
    for line_id, text in lines:
        text = text.strip()
        if not text:
            continue
        holding = [p for p in pieces if p.first_id <= line_id <= p.last_id]
        if len(text) <= limit:
            # A short line is whole in exactly one chunk of whole lines.
            assert len(holding) == 1 and _whole(holding[0])
            assert text in holding[0].text
        else:
            # A long line: pieces of its own that overlap and cover it, in order.
            assert all(not _whole(p) and p.first_id == p.last_id == line_id for p in holding)
            stretches = [(p.text_start, p.text_end) for p in holding]
            assert _covered(stretches, len(text))
            assert all(p.text == by_id[line_id].strip()[p.text_start : p.text_end] for p in holding)
    # The chunks follow the lines' order and never share a line.
    ranges = [(p.first_id, p.last_id) for p in pieces if _whole(p)]
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges))


def test_lines_are_gathered_up_to_the_limit_and_empty_ones_add_nothing() -> None:
    lines = [(1, "a" * 120), (2, "   "), (3, "b" * 70), (4, "c" * 90), (5, "d" * 10)]
    pieces = cut_lines(lines, 200)
    assert [(p.first_id, p.last_id, p.text) for p in pieces] == [
        (1, 3, "a" * 120 + "\n" + "b" * 70),
        (4, 5, "c" * 90 + "\n" + "d" * 10),
    ]
    # A chunk whose first or last line is gone (a message tombstoned) cannot be rebuilt.
    assert lines_text([line for line in lines if line[0] != 3], 1, 3, 0, 0) is None


def test_a_long_line_is_cut_at_spaces_into_overlapping_pieces() -> None:
    words = " ".join(f"word{n:03d}" for n in range(100))  # 799 characters
    pieces = cut_lines([(7, "short first"), (8, words), (9, "short last")], 300)
    assert pieces[0].text == "short first" and pieces[-1].text == "short last"
    long = pieces[1:-1]
    assert len(long) >= 3 and all(p.first_id == p.last_id == 8 for p in long)
    for before, after in itertools.pairwise(long):
        assert words[before.text_end] == " "  # cut at a space, not inside a word
        assert before.text_end - after.text_start == OVERLAP
    assert long[0].text_start == 0 and long[-1].text_end == len(words)


@hypothesis_settings(max_examples=300, deadline=None)
@given(text=TEXTS.filter(bool), limit=LIMITS)
def test_spans_cover_the_text_in_overlapping_stretches(text: str, limit: int) -> None:
    found = spans(text, limit)
    assert _covered(found, len(text))
    assert all(end - start <= limit for start, end in found)
    starts = [start for start, _ in found]
    assert starts == sorted(set(starts))


@hypothesis_settings(max_examples=300, deadline=None)
@given(text=TEXTS, limit=LIMITS)
def test_cut_document_covers_every_word_within_the_limit(text: str, limit: int) -> None:
    found = cut_document(text, limit)
    assert all(0 <= start < end <= len(text) and end - start <= limit for start, end in found)
    assert all(text[start:end].strip() for start, end in found)
    for at, char in enumerate(text):
        if not char.isspace():
            assert any(start <= at < end for start, end in found), at


def test_a_document_is_cut_at_paragraph_breaks() -> None:
    first, second, third = "a" * 300, "b" * 300, "c" * 300
    text = f"{first}\n\n{second}\n\n{third}"
    assert cut_document(text, 800) == [(0, 602), (604, 904)]
    assert document_text("Plans", text, 604, 904) == f"Plans\n\n{third}"
    assert document_text("  ", text, 0, 300) == first
    # A paragraph longer than the limit is cut into overlapping pieces of its own.
    long = "x " * 500
    text = f"intro\n\n{long}\n\noutro"
    found = cut_document(text, 300)
    assert found[0] == (0, 5) and found[-1] == (len(text) - 5, len(text))
    middle = found[1:-1]
    assert len(middle) >= 4 and middle[0][0] == 7
    assert all(b[0] < a[1] for a, b in itertools.pairwise(middle))
