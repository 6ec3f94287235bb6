"""A Telegram export small enough to hold, parsed whole at C speed.

Streaming a file through the guard and ijson's events (export.py) costs more Python per
message than translating it. A file up to WIRECAT_IMPORT_WHOLE_FILE (16 MB; its objects
take about four times that) is parsed in one call of orjson instead, and its messages are
handed to the same translation, in the same order, with the same counters.

Only the common case is taken this way: a well-formed file whose every part is well within
the caps the streaming guard enforces (nesting, the length of a value, the values and bytes
of one message). The checks are cheap bounds taken from each message's source JSON, which
the translation writes anyway; they are conservative, never looser than the guard. Anything
else (JSON orjson refuses, a shape the reader does not expect, a message near a cap, a
value the translation refuses) makes this reader give way to the streaming one, which
reads the file again and passes over the messages already handed out: what comes out, its
errors and their positions included, is exactly what streaming alone gives.
"""

from __future__ import annotations

from typing import Any

import orjson

from archive.connectors.base import Limits
from archive.connectors.json_guard import BOM

# Where a chat's messages sit in the file: the chat object's depth, then `messages` and
# each message one level deeper each (the root object is level 1).
_CHAT_DEPTH = {"": 1, "chats.list.item": 4, "left_chats.list.item": 4}
# JSON writes a character in at most this many bytes (a \u escape: six): the most bytes
# a string of n characters can have taken in the file.
_ESCAPED = 6


class GiveWay(Exception):
    """The file (or the message reached) is not the common case: stream it instead."""


def whole_file_data(data: bytes, limits: Limits) -> dict[str, Any] | None:
    """The file's JSON object, or None when it is not for this reader (too large, not
    JSON orjson reads, not an object)."""
    if len(data) > limits.whole_file_bytes:
        return None
    if data.startswith(BOM):
        data = data[len(BOM) :]
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _tame(value: Any, depth: int, limits: Limits) -> bool:
    """Whether `value`, at nesting level `depth`, stays within the guard's caps (nesting,
    the length of a string) - walked, for the parts of a file outside its messages."""
    stack = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if level > limits.json_depth:
            return False
        if isinstance(item, dict):
            stack.extend((child, level + 1) for child in item.values())
            stack.extend((key, level + 1) for key in item)
        elif isinstance(item, list):
            stack.extend((child, level + 1) for child in item)
        elif isinstance(item, str) and len(item) * _ESCAPED > limits.json_value_bytes:
            return False
    return True


def message_fits(source: str, depth: int, limits: Limits) -> bool:
    """Whether a message whose source JSON is `source`, sitting at nesting level `depth`,
    is surely within every cap: no string in it is longer than its whole source, it holds
    no more values than characters and nests no deeper than it has brackets."""
    size = len(source)
    if size * _ESCAPED > min(limits.json_value_bytes, limits.message_bytes):
        return False
    if size > limits.message_values:
        return False
    return depth + source.count("{") + source.count("[") <= limits.json_depth


def chats_in(
    data: dict[str, Any], containers: dict[str, bool], limits: Limits
) -> list[tuple[str, dict[str, Any]]]:
    """The file's chat objects with their container, in file order; GiveWay when the file
    is shaped otherwise than its layout says or any part outside the messages is past a
    cap."""
    if "" in containers:
        outside = {key: value for key, value in data.items() if key != "messages"}
        if not _tame(outside, 2, limits):
            raise GiveWay
        return [("", data)]
    found: list[tuple[str, dict[str, Any]]] = []
    for key, value in data.items():
        container = f"{key}.list.item"
        if container not in containers:
            if not _tame(value, 2, limits):
                raise GiveWay
            continue
        if not isinstance(value, dict):
            raise GiveWay
        for inner, listed in value.items():
            if inner != "list":
                if not _tame(listed, 3, limits):
                    raise GiveWay
                continue
            if not isinstance(listed, list) or not all(isinstance(c, dict) for c in listed):
                raise GiveWay
            for chat in listed:
                outside = {k: v for k, v in chat.items() if k != "messages"}
                if not _tame(outside, 5, limits):
                    raise GiveWay
                found.append((container, chat))
    return found


def message_depth(container: str) -> int:
    """The nesting level of a message object in `container`'s chats."""
    return _CHAT_DEPTH[container] + 2
