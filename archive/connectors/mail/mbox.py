"""Mail files: an mbox split into its messages, and whether a file is mail at all.

An mbox is streamed. A splitter reads the binary file line by line and cuts it at "From "
lines that (1) follow a blank line or start the file (after an optional UTF-8 BOM),
(2) look like a separator: "From - …" (Thunderbird), "From 1844…@xxx …" (Gmail Takeout,
with or without a date) or "From <sender> <a date with a month, a time and a year>"
(classic), and (3) are followed by a header line. Unescaped "From " lines in bodies
therefore stay in their message. mboxrd escapes (">From ", ">>From ") lose one ">".
Only one message is held in memory at a time, and a message larger than `MAX_MESSAGE` not
at all (it comes out `oversized`); `reread` reads one message again from its file, for an
attachment too large to keep. Any single file is an mbox when it starts with a separator,
else one message.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from archive.connectors.base import FormatError, read_head

_BOM = b"\xef\xbb\xbf"
_LINE_CHUNK = 1 << 20  # a line longer than this is read in pieces
MAX_MESSAGE = 256 << 20  # a bigger message is skipped, not held in memory
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
                        yield _mbox_raw(path, index, begin, chunks, size, envelope, last=False)
                        produced += 1
                        if limit is not None and produced >= limit:
                            return
                    chunks, size, begin = [], 0, offset
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
            if line_start and _ESCAPED_FROM.match(line):
                line = line[1:]
            size += len(line)
            if size <= MAX_MESSAGE:
                chunks.append(line)
            previous_blank = blank
        if chunks is not None:
            yield _mbox_raw(path, index, begin, chunks, size, envelope, last=True)


def _mbox_raw(
    path: Path, index: int, begin: int, chunks: list[bytes], size: int, envelope: str, last: bool
) -> Raw:
    if size > MAX_MESSAGE:
        return Raw(path, index, begin, b"", envelope, mbox=True, last=last, oversized=True)
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
    if path.stat().st_size > MAX_MESSAGE:
        yield Raw(path, 1, 0, b"", last=True, oversized=True)
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
