"""What the transcript readers share: the text of the bytes, the problems gathered as
sentences, the `Name: words` speaker convention, a cue's text cap, and the finishing pass
(ends before starts, overlaps, order).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import PurePath, PureWindowsPath

from archive.connectors.kept_whole import TEXT_SETTING
from meetings.domain import SegmentRecord

# Problem sentences kept per file; past it, one sentence counts the rest.
MAX_PROBLEMS = 50

_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def file_name(source: str) -> str:
    """The name a problem sentence gives the file: `source` without its folders."""
    return PurePath(PureWindowsPath(source).name).name or source or "transcript"


def decode(data: bytes) -> tuple[str, str | None]:
    """The text of a transcript's bytes, and a problem sentence's tail when it was not
    UTF-8. A UTF-8 BOM is dropped; UTF-16 with a BOM (Windows tools write SRT so) is read
    as such; other bytes that are not UTF-8 are read as Windows-1252, the usual encoding
    of old SRT files, and said so."""
    if data.startswith(_UTF16_BOMS):
        even = data[: len(data) - len(data) % 2]
        return even.decode("utf-16", errors="replace"), None
    try:
        return data.decode("utf-8").removeprefix("\ufeff"), None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        problem = (
            f"line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x}); the file was read "
            "as Windows-1252"
        )
        return data.decode("cp1252", errors="replace").removeprefix("\ufeff"), problem


@dataclass
class Problems:
    """Problem sentences for one file, each naming it: "talk.vtt, line 12: …"."""

    name: str
    sentences: list[str] = field(default_factory=list)
    more: int = 0

    def add(self, where: str | None, what: str) -> None:
        """One problem at `where` (a line or cue); one about the whole file (`where` None,
        a few at most: a summary) is always listed."""
        if where is not None and len(self.sentences) >= MAX_PROBLEMS:
            self.more += 1
            return
        prefix = f"{self.name}, {where}" if where else self.name
        self.sentences.append(f"{prefix}: {what}")

    def result(self) -> tuple[str, ...]:
        if not self.more:
            return tuple(self.sentences)
        tail = f"{self.name}: {self.more} more problems like these were not listed"
        return (*self.sentences, tail)


@dataclass(frozen=True)
class Cue:
    """A cue as read, before the finishing pass: where it is, for the problem sentences."""

    start_ms: int
    end_ms: int
    text: str
    speaker: str = ""
    where: str = ""  # "cue 4 (line 15)"


# --- text ----------------------------------------------------------------------------------

_SPACES = re.compile(r"[ \t\u00a0]+")


def clean_lines(text: str) -> list[str]:
    """A cue's lines, entities unescaped (`&amp;`, `&nbsp;`), spaces folded, blank lines
    dropped."""
    lines = (_SPACES.sub(" ", html.unescape(line)).strip() for line in text.split("\n"))
    return [line for line in lines if line]


# `Name: words` at the start of a cue (Zoom cloud recordings; many SRT files). A name is
# short, on the first line, and is not a link or a time ("https://", "10:30").
_SPEAKER = re.compile(
    r"^(?P<name>[^\s:<>\[\]{}\"][^:<>\[\]{}\"]{0,79}?):[ \t]+(?P<text>\S.*)$", re.S
)
_NOT_A_NAME = re.compile(r"https?$|^\d+$|\s\S+\s\S+\s\S+\s\S+\s\S+\s")


def speaker_prefix(text: str) -> tuple[str, str] | None:
    """(speaker, the rest) when the text starts with a plausible `Name: `."""
    match = _SPEAKER.match(text)
    if match is None:
        return None
    name = match["name"].strip()
    if "\n" in name or _NOT_A_NAME.search(name):
        return None
    return name, match["text"].strip()


def speakers_convention(texts: list[str]) -> bool:
    """Whether a file writes its speakers as `Name: words`: most of its cues do (a lone
    "Note: …" in a film's subtitles is not a speaker)."""
    with_text = [text for text in texts if text]
    if not with_text:
        return False
    prefixed = sum(speaker_prefix(text) is not None for text in with_text)
    return prefixed * 2 > len(with_text)


def split_long(text: str, limit: int) -> list[str]:
    """`text` in pieces of at most `limit` characters, cut at a space where there is one."""
    pieces: list[str] = []
    while len(text) > limit:
        cut = text.rfind(" ", limit // 2, limit + 1)
        cut = cut if cut > 0 else limit
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return pieces


def ms_text(ms: int) -> str:
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}"


# --- the finishing pass --------------------------------------------------------------------


def finish(cues: list[Cue], problems: Problems, text_limit: int) -> tuple[SegmentRecord, ...]:
    """The segments of `cues`: a cue ending before it starts is kept with its end set to
    its start; overlapping or out-of-order cues are all kept, ordered by start (one
    sentence says how many); a cue's text past `text_limit` characters is kept whole, as
    several segments with the cue's times."""
    segments: list[SegmentRecord] = []
    overlaps = 0
    first_overlap = ""
    previous: Cue | None = None
    for cue in cues:
        start, end = cue.start_ms, cue.end_ms
        if end < start:
            problems.add(
                cue.where,
                f"ends ({ms_text(end)}) before it starts ({ms_text(start)}); "
                "kept with its end set to its start",
            )
            end = start
        # The voices of one cue share its times: only another cue overlaps.
        if previous is not None and previous.where != cue.where and start < previous.end_ms:
            overlaps += 1
            first_overlap = first_overlap or cue.where
        previous = Cue(start, end, cue.text, cue.speaker, cue.where)
        pieces = [cue.text] if len(cue.text) <= text_limit else split_long(cue.text, text_limit)
        if len(pieces) > 1:
            problems.add(
                cue.where,
                f"its text has {len(cue.text):,} characters, more than {text_limit:,} "
                f"({TEXT_SETTING}); kept whole as {len(pieces)} segments with the cue's times",
            )
        segments.extend(SegmentRecord(start, end, piece, cue.speaker) for piece in pieces)
    if overlaps:
        plural = "cues start" if overlaps > 1 else "cue starts"
        problems.add(
            None,
            f"{overlaps} {plural} before the cue above ended, the first being {first_overlap}; "
            "all were kept, ordered by their start",
        )
    # sorted() is stable: cues starting together keep the file's order.
    return tuple(sorted(segments, key=lambda segment: segment.start_ms))
