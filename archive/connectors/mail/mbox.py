"""Mail files: an mbox split into its messages, and whether a file is mail at all.

An mbox is streamed. A splitter reads the binary file line by line and cuts it at "From "
lines that (1) follow a blank line or start the file (after an optional UTF-8 BOM),
(2) look like a separator: "From - …" (Thunderbird), "From 1844…@xxx …" (Gmail Takeout,
with or without a date) or "From <sender> <a date with a month, a time and a year>"
(classic), and (3) are followed by a header line. Unescaped "From " lines in bodies
therefore stay in their message. mboxrd escapes (">From ", ">>From ") lose one ">".
Lines are read in pieces of at most 1 MiB (a bounded `readline`). Only one message is held
in memory at a time, and one larger than `large.LARGE` (8 MiB) not at all: the rest of it is
passed over a block at a time, and it comes out as its skeleton, its big parts left in the
file to be read when they are stored (large.py); `reread` reads one message again from its
file, for an attachment too large to keep. Any single file is an mbox when it starts with a
separator, else one message.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from archive.connectors.base import FormatError, read_head
from archive.connectors.mail.large import LARGE, PartRange, skeleton

_BOM = b"\xef\xbb\xbf"
_LINE_CHUNK = 1 << 20  # a line longer than this is read in pieces
MAX_MESSAGE = 256 << 20  # a bigger message from a server is skipped, not held in memory
HEAD_BYTES = 64 << 10

# -- lines and separators -------------------------------------------------------------------

_HEADER_LINE = re.compile(rb"^[\x21-\x39\x3b-\x7e]+[ \t]*:")
_ESCAPED_FROM = re.compile(rb"^>+From ")
_MONTH = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.I)
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b")
_YEAR = re.compile(r"\b(?:19|2\d)\d{2}\b")
_TAKEOUT = re.compile(r"^\d+@xxx(?:\s|$)")
_MAIL_FIELDS = frozenset(
    b"from to cc date subject message-id received return-path delivered-to mime-version "
    b"in-reply-to references content-type sender reply-to x-mailer".split()
)
_KEY_FIELDS = frozenset({b"from", b"date", b"message-id", b"received"})


def _is_separator(line: bytes) -> bool:
    """Whether an mbox line looks like a message separator (the blank line before it and the
    header line after it are checked by the caller)."""
    text = line.decode("latin-1").rstrip("\r\n")
    if not text.startswith("From "):
        return False
    rest = text[5:].strip()
    if rest == "-" or rest.startswith("- "):
        return True
    if _TAKEOUT.match(rest):
        return True
    sender, _, tail = rest.partition(" ")
    return bool(
        sender and tail and _MONTH.search(tail) and _CLOCK.search(tail) and _YEAR.search(tail)
    )


def _head_lines(head: bytes) -> list[bytes]:
    lines = head.removeprefix(_BOM).splitlines()
    if len(head) >= HEAD_BYTES and lines:
        lines.pop()  # possibly cut in the middle
    return lines


def starts_as_mbox(head: bytes) -> bool:
    lines = _head_lines(head)
    first = 0
    while first < len(lines) and not lines[first].strip():
        first += 1
    return (
        first + 1 < len(lines)
        and _is_separator(lines[first])
        and bool(_HEADER_LINE.match(lines[first + 1]))
    )


def looks_like_message(head: bytes) -> bool:
    """Whether `head` starts with an RFC 5322 header block of a mail message."""
    names: set[bytes] = set()
    for number, line in enumerate(_head_lines(head)):
        if not line.strip():
            break
        if line[:1] in (b" ", b"\t"):
            if number == 0:
                return False
            continue
        if b"\x00" in line:
            return False
        match = _HEADER_LINE.match(line)
        if match is None:
            return False
        names.add(match.group(0).rstrip(b": \t").lower())
    return bool(names & _KEY_FIELDS) and len(names & _MAIL_FIELDS) >= 2


def looks_like_mail_file(path: Path) -> bool:
    head = read_head(path, HEAD_BYTES)
    return starts_as_mbox(head) or looks_like_message(head)


# -- raw messages ---------------------------------------------------------------------------


@dataclass
class Raw:
    """One message's bytes and where they are."""

    path: Path
    index: int  # 1-based number of the message in its file
    offset: int  # byte offset of the message (its From line, in an mbox) in its file
    data: bytes
    envelope: str = ""  # the mbox "From " line
    mbox: bool = False
    last: bool = False  # the last message of its file
    oversized: bool = False
    in_memory: bool = False  # from a server, not a file: attachments keep their bytes
    # A large message's skeleton is `data`: its markers and where their bodies are (large.py).
    parts: dict[str, PartRange] | None = None

    @property
    def position(self) -> str:
        return f"message {self.index} at byte {self.offset}"


class _Lines:
    """The lines of a binary file with their offsets, one line of look-ahead."""

    def __init__(self, handle: BinaryIO, path: Path, offset: int) -> None:
        self._handle = handle
        self._path = path
        self.offset = offset
        self._at_start = True
        self._pending: tuple[int, bytes, bool] | None = None

    def next(self) -> tuple[int, bytes, bool] | None:
        """(offset, line, whether it starts a line) or None at the end."""
        if self._pending is not None:
            item, self._pending = self._pending, None
            return item
        try:
            line = self._handle.readline(_LINE_CHUNK)
        except OSError as exc:
            raise FormatError(self._path, f"byte {self.offset}", f"read failed: {exc}") from exc
        if not line:
            return None
        item = (self.offset, line, self._at_start)
        self.offset += len(line)
        self._at_start = line.endswith(b"\n")
        return item

    def peek(self) -> tuple[int, bytes, bool] | None:
        if self._pending is None:
            self._pending = self.next()
        return self._pending

    def skip(self) -> int:
        """On to the next "From " line after a blank line (where a message may end), a
        block at a time at C speed: the rest of a large message is never read line by line
        (its skeleton is read from the file later). The blank line's length (0 at the end)."""
        position = self._pending[0] if self._pending is not None else self.offset
        self._pending = None
        blank = 0
        while True:
            self._handle.seek(position)
            block = self._handle.read(_LINE_CHUNK)
            found = -1
            search = 0
            while (hit := block.find(b"\nFrom ", search)) >= 0:
                before = block.rfind(b"\n", 0, hit)
                if before >= 0 and block[before + 1 : hit + 1] in (b"\n", b"\r\n"):
                    found, blank = hit + 1, hit - before
                    break
                search = hit + 1
            if found >= 0:
                position += found
                break
            if len(block) < _LINE_CHUNK:
                position += len(block)
                break
            position += len(block) - 8  # a blank line and "From " across blocks
        self._handle.seek(position)
        self.offset = position
        self._at_start = True
        return blank


def _mbox_messages(
    path: Path, start: int = 0, first_index: int = 1, limit: int | None = None
) -> Iterator[Raw]:
    """The messages of an mbox, read line by line from byte `start`."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise FormatError(path, f"byte {start}", f"cannot be read: {exc}") from exc
    with handle:
        handle.seek(start)
        lines = _Lines(handle, path, start)
        chunks: list[bytes] | None = None
        size = 0
        begin = start
        content = start  # where the message's own lines start (after its From line)
        trailing = 0  # bytes of the blank line last read (the mbox's, before a separator)
        envelope = ""
        index = first_index - 1
        produced = 0
        previous_blank = True
        while (item := lines.next()) is not None:
            offset, line, line_start = item
            if offset == 0:
                line = line.removeprefix(_BOM)
            if line_start and previous_blank and line.startswith(b"From ") and _is_separator(line):
                following = lines.peek()
                if following is not None and _HEADER_LINE.match(following[1]):
                    if chunks is not None:
                        span = (content, offset - trailing)
                        yield _mbox_raw(path, index, begin, chunks, size, envelope, False, span)
                        produced += 1
                        if limit is not None and produced >= limit:
                            return
                    chunks, size, begin, content = [], 0, offset, following[0]
                    envelope = line.decode("latin-1").rstrip("\r\n")
                    index += 1
                    previous_blank = False
                    continue
            blank = line_start and line in (b"\n", b"\r\n")
            if chunks is None:
                if line.strip():
                    raise FormatError(
                        path, f"byte {offset}", 'not an mbox: no "From " separator line here'
                    )
                previous_blank = True
                continue
            length = len(line)
            if line_start and _ESCAPED_FROM.match(line):
                line = line[1:]
            size += len(line)
            if size <= LARGE:
                chunks.append(line)
            else:  # read again, as a skeleton, once it has ended
                chunks.clear()
                trailing = lines.skip()
                previous_blank = trailing > 0
                continue
            previous_blank = blank
            trailing = length if blank else 0
        if chunks is not None:
            span = (content, lines.offset - trailing)
            yield _mbox_raw(path, index, begin, chunks, size, envelope, True, span)


def _mbox_raw(
    path: Path,
    index: int,
    begin: int,
    chunks: list[bytes],
    size: int,
    envelope: str,
    last: bool,
    span: tuple[int, int],
) -> Raw:
    if size > LARGE:  # its lines were not kept: read again from the file, as a skeleton
        data, parts = skeleton(path, span[0], span[1], mbox=True)
        return Raw(path, index, begin, data, envelope, mbox=True, last=last, parts=parts)
    data = b"".join(chunks)
    # The blank line before the next separator belongs to the mbox, not to the message.
    if data.endswith(b"\r\n\r\n"):
        data = data[:-2]
    elif data.endswith(b"\n\n"):
        data = data[:-1]
    return Raw(path, index, begin, data, envelope, mbox=True, last=last)


def file_messages(path: Path) -> Iterator[Raw]:
    """The messages of one file: an mbox, or a single message. OSError when unreadable."""
    if starts_as_mbox(read_head(path, HEAD_BYTES)):
        yield from _mbox_messages(path)
        return
    size = path.stat().st_size
    if size > LARGE:
        start = len(_BOM) if read_head(path, len(_BOM)) == _BOM else 0
        data, parts = skeleton(path, start, size, mbox=False)
        yield Raw(path, 1, 0, data, last=True, parts=parts)
        return
    yield Raw(path, 1, 0, path.read_bytes().removeprefix(_BOM), last=True)


def reread(path: Path, offset: int, mbox: bool) -> bytes:
    """The bytes of the message read earlier at `offset`, for a large attachment."""
    if not mbox:
        return path.read_bytes().removeprefix(_BOM)
    try:
        found = next(_mbox_messages(path, start=offset, limit=1), None)
    except FormatError as exc:
        raise OSError(str(exc)) from exc
    if found is None or found.oversized:
        raise OSError(f"{path.name}: no message at byte {offset} any more")
    return found.data
