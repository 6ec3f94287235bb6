"""The JSON of a Telegram Desktop export, streamed: the file is never loaded.

Exports reach many gigabytes. `Events` is `ijson.parse`'s (prefix, event, value) stream with
a cap on nesting (`MAX_DEPTH`: every event's prefix costs time and memory in proportion to
depth), and builds one whole value (a message) with ijson's C object builder. `Tracked`
remembers which bytes were read, so an error names where the file breaks; `json_problem`
words ijson's errors for the owner.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import ijson
from ijson.utils import sendable_list

BOM = b"\xef\xbb\xbf"
MAX_DEPTH = 64  # real exports nest about 8 deep

Event = tuple[str, str, Any]


class Tracked:
    """A binary file that remembers which bytes ijson has read, for error positions."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.start = 0
        self.end = 0
        if handle.read(len(BOM)) == BOM:
            self.start = self.end = len(BOM)
        else:
            handle.seek(0)

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.start = self.end
        self.end += len(data)
        return data

    def where(self, premature_end: bool) -> str:
        if premature_end:
            return f"byte {self.end} (end of file)"
        return f"bytes {self.start}-{self.end}"


# ijson's object builder fed with (prefix, event, value) events: C in the yajl2_c backend.
items_basecoro = ijson.get_backend(ijson.backend).items_basecoro


class _TooDeep(ijson.JSONError):
    """Nesting no export has; refused before prefixes or builders grow with it."""


STARTS = ("start_map", "start_array")
ENDS = ("end_map", "end_array")


class Events:
    """`ijson.parse`'s (prefix, event, value) stream, refusing nesting deeper than
    MAX_DEPTH (every event's prefix costs time and memory in proportion to depth). The
    prefixes are made by ijson's C backend; `build` hands one whole value's events to
    ijson's C object builder, so a message costs no Python per JSON token."""

    def __init__(self, source: Any) -> None:
        self._events: Iterator[Event] = iter(ijson.parse(source, use_float=True))
        self._depth = 0

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        found = next(self._events)
        event = found[1]
        if event in STARTS:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise _TooDeep(f"the JSON nests deeper than {MAX_DEPTH} levels")
        elif event in ENDS:
            self._depth -= 1
        return found

    def build(self, prefix: str, first: str, value: Any) -> Any:
        """The JSON value at `prefix` whose first event (`first`, just returned) starts it."""
        if first not in STARTS:
            return value
        built: list[Any] = sendable_list()
        builder = items_basecoro(built, prefix, map_type=None)
        builder.send((prefix, first, value))
        depth = 1
        room = MAX_DEPTH - self._depth + 1
        for found in self._events:
            builder.send(found)
            event = found[1]
            if event in STARTS:
                depth += 1
                if depth > room:
                    raise _TooDeep(f"the JSON nests deeper than {MAX_DEPTH} levels")
            elif event in ENDS:
                depth -= 1
                if depth == 0:
                    self._depth -= 1
                    return built[0]
        raise ijson.IncompleteJSONError("premature EOF")


def json_problem(exc: Exception) -> tuple[str, bool]:
    """ijson's message, first line only (yajl adds a picture of the spot), and whether
    the file simply ended early."""
    if isinstance(exc, _TooDeep):
        return str(exc), False
    raw = exc.args[0] if exc.args else exc
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    if "premature EOF" in first or "Incomplete JSON" in first:
        return "the JSON ends in the middle (truncated export?)", True
    return f"not valid JSON ({first})", False


JSON_ERRORS = (ijson.JSONError, UnicodeError)


def open_tracked(json_path: Path) -> tuple[BinaryIO, Tracked]:
    handle = json_path.open("rb")
    return handle, Tracked(handle)
