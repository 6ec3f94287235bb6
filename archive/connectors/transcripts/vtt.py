"""WebVTT, read with webvtt-py: Teams, Zoom cloud recordings, YouTube auto-captions and
plain captions.

- Voice tags `<v Name>` (`<v.loud Name>` too) give the speaker; a cue where several voices
  speak in turn becomes one segment per voice, with the cue's times.
- Cue settings after the timing (`align:start position:10%`), class, italic and timestamp
  tags inside cues (`<c.yellow>`, `<i>`, `<00:00:01.500>`) are the library's to read and
  strip; character references (`&amp;`, `&nbsp;`) are unescaped here.
- Unpadded times (`1:02:03.000`, `02:03.000`) are read by the library as written.
- Teams: speakers as voice tags, NOTE blocks (`NOTE language:en-us` gives the language),
  GUID cue identifiers. Zoom cloud recordings: `Name: words` gives the speaker, when most
  cues of the file are written so.
- YouTube auto-captions roll: each cue repeats the line the cue before ended with, and a
  10 ms cue between them repeats it once more. When most cues begin with the previous
  cue's last line, those repeats are collapsed, so each phrase is one segment with the
  times of the cue it first appeared in.
- A timing line the library cannot read (`00:00:05,000 -> 00:00:06`) loses its cue: the
  library skips such blocks silently, so the arrow lines are matched to the cues it read,
  and each one left over becomes a problem naming its line.
"""

from __future__ import annotations

import re
from itertools import pairwise

import webvtt
from webvtt.errors import MalformedCaptionError, MalformedFileError
from webvtt.models import Timestamp
from webvtt.vtt import WebVTTCueBlock

from archive.connectors.transcripts.common import (
    Cue,
    Problems,
    clean_lines,
    speaker_prefix,
    speakers_convention,
)

_LANGUAGE = re.compile(
    r"^(?:NOTE\s+)?language\s*[:=]\s*\"?(?P<code>[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]+)*)", re.I
)
_VOICE = webvtt.Caption.VOICE_SPAN_PATTERN


# A timing line, or what was meant as one: the arrow, or a time followed by a bent arrow
# (`00:00:06,000 -> 00:00:07.000`).
_TIMING_LIKE = re.compile(r"-->|^\s*\d{1,2}:\d{2}[\d:.,]*\s*-{1,2}\s*>")


def _arrow_lines(text: str, first_line: int) -> list[tuple[int, str]]:
    """(line number, line) of every line that is, or was meant as, a timing line."""
    return [
        (number, line)
        for number, line in enumerate(text.split("\n"), start=first_line)
        if _TIMING_LIKE.search(line)
    ]


def _timings(line: str) -> tuple[int, int] | None:
    match = WebVTTCueBlock.CUE_TIMINGS_PATTERN.match(line)
    if match is None:
        return None
    try:
        start = Timestamp.from_string(match.group(1)).in_milliseconds()
        end = Timestamp.from_string(match.group(2)).in_milliseconds()
    except MalformedCaptionError:
        return None
    return start, end


def _voices(caption: webvtt.Caption) -> list[tuple[str, str]]:
    """(speaker, text) of a cue: one pair per voice when several voices take turns."""
    starts = [index for index, line in enumerate(caption.lines) if _VOICE.match(line)]
    if len(starts) <= 1:
        return [(caption.voice or "", caption.text)]
    pairs: list[tuple[str, str]] = []
    if starts[0] > 0:
        pairs.append(("", webvtt.Caption(text=caption.lines[: starts[0]]).text))
    for index, begin in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(caption.lines)
        part = webvtt.Caption(text=caption.lines[begin:end])
        pairs.append((part.voice or "", part.text))
    return pairs


def _where(identifier: str | None, line: int, number: int) -> str:
    """How a problem names a cue: by its identifier when short (a Teams GUID is not), and
    by its timing line."""
    name = (identifier or "").strip()
    if name and len(name) <= 24:
        return f"cue {name} (line {line})" if line else f"cue {name}"
    return f"the cue at line {line}" if line else f"cue {number}"


def language_of(lines: list[str]) -> str:
    for line in lines:
        match = _LANGUAGE.match(line.strip())
        if match:
            return match["code"]
    return ""


def _collapse_rolling(
    entries: list[tuple[int, int, list[str], str]],
) -> list[tuple[int, int, list[str], str]] | None:
    """YouTube's rolling lines without their repeats, or None when the file does not roll."""
    rolling = sum(
        1
        for before, after in pairwise(entries)
        if before[2] and after[2] and after[2][0] == before[2][-1]
    )
    if rolling < 2 or rolling * 5 < len(entries) * 2:
        return None
    collapsed: list[tuple[int, int, list[str], str]] = []
    shown: list[str] = []
    for start, end, lines, where in entries:
        overlap = 0
        for size in range(min(len(lines), len(shown)), 0, -1):
            if lines[:size] == shown[-size:]:
                overlap = size
                break
        new = lines[overlap:]
        if lines:
            shown = lines
        if new:
            collapsed.append((start, end, new, where))
    return collapsed


def read_vtt(text: str, problems: Problems, first_line: int = 1) -> tuple[list[Cue], str]:
    """The cues of a WebVTT text and its language ("" when it does not say). `first_line`:
    the number of the text's first line in the file."""
    try:
        parsed = webvtt.from_string(text)
    except MalformedFileError:
        problems.add("line 1", "no WEBVTT header; nothing was kept")
        return [], ""

    arrows = _arrow_lines(text, first_line)
    entries: list[tuple[int, int, list[str], str]] = []  # start, end, lines, where
    speakers: list[str] = []
    arrow = 0
    for number, caption in enumerate(parsed.captions, start=1):
        start = caption.start_time.in_milliseconds()
        end = caption.end_time.in_milliseconds()
        line = 0
        while arrow < len(arrows):
            line, written = arrows[arrow]
            arrow += 1
            if _timings(written) == (start, end):
                break
            problems.add(
                f"line {line}",
                f"the timing line {written.strip()[:80]!r} cannot be read; that cue was skipped",
            )
        where = _where(caption.identifier, line, number)
        for speaker, spoken in _voices(caption):
            entries.append((start, end, clean_lines(spoken), where))
            speakers.append(speaker)
    for line, written in arrows[arrow:]:
        problems.add(
            f"line {line}",
            f"the timing line {written.strip()[:80]!r} cannot be read; that cue was skipped",
        )

    language = language_of([*parsed.metadata, *parsed.header_comments])
    if not any(speakers):
        collapsed = _collapse_rolling(entries)
        if collapsed is not None:
            return [Cue(s, e, "\n".join(lines), "", w) for s, e, lines, w in collapsed], language

    texts = ["\n".join(lines) for _s, _e, lines, _w in entries]
    prefixed = not any(speakers) and speakers_convention(texts)
    cues: list[Cue] = []
    for (start, end, _lines, where), speaker, body in zip(entries, speakers, texts, strict=True):
        if prefixed and (found := speaker_prefix(body)) is not None:
            speaker, body = found
        if body:
            cues.append(Cue(start, end, body, speaker, where))
    return cues, language
