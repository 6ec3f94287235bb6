"""A DiscordChatExporter file's JSON: what comes before the messages, the messages' events,
and the expected total from the file's tail. Every read goes through a guard that refuses
nesting and values past their caps before the parser sees the bytes (json_guard.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import ijson

from archive.connectors.base import import_limits
from archive.connectors.json_guard import Events, JsonGuard, TooMuch, open_guarded

BUFFER = 16 * 1024
DETECT_EVENTS = 5_000  # parser events detection looks at before giving up
TAIL = 4096  # bytes at the end of the file searched for "messageCount"
_MESSAGE_COUNT = re.compile(rb'"messageCount"\s*:\s*(\d+)\s*}\s*$')


class Tracked:
    """The guarded file, remembering which bytes the parser asked for last, so an error can
    name its place."""

    def __init__(self, guard: JsonGuard) -> None:
        self._guard = guard
        self.start = self.end = guard.offset

    def read(self, size: int = -1) -> bytes:
        self.start = self._guard.offset
        data = self._guard.read(size)
        self.end = self._guard.offset
        return data

    @property
    def where(self) -> str:
        return f"bytes {self.start}-{self.end}"


def problem(exc: BaseException) -> str:
    """The first line of a parser error (yajl's spans several lines, sometimes as bytes)."""
    if isinstance(exc, TooMuch):
        return str(exc)
    detail: Any = exc.args[0] if exc.args else exc
    if isinstance(detail, bytes):
        detail = detail.decode("utf-8", "replace")
    first = str(detail).strip().splitlines()
    return f"broken JSON: {first[0].strip() if first else type(exc).__name__}"


PARSE_ERRORS = (ijson.JSONError, UnicodeDecodeError, ValueError)
Event = tuple[str, str, Any]


def _next(events: Events) -> Event:
    found = next(events, None)
    if found is None:
        raise ijson.IncompleteJSONError("premature end of the file")
    return found


@dataclass
class Header:
    values: dict[str, Any]  # top-level keys read before "messages"
    messages: bool  # "messages" was found and is an array


def read_header(path: Path, limit: int | None = None) -> Header:
    """The top-level values before `messages`; stops there. With `limit` (detection), gives
    up (no messages, TooMuch) after about that many parser events, and reads the file as if
    it ended before anything nesting too deep or too long, so detection stays cheap."""
    handle, guard = open_guarded(path, truncate=limit is not None)
    caps = import_limits()
    if limit is not None:
        caps = replace(caps, message_values=min(limit, caps.message_values))
    with handle:
        events = Events(Tracked(guard), guard=guard, buf_size=BUFFER, limits=caps)
        first = next(events, None)
        values: dict[str, Any] = {}
        if first is None or first[1] != "start_map":
            return Header(values, False)
        for count, (prefix, event, value) in enumerate(events):
            if (prefix == "" and event == "end_map") or (limit is not None and count > limit):
                break
            if prefix == "" and event == "map_key":
                opening = _next(events)
                if value == "messages":
                    return Header(values, opening[1] == "start_array")
                values[value] = events.build(*opening)
        return Header(values, False)


def read_all_top_level(path: Path) -> dict[str, Any]:
    """Every top-level value except `messages` (whose items are passed over unbuilt)."""
    handle, guard = open_guarded(path)
    with handle:
        events = Events(Tracked(guard), guard=guard, buf_size=BUFFER)
        values: dict[str, Any] = {}
        next(events, None)
        for prefix, event, value in events:
            if prefix == "" and event == "map_key":
                opening = _next(events)
                if value == "messages":
                    events.skip(opening[1])
                else:
                    values[value] = events.build(*opening)
        return values


def tail_message_count(path: Path) -> int | None:
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - TAIL))
            tail = handle.read()
    except OSError:
        return None
    match = _MESSAGE_COUNT.search(tail)
    return int(match.group(1)) if match else None
