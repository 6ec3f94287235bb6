"""Reading the Ubuntu IRC disentanglement corpus (Kummerfeld et al., ACL 2019, CC-BY-4.0):
the logs the rules are trained on and measured with.

Each sample is `<stem>.raw.txt` (one line per message: `[HH:MM] <nick> text`,
`[HH:MM]  * nick action`, or `=== …` system lines) and `<stem>.annotation.txt` (`parent child
-`, 0-based line numbers; `A A -` starts a conversation; a line may have several parents;
the first 1,000 lines are context, not annotated).

The split: samples are sorted by stem; every fifth (index 4, 9, 14, …) is **held out** for
measuring and never read by training.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_MESSAGE = re.compile(r"^\[(\d\d):(\d\d)\] <([^>]*)> ?(.*)$")
_ACTION = re.compile(r"^\[(\d\d):(\d\d)\]  \* (\S+) ?(.*)$")
_STAMP = re.compile(r"^\[(\d\d):(\d\d)\]")
HELD_OUT_EVERY = 5


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of a log: `minute` since the log's midnight (None for a system line, which
    has no time), `nick` ("" for a system line), the text (an action keeps its nick first,
    as IRC shows it)."""

    number: int
    minute: int | None
    nick: str
    text: str
    system: bool = False
    action: bool = False


@dataclass
class Sample:
    stem: str
    date: str  # YYYY-MM-DD
    hour: int  # the hour the log starts at when the file name says (`_HH`), else 0
    lines: list[LogLine]
    # child line -> its gold parents (a line that starts a conversation is its own parent)
    parents: dict[int, set[int]] = field(default_factory=dict)


def log_line(number: int, raw: str) -> LogLine:
    raw = raw.rstrip("\n")
    found = _MESSAGE.match(raw)
    if found:
        hh, mm, nick, text = found.groups()
        return LogLine(number, int(hh) * 60 + int(mm), nick, text)
    found = _ACTION.match(raw)
    if found:
        hh, mm, nick, text = found.groups()
        return LogLine(number, int(hh) * 60 + int(mm), nick, f"{nick} {text}".strip(), action=True)
    stamp = _STAMP.match(raw)
    minute = int(stamp.group(1)) * 60 + int(stamp.group(2)) if stamp else None
    return LogLine(number, minute, "", raw.removeprefix("=== ").strip(), system=True)


def sample_read(raw_path: Path) -> Sample:
    stem = raw_path.name.removesuffix(".raw.txt")
    date = stem[:10]
    hour_match = re.match(r"^\d{4}-\d\d-\d\d_(\d\d)", stem)
    with raw_path.open(encoding="utf-8", errors="replace") as handle:
        lines = [log_line(i, raw) for i, raw in enumerate(handle)]
    sample = Sample(stem, date, int(hour_match.group(1)) if hour_match else 0, lines)
    annotation = raw_path.with_name(f"{stem}.annotation.txt")
    if annotation.exists():
        for raw in annotation.read_text(encoding="utf-8").splitlines():
            parts = raw.split()
            if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
                parent, child = int(parts[0]), int(parts[1])
                sample.parents.setdefault(child, set()).add(parent)
    return sample


def samples(directory: Path, *, part: str) -> Iterator[Sample]:
    """The samples of `part`: "train" (four in five), "held-out" (the fifth), or "all"."""
    paths = sorted(directory.glob("*.raw.txt"))
    for index, path in enumerate(paths):
        held = index % HELD_OUT_EVERY == HELD_OUT_EVERY - 1
        if part == "all" or (part == "held-out") == held:
            yield sample_read(path)
