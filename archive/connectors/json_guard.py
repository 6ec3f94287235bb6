"""Untrusted JSON, checked before a streaming parser sees it.

ijson's C backend turns a whole buffer of input into events before handing over the first,
each with its prefix ("messages.item.text.item.item…"): a file of nothing but `[` costs
memory in proportion to the square of its depth before any reader could count levels; and
yajl lexes a token again from its start with every chunk it spans, holding it whole. So
`JsonGuard` sits between the file and the parser and scans every chunk *before* handing it
over, at C speed (escape pairs neutralised with `replace`, quotes and brackets kept with
`translate`, strings without brackets dropped as `""` pairs, the running depth taken with
`itertools.accumulate`); only a chunk that crosses a limit is walked byte by byte, to name
the offset. Past WIRECAT_IMPORT_MAX_JSON_DEPTH levels of nesting, or a number or literal
longer than WIRECAT_IMPORT_MAX_JSON_VALUE, the parser gets what comes before and then a
FormatError naming the byte (with `truncate=True`, for detection, which only looks at a
file's beginning, the file seems to end there instead). A string running past the end of a
chunk is withheld until it ends: within WIRECAT_IMPORT_MAX_JSON_VALUE bytes it is handed on
as it was, a longer one is set aside whole in a spill file (json_strings.py).

`Events` is `ijson.parse`'s (prefix, event, value) stream over such a guard; `build` hands
one whole value (a message) to ijson's C object builder: one holding more than
WIRECAT_IMPORT_MAX_MESSAGE_VALUES values (each a Python object) or spanning more than
WIRECAT_IMPORT_MAX_MESSAGE_BYTES of what the parser was handed is refused.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import ijson
from ijson.utils import sendable_list

from archive.connectors.base import FormatError, Limits, import_limits, size_text
from archive.connectors.json_strings import LongString

BOM = b"\xef\xbb\xbf"
BUFFER = 64 * 1024

# `translate` tables: keep only quotes and brackets; then brackets only, an opening one as 1
# and a closing one as 255 (-1 once read as signed bytes).
_NOT_QUOTES_OR_BRACKETS = bytes(byte for byte in range(256) if byte not in b'"[]{}')
_BRACKET_TABLE = bytes(
    1 if byte in b"[{" else 255 if byte in b"]}" else byte for byte in range(256)
)
_SEPARATORS = b' \t\r\n\f\v,:[]{}"'
_TOKEN_RUN = re.compile(rb'[^ \t\r\n\f\v,:\[\]{}"]*+')

DEPTH_SETTING = "WIRECAT_IMPORT_MAX_JSON_DEPTH"
VALUE_SETTING = "WIRECAT_IMPORT_MAX_JSON_VALUE"
VALUES_SETTING = "WIRECAT_IMPORT_MAX_MESSAGE_VALUES"
BYTES_SETTING = "WIRECAT_IMPORT_MAX_MESSAGE_BYTES"


_ESCAPE = re.compile(rb"\\.", re.DOTALL)  # a backslash and the byte it escapes


def _neutral_escapes(data: bytes, escaped_first: bool) -> bytes:
    """`data` (as long) with every escape (a backslash and the byte after it) and, when the
    chunk before ended in a backslash inside a string, its first byte made plain: every
    quote left opens or closes a string. (A backslash outside a string is a lexical error
    at which the parser stops: what it would pair with is never parsed.)"""
    if escaped_first:
        data = b"_" + data[1:]
    return _ESCAPE.sub(b"__", data) if b"\\" in data else data


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class JsonGuard:
    """A binary file that refuses, chunk by chunk, JSON nesting too deep or a value too long
    before passing the chunk on. `offset` is the file offset of the next byte handed over."""

    def __init__(
        self,
        handle: Readable,
        path: Path | str,
        *,
        start: int = 0,
        where: str = "",
        truncate: bool = False,
        limits: Limits | None = None,
    ) -> None:
        self._handle = handle
        self.path = path
        self.where = where  # prefixed to the position, e.g. "member general/2024-01-02.json, "
        self.offset = start  # of the next byte read from the file
        self.handed = 0  # bytes handed to the parser
        self._truncate = truncate
        self._ended = False
        self._refused: FormatError | None = None  # raised once what came before is handed
        found = limits or import_limits()
        self.max_depth = found.json_depth
        self.max_value = found.json_value_bytes
        self.max_item = found.message_bytes
        self._item_start: int | None = None
        self.depth = 0
        self._in_string = False
        self._escape = False
        self._token_start = 0
        self._token_length = 0
        self._close_at = -1  # in the chunk scanned last: the quote ending a string open before
        self._open_at = -1  # and the quote opening a string that runs past its end
        self._out = bytearray()  # ready for the parser
        self._held: bytearray | None = None  # a string running past a chunk, withheld
        self._long: LongString | None = None  # ... and set aside, past the value cap

    def read(self, size: int = -1) -> bytes:
        """At most `size` bytes for the parser (ijson ignores any more), once checked."""
        if size == 0:  # ijson asks for nothing first, to learn the type
            return b""
        size = size if size > 0 else BUFFER
        while not self._out and not self._ended:
            data = self._handle.read(size)
            if not data:
                self._ended = True
                self._release(closed=False)  # the file ends inside a string: the parser says so
                break
            cut = self._scan(data)
            if cut is not None:  # past a limit: what comes before it, then the error or end
                self._ended = True
                self._release(closed=False)
                self._out += data[:cut]
            else:
                self._route(data)
            self.offset += len(data)
        if not self._out and self._refused is not None:
            raise self._refused
        handed = bytes(self._out[:size])
        del self._out[:size]
        self.handed += len(handed)
        if self._item_start is not None and self.handed - self._item_start > self.max_item:
            self._ended = True
            raise FormatError(
                self.path,
                f"{self.where}byte {self.offset}",
                f"one message spans more than {size_text(self.max_item)} of JSON ({BYTES_SETTING})",
            )
        return handed

    def item_begins(self) -> None:
        """A message starts in what was handed last: its bytes are counted from here."""
        self._item_start = self.handed

    def item_ends(self) -> None:
        self._item_start = None

    def _route(self, data: bytes) -> None:
        """`data` (scanned) to the parser, but a string running past its end withheld."""
        position = 0
        if self._held is not None:
            if self._close_at < 0:
                self._hold(data)
                return
            self._hold(data[: self._close_at])
            self._release(closed=True)
            position = self._close_at + 1
        if self._open_at >= position:
            self._out += data[position : self._open_at]
            self._held = bytearray()
            self._hold(data[self._open_at + 1 :])
        else:
            self._out += data[position:] if position else data

    def _hold(self, content: bytes) -> None:
        if self._long is not None:
            self._long.add(content)
            return
        assert self._held is not None
        self._held += content
        if len(self._held) <= self.max_value:
            return
        if self._truncate:  # detection: the file seems to end before this string
            self._held = None
            self._ended = True
            return
        self._long = LongString(bytes(self._held), self.max_value)
        self._held = bytearray()

    def _release(self, closed: bool) -> None:
        """The withheld string to the parser: as it was, or its stand-in when set aside."""
        if self._long is not None:
            self._out += self._long.stand_in(closed)
        elif self._held is not None:
            self._out += b'"' + self._held + (b'"' if closed else b"")
        self._held = None
        self._long = None

    # --- the scan ----------------------------------------------------------------------

    def _scan(self, data: bytes) -> int | None:
        """None when `data` is within the limits (the state moves past it), else where in
        it the file is cut (truncate mode); raises FormatError otherwise."""
        saved = (self.depth, self._in_string, self._escape)
        plain = _neutral_escapes(data, self._in_string and self._escape)
        # Quotes and brackets only; an empty string (two quotes side by side) taken out
        # changes no bracket's side of any quote. What stays is short: brackets, and the
        # quotes of the few strings holding brackets.
        marks = plain.translate(None, _NOT_QUOTES_OR_BRACKETS).replace(b'""', b"")
        quotes = marks.count(b'"')
        starts_inside = self._in_string
        ends_inside = starts_inside != (quotes % 2 == 1)  # the pairs taken out kept parity
        if quotes:
            segments = marks.split(b'"')
            marks = b"".join(segments[1::2] if starts_inside else segments[0::2])
        elif starts_inside:
            marks = b""
        self._close_at = plain.find(b'"') if starts_inside else -1
        self._open_at = plain.rfind(b'"') if ends_inside else -1
        cut = self._check_tokens(data, plain, starts_inside, ends_inside)
        if cut is not None:
            return cut
        brackets = marks.translate(_BRACKET_TABLE)
        if brackets:
            opens = brackets.count(1)
            if self.depth + opens > self.max_depth:
                signed = memoryview(brackets).cast("b")
                if max(accumulate(signed, initial=self.depth)) > self.max_depth:
                    return self._too_deep(data, saved)
            self.depth += 2 * opens - len(brackets)  # (unmatched closers: the parser stops there)
        self._in_string = ends_inside
        self._escape = ends_inside and plain.endswith(b"\\")
        return None

    def _check_tokens(
        self, data: bytes, plain: bytes, starts_inside: bool, ends_inside: bool
    ) -> int | None:
        """Numbers and literals (runs between separators outside strings) stay short too:
        only a run across chunks can grow, so only the chunk's ends are looked at."""
        if starts_inside:
            self._token_length = 0
        else:
            lead = _TOKEN_RUN.match(data)
            lead_length = lead.end() if lead else 0
            if not self._token_length:
                self._token_start = self.offset
            self._token_length += lead_length
            if lead_length == len(data):
                return self._check_token()  # the whole chunk is one token, going on
            cut = self._check_token()
            if cut is not None:
                return cut
        if self.max_value < len(data):  # a cap smaller than a chunk (tests): look inside
            cut = self._token_inside(plain, starts_inside)
            if cut is not None:
                return cut
        if ends_inside:
            self._token_length = 0
            return None
        last = max(data.rfind(bytes((separator,))) for separator in _SEPARATORS)
        self._token_length = len(data) - 1 - last
        self._token_start = self.offset + last + 1
        return None

    def _token_inside(self, plain: bytes, starts_inside: bool) -> int | None:
        """A token longer than the cap within the chunk, outside its strings."""
        long = re.compile(rb'[^ \t\r\n\f\v,:\[\]{}"]{%d}' % (self.max_value + 1))
        position = 0
        for number, segment in enumerate(plain.split(b'"')):
            if (number % 2 == 1) == starts_inside and (found := long.search(segment)):
                self._token_start = self.offset + position + found.start()
                self._token_length = self.max_value + 1
                return self._check_token()
            position += len(segment) + 1
        return None

    def _check_token(self) -> int | None:
        if self._token_length <= self.max_value:
            return None
        problem = f"a number or literal longer than {size_text(self.max_value)} ({VALUE_SETTING})"
        return self._refuse(self._token_start, problem)

    def _too_deep(self, data: bytes, saved: tuple[int, bool, bool]) -> int | None:
        """The byte of `data` where nesting first passes the limit, walked one by one from
        the state before it."""
        depth, in_string, escape = saved
        index = 0
        for index, byte in enumerate(data):  # noqa: B007 - `index` is where it stopped
            if in_string:
                if escape:
                    escape = False
                elif byte == 0x5C:  # backslash
                    escape = True
                elif byte == 0x22:  # quote
                    in_string = False
            elif byte == 0x22:
                in_string = True
            elif byte in (0x5B, 0x7B):  # [ {
                depth += 1
                if depth > self.max_depth:
                    break
            elif byte in (0x5D, 0x7D):
                depth -= 1
        offset = self.offset + index
        problem = f"the JSON nests deeper than {self.max_depth} levels ({DEPTH_SETTING})"
        return self._refuse(offset, problem)

    def _refuse(self, offset: int, problem: str) -> int:
        """Where to cut the chunk: the parser gets what comes before `offset` (messages
        complete before it are kept), then, unless truncating, the error."""
        if not self._truncate:
            self._refused = FormatError(self.path, f"{self.where}byte {offset}", problem)
        return max(0, offset - self.offset)


def open_guarded(
    path: Path, *, where: str = "", truncate: bool = False
) -> tuple[BinaryIO, JsonGuard]:
    """`path` opened, its UTF-8 byte order mark stepped over, behind a guard."""
    handle = path.open("rb")
    start = len(BOM) if handle.read(len(BOM)) == BOM else 0
    handle.seek(start)
    return handle, JsonGuard(handle, path, start=start, where=where, truncate=truncate)


def guarded_head(head: bytes, path: Path | str = "") -> bytes:
    """The beginning of a file cut just before anything past the limits, for detection."""
    start = len(BOM) if head.startswith(BOM) else 0
    guard = JsonGuard(io.BytesIO(head[start:]), path, truncate=True)
    pieces = []
    while piece := guard.read(BUFFER):
        pieces.append(piece)
    return b"".join(pieces)


# --- events ------------------------------------------------------------------------------

Event = tuple[str, str, Any]
STARTS = ("start_map", "start_array")
ENDS = ("end_map", "end_array")
# ijson's object builder fed with (prefix, event, value) events: C in the yajl2_c backend.
items_basecoro = ijson.get_backend(ijson.backend).items_basecoro


class TooMuch(ijson.JSONError):
    """Nesting or a value no export has; refused before prefixes or builders grow with it."""


class Events:
    """`ijson.parse`'s (prefix, event, value) stream, refusing nesting deeper than the depth
    limit (a second line behind the guard); `build` gives one whole value."""

    def __init__(
        self,
        source: Any,
        *,
        guard: JsonGuard | None = None,
        buf_size: int = BUFFER,
        limits: Limits | None = None,
    ) -> None:
        self._events: Iterator[Event] = iter(ijson.parse(source, use_float=True, buf_size=buf_size))
        self._guard = guard  # counts the bytes of each value built
        found = limits or import_limits()
        self.max_depth = found.json_depth
        self.max_values = found.message_values
        self._depth = 0

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        found = next(self._events)
        event = found[1]
        if event in STARTS:
            self._depth += 1
            if self._depth > self.max_depth:
                raise TooMuch(f"the JSON nests deeper than {self.max_depth} levels")
        elif event in ENDS:
            self._depth -= 1
        return found

    def build(self, prefix: str, first: str, value: Any) -> Any:
        """The JSON value at `prefix` whose first event (`first`, just returned) starts it."""
        if first not in STARTS:
            return value
        if self._guard is None:
            return self._build(prefix, first, value)
        self._guard.item_begins()
        try:
            return self._build(prefix, first, value)
        finally:
            self._guard.item_ends()

    def _build(self, prefix: str, first: str, value: Any) -> Any:
        built: list[Any] = sendable_list()
        builder = items_basecoro(built, prefix, map_type=None)
        builder.send((prefix, first, value))
        depth = 1
        room = self.max_depth - self._depth + 1
        values = self.max_values
        for found in self._events:
            builder.send(found)
            values -= 1
            event = found[1]
            if event in STARTS:
                depth += 1
                if depth > room:
                    raise TooMuch(f"the JSON nests deeper than {self.max_depth} levels")
            elif event in ENDS:
                depth -= 1
                if depth == 0:
                    self._depth -= 1
                    return built[0]
            if values < 0:
                raise TooMuch(
                    f"one item holds more than {self.max_values:,} JSON values ({VALUES_SETTING})"
                )
        raise ijson.IncompleteJSONError("premature EOF")

    def skip(self, first: str) -> None:
        """Pass over the value whose first event (`first`) was just returned."""
        if first not in STARTS:
            return
        depth = 1
        for _prefix, event, _value in self:
            if event in STARTS:
                depth += 1
            elif event in ENDS:
                depth -= 1
                if depth == 0:
                    return
        raise ijson.IncompleteJSONError("premature EOF")


def json_problem(exc: Exception) -> tuple[str, bool]:
    """ijson's message, first line only (yajl adds a picture of the spot), and whether
    the file simply ended early."""
    if isinstance(exc, TooMuch):
        return str(exc), False
    raw = exc.args[0] if exc.args else exc
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    if "premature EOF" in first or "Incomplete JSON" in first:
        return "the JSON ends in the middle (truncated export?)", True
    return f"not valid JSON ({first})", False


JSON_ERRORS = (ijson.JSONError, UnicodeError)
