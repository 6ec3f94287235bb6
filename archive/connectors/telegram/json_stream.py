"""The JSON of a Telegram Desktop export, streamed: the file is never loaded.

Exports reach many gigabytes. The file is read through a `JsonGuard` (json_guard.py), which
refuses nesting past WIRECAT_IMPORT_MAX_JSON_DEPTH and a string or number past
WIRECAT_IMPORT_MAX_JSON_VALUE before ijson sees the bytes; `Events` is `ijson.parse`'s
(prefix, event, value) stream over it, and builds one whole value (a message) with ijson's
C object builder, at most WIRECAT_IMPORT_MAX_MESSAGE_VALUES values. `Tracked` remembers
which bytes were read, so an error names where the file breaks; `json_problem` words
ijson's errors for the owner.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from archive.connectors.json_guard import JsonGuard, open_guarded


class Tracked:
    """The guarded file, remembering which bytes ijson has read, for error positions."""

    def __init__(self, guard: JsonGuard) -> None:
        self.guard = guard
        self.start = self.end = guard.offset

    def read(self, size: int = -1) -> bytes:
        self.start = self.guard.offset
        data = self.guard.read(size)
        self.end = self.guard.offset
        return data

    def where(self, premature_end: bool) -> str:
        if premature_end:
            return f"byte {self.end} (end of file)"
        return f"bytes {self.start}-{self.end}"


def open_tracked(json_path: Path) -> tuple[BinaryIO, Tracked]:
    handle, guard = open_guarded(json_path)
    return handle, Tracked(guard)
