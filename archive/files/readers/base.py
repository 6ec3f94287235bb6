"""What the readers share: a library's name and version for the `extractor` field, the text
kept within the limits, and the records for files no local reader turns into text."""

from __future__ import annotations

import functools
import platform
from importlib.metadata import PackageNotFoundError, version

from archive.files.domain import Extracted, Limits, TextState

REASON_MOST = 500  # the text row's `reason` column holds this much


@functools.cache
def library(distribution: str) -> str:
    """ "pypdf 7.1.1": what the `extractor` field names (Python's own for the stdlib)."""
    if distribution == "python":
        return f"python {platform.python_version()}"
    try:
        return f"{distribution} {version(distribution)}"
    except PackageNotFoundError:
        return f"{distribution} (not installed)"


def reason_of(notes: list[str]) -> str:
    return "; ".join(note for note in notes if note)[:REASON_MOST]


class Parts:
    """Text gathered part by part up to the limit: `add` says False once `limits.chars` is
    passed, so a reader stops reading what would be cut anyway."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.parts: list[str] = []
        self.size = 0

    def add(self, text: str) -> bool:
        self.parts.append(text)
        self.size += len(text)
        return self.size <= self.limits.chars

    @property
    def full(self) -> bool:
        return self.size > self.limits.chars

    def joined(self, separator: str) -> str:
        return separator.join(self.parts)


def finish(
    text: str,
    *,
    limits: Limits,
    extractor: str,
    pages: int | None = None,
    notes: list[str] | None = None,
) -> Extracted:
    """The reading of a file that held `text`: done when it has words, else empty; cut at
    `limits.chars` (and said so). `notes` say what else was left unread."""
    notes = list(notes or [])
    if len(text) > limits.chars:
        text = text[: limits.chars]
        notes.append(f"text cut at {limits.chars:,} characters")
    if text.strip():
        return Extracted(text, TextState.DONE, extractor, reason_of(notes), pages)
    return Extracted(
        "", TextState.EMPTY, extractor, reason_of(notes or ["the file holds no text"]), pages
    )


def tidy(text: str) -> str:
    """Each line's runs of white space made one space, blank lines at most one in a row.
    (For prose: a paged reader tidies each page and joins them with "\f" after.)"""
    lines: list[str] = []
    for line in text.split("\n"):
        line = " ".join(line.split())
        if line or (lines and lines[-1]):
            lines.append(line)
    return "\n".join(lines).strip()


def needs_text(reason: str) -> Extracted:
    """A file only OCR or the owner's agent can turn into text."""
    return Extracted("", TextState.NEEDS_TEXT, "", reason)


def no_reader(what: str) -> Extracted:
    return Extracted("", TextState.EMPTY, "", f"no text reader for {what}")
