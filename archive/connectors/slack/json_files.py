"""The JSON files of a Slack export (the lists, users.json, the day files), read in bounded
memory: one up to WHOLE bytes is read whole (errors then name a line and column), a larger
one is streamed item by item through the JSON guard (json_guard.py: nesting, a value and a
message past their caps are refused before the parser sees them, a huge string is set
aside whole). A zip member is checked before it is inflated and while it streams
(limits.py), so a day file of 2 GB of spaces in a 2 MB zip is refused unread."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any, Protocol

from archive.connectors.base import ZIP_ERRORS, FormatError
from archive.connectors.json_guard import JSON_ERRORS, Events, JsonGuard, json_problem

WHOLE = 8 << 20  # bytes: a file up to this size is read whole


class Source(Protocol):
    label: str  # how errors name the export

    def read(self, relative: str) -> bytes | None:
        """The bytes of a file of the export, or None when absent (or refused)."""
        ...

    def size(self, relative: str) -> int | None:
        """The size of a file of the export (as inflated), or None when absent."""
        ...

    def open(self, relative: str) -> io.BufferedReader | None:
        """A file of the export to stream, or None when absent."""
        ...

    def days(self, folder: str) -> list[str]:
        """The day files (relative paths, in date order) in one conversation's folder."""
        ...


def load(
    source: Source, relative: str, where: str = "", expected: str = "expected a JSON array"
) -> Iterator[Any] | None:
    """The items of the JSON array in `relative` (None when the file is absent); a file
    whose top level is no array is refused with `expected`."""
    size = source.size(relative)
    if size is None:
        return None
    if size > WHOLE:
        return _streamed(source, relative, where, expected)
    data = source.read(relative)
    if data is None:
        return None
    try:
        value = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise FormatError(relative, f"{where}byte {exc.start}", "not UTF-8 text") from exc
    except json.JSONDecodeError as exc:
        raise FormatError(
            relative, f"{where}line {exc.lineno} column {exc.colno}", f"broken JSON: {exc.msg}"
        ) from exc
    except RecursionError as exc:
        raise FormatError(relative, f"{where}top level", "the JSON nests too deep") from exc
    if not isinstance(value, list):
        raise FormatError(relative, f"{where}top level", expected)
    return iter(value)


class _Tracked:
    def __init__(self, guard: JsonGuard) -> None:
        self.guard = guard
        self.start = self.end = guard.offset

    def read(self, size: int = -1) -> bytes:
        self.start = self.guard.offset
        data = self.guard.read(size)
        self.end = self.guard.offset
        return data


def _streamed(source: Source, relative: str, where: str, expected: str) -> Iterator[Any]:
    handle = source.open(relative)
    if handle is None:
        return
    with handle:
        start = 3 if handle.peek(3)[:3] == b"\xef\xbb\xbf" else 0
        handle.read(start)
        guard = JsonGuard(handle, relative, start=start, where=where)
        tracked = _Tracked(guard)
        events = Events(tracked, guard=guard)
        try:
            first = next(events, None)
            if first is None or first[1] != "start_array":
                raise FormatError(relative, f"{where}top level", expected)
            for prefix, event, value in events:
                if prefix == "item":
                    yield events.build(prefix, event, value)
        except JSON_ERRORS as exc:
            problem, _ = json_problem(exc)
            problem = problem.replace("not valid JSON (", "broken JSON (", 1)
            raise FormatError(
                relative, f"{where}bytes {tracked.start}-{tracked.end}", problem
            ) from exc
        except ZIP_ERRORS as exc:
            raise FormatError(
                relative,
                f"{where}byte {guard.offset} of {source.label}",
                f"damaged zip member: {exc}",
            ) from exc
