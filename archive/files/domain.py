"""What reading a file hands over: its text and what became of it (pure records, no store)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class TextState(StrEnum):
    """What an attachment's text row says about its file."""

    DONE = "done"  # text read from the file (or written by an agent)
    EMPTY = "empty"  # read, and the file holds no text (or no reader takes its kind)
    NEEDS_TEXT = (
        "needs_text"  # an image, a scan without a text layer, a voice note: OCR or an agent
    )
    FAILED = "failed"  # the reader failed; `reason` says why
    TOO_LARGE = "too_large"  # a limit was hit (size, pages, time, memory); `reason` says which


class TextOrigin(StrEnum):
    EXTRACTED = "extracted"
    AGENT = "agent"


@dataclass(frozen=True)
class Limits:
    """The bounds of reading one file, in its child process."""

    seconds: float = 30.0  # wall clock (and CPU) time
    # memory the reader may map beyond what the child inherits at fork (a Django process
    # maps ~180 MB before reading anything): RLIMIT_AS is set to that plus this
    memory_bytes: int = 512 * 1024 * 1024
    file_bytes: int = 100 * 1024 * 1024  # a larger file is not read: too_large
    pages: int = 500  # PDF pages, slides, sheets read at most (the rest: noted, not read)
    chars: int = 5_000_000  # text kept at most (the rest cut, noted in `reason`)
    depth: int = 3  # attachments inside a mail inside a mail ...


@dataclass(frozen=True)
class Extracted:
    """A file's reading: `text` (may be ""), its `state`, why (`reason`, for failed,
    too_large, a cut text or a file without a reader), the reader and its version
    (`extractor`, e.g. "pypdf 7.1.1"), and pages read when the format has pages."""

    text: str
    state: TextState
    extractor: str
    reason: str = ""
    pages: int | None = None
