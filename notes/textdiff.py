"""Two texts compared, for people: a revision against the one before (lines, with the words
that changed inside a changed line), and the two sides of a conflict merged over the text
both were edited from. Pure text; the templates escape what they show."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

CONTEXT = 3  # unchanged lines kept around a change
LINES_MAX = 20_000  # a longer text is compared in its first lines only
_WORDS = re.compile(r"\s+|\w+|[^\w\s]")


@dataclass(frozen=True)
class Piece:
    text: str
    changed: bool


@dataclass(frozen=True)
class DiffLine:
    """One line of a diff: "same", "old" (taken out) or "new" (put in); `skipped` > 0 for
    a fold of that many unchanged lines."""

    kind: str
    pieces: tuple[Piece, ...] = ()
    old_number: int | None = None
    new_number: int | None = None
    skipped: int = 0


@dataclass(frozen=True)
class Diff:
    lines: list[DiffLine]
    added: int
    removed: int
    truncated: bool

    @property
    def same(self) -> bool:
        return not self.added and not self.removed


def _words(old: str, new: str) -> tuple[tuple[Piece, ...], tuple[Piece, ...]]:
    """The two lines cut into pieces, the words that differ marked."""
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    before: list[Piece] = []
    after: list[Piece] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            before.append(Piece("".join(a[i1:i2]), False))
            after.append(Piece("".join(b[j1:j2]), False))
        else:
            if i2 > i1:
                before.append(Piece("".join(a[i1:i2]), True))
            if j2 > j1:
                after.append(Piece("".join(b[j1:j2]), True))
    return tuple(before), tuple(after)


def _whole(text: str) -> tuple[Piece, ...]:
    return (Piece(text, False),)


def text_diff(old: str, new: str, *, context: int = CONTEXT) -> Diff:
    """`old` → `new` line by line, unchanged runs folded down to `context` lines around
    each change; a replaced line pairs with its new form, its changed words marked."""
    a, b = old.splitlines(), new.splitlines()
    truncated = len(a) > LINES_MAX or len(b) > LINES_MAX
    a, b = a[:LINES_MAX], b[:LINES_MAX]
    out: list[DiffLine] = []
    added = removed = 0
    opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            run = i2 - i1
            head = 0 if index == 0 else context
            tail = 0 if index == len(opcodes) - 1 else context
            if run > head + tail + 1:
                shown = [*range(head), *range(run - tail, run)]
                for k in range(head):
                    out.append(DiffLine("same", _whole(a[i1 + k]), i1 + k + 1, j1 + k + 1))
                out.append(DiffLine("fold", skipped=run - head - tail))
                for k in shown[head:]:
                    out.append(DiffLine("same", _whole(a[i1 + k]), i1 + k + 1, j1 + k + 1))
            else:
                for k in range(run):
                    out.append(DiffLine("same", _whole(a[i1 + k]), i1 + k + 1, j1 + k + 1))
            continue
        removed += i2 - i1
        added += j2 - j1
        olds, news = a[i1:i2], b[j1:j2]
        paired = min(len(olds), len(news)) if tag == "replace" else 0
        marked = [_words(olds[k], news[k]) for k in range(paired)]
        for k, line in enumerate(olds):
            pieces = marked[k][0] if k < paired else _whole(line)
            out.append(DiffLine("old", pieces, old_number=i1 + k + 1))
        for k, line in enumerate(news):
            pieces = marked[k][1] if k < paired else _whole(line)
            out.append(DiffLine("new", pieces, new_number=j1 + k + 1))
    return Diff(out, added, removed, truncated)


# --- a conflict, merged -------------------------------------------------------------------

MINE = "<<<<<<< yours"
BETWEEN = "======="
THEIRS = ">>>>>>> saved"


@dataclass(frozen=True)
class Merge:
    text: str
    conflicts: int


def _changes(base: list[str], other: list[str]) -> list[tuple[int, int, list[str]]]:
    """What `other` did to `base`: (start, end, new lines) for each changed range."""
    matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
    return [
        (i1, i2, other[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
    ]


def _side(
    base: list[str], start: int, end: int, changes: list[tuple[int, int, list[str]]]
) -> list[str]:
    """base[start:end] with one side's changes in that range made."""
    lines: list[str] = []
    at = start
    for c_start, c_end, new in changes:
        lines.extend(base[at:c_start])
        lines.extend(new)
        at = c_end
    lines.extend(base[at:end])
    return lines


def merge(base: str, yours: str, saved: str) -> Merge:
    """Both edits of `base` in one text: a range only one side changed takes that side's
    lines; where both changed the same or touching lines differently, both are kept
    between markers (`<<<<<<< yours` … `=======` … `>>>>>>> saved`) for the owner to
    choose."""
    b = base.splitlines()
    changes = sorted(
        [(start, end, new, "yours") for start, end, new in _changes(b, yours.splitlines())]
        + [(start, end, new, "saved") for start, end, new in _changes(b, saved.splitlines())],
        key=lambda c: (c[0], c[1]),
    )
    out: list[str] = []
    conflicts = 0
    position = 0
    index = 0
    while index < len(changes):
        start, end = changes[index][0], changes[index][1]
        group = [changes[index]]
        index += 1
        # Changes of the other side that overlap or touch this range join it.
        while index < len(changes) and changes[index][0] <= end:
            group.append(changes[index])
            end = max(end, changes[index][1])
            index += 1
        out.extend(b[position:start])
        mine = [(s, e, new) for s, e, new, who in group if who == "yours"]
        theirs = [(s, e, new) for s, e, new, who in group if who == "saved"]
        mine_lines, theirs_lines = _side(b, start, end, mine), _side(b, start, end, theirs)
        if not theirs or mine_lines == theirs_lines:
            out.extend(mine_lines)
        elif not mine:
            out.extend(theirs_lines)
        else:
            conflicts += 1
            out.extend([MINE, *mine_lines, BETWEEN, *theirs_lines, THEIRS])
        position = end
    out.extend(b[position:])
    ending = "\n" if out and (yours.endswith("\n") or saved.endswith("\n")) else ""
    return Merge("\n".join(out) + ending, conflicts)
