"""The text of an `attributedBody`: the archived NSAttributedString (Apple's typedstream
format) newer Messages databases store instead of `text`.

The shape Messages writes is read directly (the general parser costs ~0.2 ms a message);
any other shape goes through the `typedstream` parser, and a blob neither can read gives
None rather than an error.
"""

from __future__ import annotations

from typing import Any

import typedstream
from typedstream.archiving import GenericArchivedObject, TypedGroup
from typedstream.types.foundation import NSString

_MAX_NESTING = 8


def _first_string(value: Any, depth: int = 0) -> str | None:
    if depth > _MAX_NESTING:
        return None
    if isinstance(value, NSString):
        return value.value
    if isinstance(value, GenericArchivedObject):
        for group in value.contents:
            found = _first_string(group, depth + 1)
            if found is not None:
                return found
    elif isinstance(value, TypedGroup):
        for item in value.values:
            found = _first_string(item, depth + 1)
            if found is not None:
                return found
    return None


# The exact bytes Messages writes before the string of an attributedBody, in its two shapes:
# typedstream header (v4, little-endian, system 1000), the "@" root, the class chain
# NS[Mutable]AttributedString → NSObject, then the NS[Mutable]String object and its "+" type.
_TYPEDSTREAM_HEADER = b"\x04\x0bstreamtyped\x81\xe8\x03\x84\x01@\x84"
_STRING_PREFIXES = (
    _TYPEDSTREAM_HEADER + b"\x84\x84\x12NSAttributedString\x00\x84\x84\x08NSObject\x00\x85"
    b"\x92\x84\x84\x84\x08NSString\x01\x94\x84\x01+",
    _TYPEDSTREAM_HEADER + b"\x84\x84\x19NSMutableAttributedString\x00"
    b"\x84\x84\x12NSAttributedString\x00\x84\x84\x08NSObject\x00\x85"
    b"\x92\x84\x84\x84\x0fNSMutableString\x01\x84\x84\x08NSString\x01\x95\x84\x01+",
)
_END_OF_OBJECT = 0x86


def _canonical_text(blob: bytes) -> str | None:
    """The string of an attributedBody in the shape Messages writes, read directly (the
    general parser costs ~0.2 ms a message); None when the blob is shaped otherwise."""
    prefix = next((p for p in _STRING_PREFIXES if blob.startswith(p)), None)
    if prefix is None or len(blob) <= len(prefix):
        return None
    at = len(prefix)
    head = blob[at]
    if head == 0x81:  # a 2-byte length follows
        length, at = int.from_bytes(blob[at + 1 : at + 3], "little", signed=False), at + 3
    elif head == 0x82:  # a 4-byte length follows
        length, at = int.from_bytes(blob[at + 1 : at + 5], "little", signed=False), at + 5
    elif 0x80 <= head <= 0x91:  # another tag: not the shape expected here
        return None
    else:
        length, at = head, at + 1
    end = at + length
    if end >= len(blob) or blob[end] != _END_OF_OBJECT:
        return None
    try:
        return blob[at:end].decode("utf-8")
    except UnicodeDecodeError:
        return None


def attributed_text(blob: bytes) -> str | None:
    """The plain string of an archived NSAttributedString, or None when it is unreadable."""
    fast = _canonical_text(blob)
    if fast is not None:
        return fast
    try:
        root = typedstream.unarchive_from_data(blob)
        return _first_string(root)
    except Exception:  # a corrupt blob may fail anywhere inside the parser
        return None
