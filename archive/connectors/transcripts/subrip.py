"""SubRip (.srt), read with the `srt` library: comma (or dot) milliseconds, numbering with
gaps or none, a BOM, CRLF line ends, and the `Speaker: text` convention when most cues of
the file follow it. Formatting tags (`<i>`, `<b>`, `<font color=…>`) and ASS overrides
(`{\\an8}`) are taken out of the text.

A block the library cannot read (a broken timing line) stops its parse: the block is
named by its line in a problem and the parse goes on after it, so the rest is kept.
"""

from __future__ import annotations

import re
from datetime import timedelta

import srt

from archive.connectors.transcripts.common import (
    Cue,
    Problems,
    clean_lines,
    speaker_prefix,
    speakers_convention,
)

_MS = timedelta(milliseconds=1)
_FORMATTING = re.compile(r"</?(?:i|b|u|s|font)\b[^>]*>|\{\\[^}]*\}", re.I)


def _subtitles(text: str, problems: Problems) -> list[srt.Subtitle]:
    found: list[srt.Subtitle] = []
    offset = 0
    while True:
        try:
            for subtitle in srt.parse(text[offset:]):
                found.append(subtitle)
            return found
        except srt.SRTParseError as error:
            skipped = error.unmatched_content
            begin = offset + error.expected_start + (len(skipped) - len(skipped.lstrip()))
            line = text.count("\n", 0, begin) + 1
            shown = " / ".join(part.strip()[:80] for part in skipped.strip().split("\n")[:2])
            problems.add(
                f"line {line}",
                f"cannot be read as a cue ({shown!r}); those lines were skipped",
            )
            offset += error.actual_start
            if error.actual_start == error.expected_start:  # nothing consumed: stop
                return found


def read_srt(text: str, problems: Problems) -> list[Cue]:
    """The cues of an SRT text."""
    entries: list[tuple[int, int, str, str]] = []
    for number, subtitle in enumerate(_subtitles(text, problems), start=1):
        start = subtitle.start // _MS
        end = subtitle.end // _MS
        where = f"cue {subtitle.index}" if subtitle.index is not None else f"cue {number}"
        body = "\n".join(clean_lines(_FORMATTING.sub("", subtitle.content)))
        entries.append((start, end, body, where))

    prefixed = speakers_convention([body for _s, _e, body, _w in entries])
    cues: list[Cue] = []
    for start, end, body, where in entries:
        speaker = ""
        if prefixed and (found := speaker_prefix(body)) is not None:
            speaker, body = found
        if body:
            cues.append(Cue(start, end, body, speaker, where))
    return cues
