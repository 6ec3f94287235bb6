"""Mail messages too large to hold: read from the file as a skeleton, their big parts
streamed from it when they are stored.

A message larger than `LARGE` bytes is never held whole (a 30 MB attachment once cost over
half a gigabyte: the bytes, their text, its lines, the decoded payload, each in memory). It is
read again from its file, line by line, by a MIME walker that follows the parser's rules
(headers end at a blank line or a boundary, a boundary of any enclosing multipart ends a
part, `message/*` parts are not descended into, nor multiparts nested deeper than 40), and
copied into a *skeleton*: the same message with every leaf body over `PART_INLINE` bytes
(and every body once the skeleton has grown past `SKELETON_BUDGET`) replaced by a marker
line. The skeleton is parsed as usual (mime.py); a part whose body is a marker becomes an
attachment whose opener (`PartRange`) reads its bytes from the file and decodes its
transfer encoding (base64, quoted-printable, or none) as they stream to the blob store; a
text part's first part becomes the message's text. mboxrd escapes (`>From `) are undone as
when the message is read whole.
"""

from __future__ import annotations

import binascii
import io
import logging
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from email import policy
from email.parser import BytesParser
from pathlib import Path
from typing import Any, BinaryIO

log = logging.getLogger(__name__)

LARGE = 8 << 20  # a message bigger than this is read as a skeleton
PART_INLINE = 256 << 10  # a leaf body bigger than this stays in the file
SKELETON_BUDGET = 8 << 20  # past this, every body stays in the file
_PIECE = 1 << 20  # a line longer than this is read in pieces
_MAX_DEPTH = 40  # as mime.py: multiparts nested deeper are one leaf

_HEADER = re.compile(rb"^(From |[\x21-\x39\x3b-\x7e]*:|[\t ])")
_BLANK = re.compile(rb"^(\r\n|\r|\n)\Z")
_ESCAPED_FROM = re.compile(rb"^>+From ")
_NOT_BASE64 = bytes(  # padding too: each group of four is decoded as it comes
    byte
    for byte in range(256)
    if byte not in b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
)
_HEADERS = BytesParser(policy=policy.default)

Line = tuple[int, bytes, bool, int]  # file offset, bytes (escapes undone), starts a line, length


class _Lines:
    """The lines of `handle` between `start` and `end`, in pieces of at most _PIECE."""

    def __init__(self, handle: BinaryIO, start: int, end: int, mbox: bool) -> None:
        self._handle = handle
        self.end = end
        self._mbox = mbox
        self.seek(start)

    def seek(self, offset: int) -> None:
        """Go on from `offset`, the start of a line."""
        self._handle.seek(offset)
        self.offset = offset
        self._at_start = True

    def __iter__(self) -> Iterator[Line]:
        return self

    def __next__(self) -> Line:
        if self.offset >= self.end:
            raise StopIteration
        raw = self._handle.readline(min(_PIECE, self.end - self.offset))
        if not raw:
            raise StopIteration
        line = raw
        if self._mbox and self._at_start and _ESCAPED_FROM.match(line):
            line = line[1:]
        found = (self.offset, line, self._at_start, len(raw))
        self.offset += len(raw)
        self._at_start = raw.endswith(b"\n")
        return found

    def next_boundary(self, patterns: list[re.Pattern[bytes]]) -> tuple[int, int]:
        """Skip to the next line matching one of `patterns` (a block at a time, at C speed:
        only lines starting with "--" are looked at); (its offset, or `end`, and how long
        the line end before it is)."""
        position, at_start = self.offset, self._at_start
        while patterns and position < self.end:
            self._handle.seek(position)
            block = self._handle.read(min(_PIECE, self.end - position))
            if not block:
                break
            index = 0 if at_start and block.startswith(b"--") else -1
            while True:
                if index < 0:
                    hit = block.find(b"\n--")
                    if hit < 0:
                        break
                    index = hit + 1
                stop = block.find(b"\n", index)
                if stop < 0 and position + len(block) < self.end:
                    break  # the line goes on in the next block, which starts with it
                line = block[index : stop + 1 if stop >= 0 else len(block)]
                if any(pattern.match(line) for pattern in patterns):
                    found = position + index
                    before = block[max(0, index - 2) : index]
                    self.seek(found)
                    return found, _eol(before)
                hit = block.find(b"\n--", index)
                if hit < 0:
                    break
                index = hit + 1
            last = block.rfind(b"\n")
            if last < 0:
                position, at_start = position + len(block), False
            else:
                position, at_start = position + last + 1, True
        self.seek(self.end)
        return self.end, 0


def _eol(line: bytes) -> int:
    return 2 if line.endswith(b"\r\n") else 1 if line.endswith((b"\n", b"\r")) else 0


@dataclass(frozen=True)
class PartRange:
    """Opens one part's body, read from the file and decoded as it streams (picklable)."""

    path: Path
    start: int
    end: int
    mbox: bool
    encoding: str  # the Content-Transfer-Encoding, lower case

    def __call__(self) -> BinaryIO:
        return io.BufferedReader(_Decoding(self), buffer_size=1 << 16)

    def head(self, size: int) -> bytes:
        """About the first `size` decoded bytes."""
        with self() as stream:
            return stream.read(size)


class _Decoding(io.RawIOBase):
    def __init__(self, part: PartRange) -> None:
        super().__init__()
        self._part = part
        self._handle = part.path.open("rb")
        self._position = part.start  # base64: read in blocks (no line of it is escaped)
        self._lines = _Lines(self._handle, part.start, part.end, part.mbox)
        self._ready = bytearray()
        self._tail = b""  # base64 characters short of a group of four
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while len(self._ready) < len(buffer) and not self._done:
            self._ready += self._more()
        size = min(len(buffer), len(self._ready))
        buffer[:size] = self._ready[:size]
        del self._ready[:size]
        return size

    def _more(self) -> bytes:
        if self._part.encoding == "base64":
            block = b""
            if self._position < self._part.end:
                self._handle.seek(self._position)
                block = self._handle.read(min(_PIECE, self._part.end - self._position))
                self._position += len(block)
            self._done = not block
            return self._base64(block)
        found = next(self._lines, None)
        if found is None:
            self._done = True
            return b""
        if self._part.encoding == "quoted-printable":
            return binascii.a2b_qp(found[1])
        return found[1]

    def _base64(self, block: bytes) -> bytes:
        data = self._tail + block.translate(None, _NOT_BASE64)
        usable = len(data) if self._done else len(data) // 4 * 4
        self._tail = data[usable:]
        chunk = data[:usable]
        if self._done and len(chunk) % 4:  # cut short: what is whole, as the parser does
            chunk = chunk[: len(chunk) - len(chunk) % 4] if len(chunk) % 4 == 1 else chunk
            chunk += b"=" * (-len(chunk) % 4)
        try:
            return binascii.a2b_base64(chunk)
        except binascii.Error:
            return b""

    def close(self) -> None:
        if not self.closed:
            self._handle.close()
        super().close()


class _Walker:
    """Copies a message into its skeleton (see the module's docstring)."""

    def __init__(self, path: Path, handle: BinaryIO, start: int, end: int, mbox: bool) -> None:
        self.path = path
        self.mbox = mbox
        self._lines = _Lines(handle, start, end, mbox)
        self._pending: Line | None = None
        self._stack: list[re.Pattern[bytes]] = []
        self.end = end
        self.out = bytearray()
        self.parts: dict[str, PartRange] = {}
        self._nonce = secrets.token_hex(6).upper()  # letters and digits: valid base64

    def _peek(self) -> Line | None:
        if self._pending is None:
            self._pending = next(self._lines, None)
        return self._pending

    def _take(self) -> Line | None:
        found = self._peek()
        self._pending = None
        return found

    def _ends(self, line: Line) -> bool:
        """A boundary of an enclosing multipart: the end of the part being read."""
        return line[2] and any(pattern.match(line[1]) for pattern in self._stack)

    def _copy(self, line: bytes, limit: int = SKELETON_BUDGET) -> None:
        if len(self.out) <= limit:
            self.out += line

    def _pass(self, limit: int = SKELETON_BUDGET) -> None:
        """The next line into the skeleton (unless it has grown past `limit`)."""
        line = self._take()
        if line is not None:
            self._copy(line[1], limit)

    def entity(self, depth: int) -> None:
        header: list[bytes] = []
        while (line := self._peek()) is not None and not self._ends(line):
            if line[2] and not _HEADER.match(line[1]):
                if _BLANK.match(line[1]):
                    self._pass(2 * SKELETON_BUDGET)
                break
            self._take()
            if len(self.out) > 2 * SKELETON_BUDGET:
                log.warning("%s: a header block past %d bytes, cut", self.path, SKELETON_BUDGET)
                continue
            header.append(line[1])
            self.out += line[1]
        message = _HEADERS.parsebytes(b"".join(header) + b"\n", headersonly=True)
        try:
            boundary = (
                message.get_boundary() if message.get_content_maintype() == "multipart" else None
            )
        except Exception:  # a malformed Content-Type: a leaf, as for the parser
            boundary = None
        if boundary and depth < _MAX_DEPTH:
            self._multipart(boundary, depth)
        else:
            self._leaf(str(message.get("content-transfer-encoding", "") or "").strip().lower())

    def _multipart(self, boundary: str, depth: int) -> None:
        pattern = re.compile(
            b"--"
            + re.escape(boundary.encode("utf-8", "surrogateescape"))
            + rb"(--)?[ \t]*(\r\n|\r|\n)?\Z"
        )
        while (line := self._peek()) is not None and not self._ends(line):  # the preamble
            if line[2] and pattern.match(line[1]):
                break
            self._pass()
        self._stack.append(pattern)
        try:
            while (line := self._peek()) is not None and line[2] and pattern.match(line[1]):
                self._take()
                self.out += line[1]
                found = pattern.match(line[1])
                if found is not None and found.group(1):  # the closing boundary: the epilogue
                    self._stack.pop()
                    while (line := self._peek()) is not None and not self._ends(line):
                        self._pass()
                    return
                following = self._peek()
                if following is not None and following[2] and pattern.match(following[1]):
                    continue  # several boundary lines in a row hold no part
                self.entity(depth + 1)
            self._stack.pop()
        except BaseException:
            self._stack.clear()
            raise

    def _leaf(self, encoding: str) -> None:
        first = self._peek()
        if first is None or self._ends(first):
            return
        held = bytearray()
        while (line := self._peek()) is not None and not self._ends(line):
            self._take()
            held += line[1]
            if len(held) > PART_INLINE or len(self.out) + len(held) > SKELETON_BUDGET:
                break
        else:
            self.out += held
            return
        # Too big to copy: the rest is skipped to the next boundary, its bytes left in the file.
        end, eol = self._lines.next_boundary(self._stack)
        closed = end < self._lines.end  # a boundary follows: the last line end is its
        marker = f"WIRECATPART{self._nonce}{len(self.parts):05d}"
        body_end = end - eol if closed else end
        self.parts[marker] = PartRange(self.path, first[0], body_end, self.mbox, encoding)
        self.out += marker.encode("ascii") + (b"\r\n" if eol == 2 else b"\n")


def skeleton(path: Path, start: int, end: int, mbox: bool) -> tuple[bytes, dict[str, PartRange]]:
    """The message in bytes [`start`, `end`) of `path` with its big bodies replaced by
    markers, and where each of them is."""
    with path.open("rb") as handle:
        walker = _Walker(path, handle, start, end, mbox)
        walker.entity(0)
        while (line := walker._take()) is not None:  # what a broken structure left over
            walker._copy(line[1])
        return bytes(walker.out), walker.parts


def marker_of(part: Any) -> str | None:
    """The marker a parsed part's body is (the skeleton's), or None."""
    payload = part.get_payload()
    if isinstance(payload, list) and len(payload) == 1:  # message/*: one message inside
        payload = payload[0].get_payload()
    if isinstance(payload, str) and payload.startswith("WIRECATPART") and len(payload) < 64:
        return payload.strip()
    return None
