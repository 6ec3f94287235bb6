"""JSON strings too long to hand to the parser, set aside whole in a spill file.

yajl (ijson's C parser) lexes a token again from its start with every chunk it spans: a
string of n bytes read in 64 KiB chunks costs n²/128 KiB of scanning (50 MB: minutes) and
is held whole in memory more than once. The guard (json_guard.py) withholds a string that
runs past the end of a chunk: one that ends within WIRECAT_IMPORT_MAX_JSON_VALUE bytes is
handed on as it was; a longer one is decoded piece by piece into a spill file (`LongString`)
and the parser gets its first part followed by a marker, `\\u0000wirecat-kept:<name>\\u0000`.
`item_kept_whole` (limits.py) finds the markers in a message's text and source JSON, takes
them out of the text and attaches each spill file: the string is kept whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

from archive.connectors.kept_whole import kept_mark, spill_file, utf8

# What the parser gets of a string set aside: its first part, at most this many bytes (the
# message's text then starts with it; its source JSON, which repeats it, stays small).
PREFIX_BYTES = 256 << 10

# An escape is at most 6 bytes (`\uXXXX`); a high surrogate's escape wants its low half.
_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")


def safe_cut(raw: bytes, end: int) -> int:
    """The largest index ≤ `end` at which `raw` (JSON string content that starts at an
    escape boundary) may be cut: not inside an escape, a surrogate pair or a UTF-8
    sequence."""
    plain = raw[:end].replace(b"\\\\", b"__")  # escaped backslashes, paired from the start
    cut = end
    back = plain.rfind(b"\\", max(0, cut - 5), cut)
    if back >= 0:
        cut = back
    if cut >= 6 and _HIGH_SURROGATE.fullmatch(plain, cut - 6, cut):
        cut -= 6
    start = cut
    while start > 0 and cut - start < 3 and raw[start - 1] & 0xC0 == 0x80:
        start -= 1
    if start > 0 and raw[start - 1] >= 0xC0:
        lead = raw[start - 1]
        length = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        if cut - (start - 1) < length:
            cut = start - 1
    return cut


def decoded(raw: bytes) -> str:
    """JSON string content (escapes and all) as text; lenient, as the parser would be
    strict elsewhere: bad UTF-8 is replaced, a bad escape kept as it is written."""
    text = raw.decode("utf-8", "replace")
    try:
        found = json.loads(f'"{text}"', strict=False)
    except json.JSONDecodeError:
        return text
    return found if isinstance(found, str) else text


class LongString:
    """One string being set aside: its raw JSON bytes come in pieces, decoded into a spill
    file named after its content (the same text twice, as Telegram writes a message's text
    in `text` and again in `text_entities`, is one file and one marker); the first part is
    what the parser gets, with the marker."""

    def __init__(self, held: bytes, prefix_limit: int) -> None:
        self._handle, self._path = spill_file(".part", prefix="value-")
        self._digest = hashlib.sha256()
        self.prefix = held[: safe_cut(held, min(len(held), prefix_limit, PREFIX_BYTES))]
        self._tail = b""
        self.add(held)

    def add(self, raw: bytes) -> None:
        data = self._tail + raw if self._tail else raw
        cut = safe_cut(data, len(data))
        if cut:
            self._write(decoded(data[:cut]))
        self._tail = data[cut:]

    def _write(self, text: str) -> None:
        data = utf8(text)
        self._digest.update(data)
        self._handle.write(data)

    def _finish(self) -> str:
        """The name the whole string is kept under."""
        if self._tail:
            self._write(decoded(self._tail))
            self._tail = b""
        self._handle.close()
        name = f"value-{self._digest.hexdigest()[:32]}"
        final = self._path.with_name(f"{name}.txt")
        if final.exists():
            self._path.unlink()
        else:
            os.replace(self._path, final)
        return name

    def stand_in(self, closed: bool = True) -> bytes:
        """The string the parser gets instead: the first part, the marker, and the closing
        quote (`closed`: the file did not end inside the string)."""
        escaped = json.dumps(kept_mark(self._finish()))[1:-1].encode("ascii")
        return b'"' + self.prefix + escaped + (b'"' if closed else b"")
