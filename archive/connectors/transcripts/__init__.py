"""Transcript files: WebVTT (vtt.py), SubRip (subrip.py) and Zoom's in-meeting chat text
(zoom_chat.py), read into `meetings.domain.TranscriptRead`. Pure readers: bytes in,
records out, no database.

- `transcript_kind(head, name)` says which of them a file is from its first few KB (its
  content decides; the name only settles a WebVTT file that lost its `WEBVTT` line).
- `read_transcript(data, source=…)` reads one file's bytes; `read_transcript_file(path)`
  reads a file from disk without holding more than the cap.

Bounded: a transcript is read up to WIRECAT_IMPORT_MAX_TRANSCRIPT (16 MiB, over a hundred
hours of speech); past it the cues are not kept and a problem names the last line read. A
cue's text past WIRECAT_IMPORT_MAX_TEXT characters is kept whole, as several segments with
the cue's times (a transcript has no attachment to keep it in, as a message's long text
is). What could not be read is a problem sentence naming the file and the line or cue, and
what was kept; the rest of the file is read. Bytes that are no transcript at all raise
`FormatError`, as every export reader does for "not this format".
"""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

from archive.connectors.base import FormatError, import_limits, size_text
from archive.connectors.transcripts.common import (
    Problems,
    decode,
    file_name,
    finish,
)
from archive.connectors.transcripts.subrip import read_srt
from archive.connectors.transcripts.vtt import read_vtt
from archive.connectors.transcripts.zoom_chat import layout_of, read_zoom_chat
from meetings.domain import TranscriptRead

__all__ = [
    "HEAD_BYTES",
    "KINDS",
    "TRANSCRIPT_SETTING",
    "read_transcript",
    "read_transcript_file",
    "transcript_cap",
    "transcript_kind",
]

KINDS = ("vtt", "srt", "zoom_chat")
HEAD_BYTES = 8192  # what detection reads
TRANSCRIPT_SETTING = "WIRECAT_IMPORT_MAX_TRANSCRIPT"
_DEFAULT_CAP = 16 << 20

_SRT_TIMING = re.compile(
    r"^\s*\d+:\d{1,2}:\d{1,2}[,.:]\d{1,3}\s*-[ -]\s*>\s*\d+:\d{1,2}:\d{1,2}[,.:]\d{1,3}"
)
_VTT_TIMING = re.compile(r"^\s*(?:\d+:)?\d{1,2}:\d{1,2}\.\d{1,3}\s*-->")
_INDEX = re.compile(r"^\s*\d+\s*$")


def transcript_cap() -> int:
    """The most of one transcript that is read, in bytes (WIRECAT_IMPORT_MAX_TRANSCRIPT)."""
    from django.conf import settings

    return int(getattr(settings, "IMPORT_MAX_TRANSCRIPT", _DEFAULT_CAP))


def _first_lines(text: str, count: int) -> list[str]:
    lines = [line.rstrip("\r") for line in text.split("\n")]
    return [line for line in lines if line.strip()][:count]


def transcript_kind(head: bytes, name: str) -> str | None:
    """ "vtt", "srt" or "zoom_chat" when the file beginning with `head` (its first few KB)
    is one, else None. The content decides: a WebVTT header, an SRT cue (an optional number,
    then a timing line), or a first line that is a Zoom chat message in one of its layouts.
    The name only helps a file whose content starts with a WebVTT cue but lost its header."""
    text, _problem = decode(head)
    if len(head) >= HEAD_BYTES and "\n" in text:
        text = text[: text.rfind("\n")]  # the last line may be cut short
    stripped = text.lstrip()
    if stripped.startswith("WEBVTT") and stripped[6:7] in ("", " ", "\t", "\r", "\n"):
        return "vtt"
    lines = _first_lines(text, 12)
    if not lines:
        return None
    if _SRT_TIMING.match(lines[0]):  # a first cue without its number
        vtt_named = name.lower().endswith(".vtt") and _VTT_TIMING.match(lines[0])
        return "vtt" if vtt_named else "srt"
    # A numbered cue among the first lines (the first cue's own timing may be broken).
    for before, after in pairwise(lines):
        if _INDEX.match(before) and _SRT_TIMING.match(after):
            return "srt" if _INDEX.match(lines[0]) else None
    if layout_of(lines[0]) is not None:
        return "zoom_chat"
    return None


def _empty_kind(name: str) -> str | None:
    suffix = Path(name).suffix.lower()
    return {".vtt": "vtt", ".srt": "srt"}.get(suffix)


def _cut(data: bytes, cap: int) -> bytes:
    """The first `cap` bytes of `data`, ending at a blank line (the end of a cue) when
    there is one, else at a line end."""
    head = data[:cap]
    for end in (b"\n\n", b"\n\r\n"):
        found = head.rfind(end)
        if found > cap // 2:
            return head[: found + len(end)]
    found = head.rfind(b"\n")
    return head[: found + 1] if found > 0 else head


def read_transcript(data: bytes, *, source: str, size: int | None = None) -> TranscriptRead:
    """What the transcript `data` (the bytes of the file named `source`) holds. `size` is
    the whole file's size when `data` is only its beginning (read_transcript_file).

    Raises FormatError when the bytes are no transcript WireCat reads."""
    name = file_name(source)
    problems = Problems(name)
    cap = transcript_cap()
    total = max(size or 0, len(data))
    if total > cap:
        data = _cut(data, cap)
        last_line = data.count(b"\n")
        problems.add(
            f"line {last_line}",
            f"the file has {size_text(total)}, more than {size_text(cap)} "
            f"({TRANSCRIPT_SETTING}): it was read up to this line, and what follows was not "
            "kept",
        )

    kind = transcript_kind(data[:HEAD_BYTES], name)
    text, not_utf8 = decode(data)
    if not text.strip():
        empty_kind = kind or _empty_kind(name)
        if empty_kind is None:
            raise FormatError(source, "line 1", "the file is empty")
        problems.add(None, "the file is empty; nothing was kept")
        return TranscriptRead(kind=empty_kind, problems=problems.result())
    if kind is None:
        raise FormatError(
            source,
            "line 1",
            "not a transcript WireCat can read (WebVTT .vtt, SubRip .srt or a Zoom chat .txt)",
        )
    if not_utf8:
        problems.add(*not_utf8.split(": ", 1))
    text = text.replace("\r\n", "\n")

    language = ""
    notes: dict[str, str] = {}
    if kind == "vtt":
        if not text.lstrip().startswith("WEBVTT"):
            problems.add("line 1", "no WEBVTT header; read as WebVTT because of its name")
            cues, language = read_vtt("WEBVTT\n\n" + text, problems, first_line=-1)
        else:
            cues, language = read_vtt(text, problems)
    elif kind == "srt":
        cues = read_srt(text, problems)
    else:
        cues, notes = read_zoom_chat(text, problems)

    segments = finish(cues, problems, import_limits().text_chars)
    if not segments:
        problems.add(None, "no cue could be read; nothing was kept")
    return TranscriptRead(
        kind=kind,
        segments=segments,
        problems=problems.result(),
        language=language,
        notes=notes,
    )


def read_transcript_file(path: Path, *, source: str | None = None) -> TranscriptRead:
    """`read_transcript` of the file at `path`, holding no more of it than the cap (and
    one byte, to know it is larger)."""
    cap = transcript_cap()
    with path.open("rb") as handle:
        data = handle.read(cap + 1)
        size = path.stat().st_size
    return read_transcript(data, source=source or path.name, size=size)
