"""Where a WhatsApp chat text is, and its lines.

The chat text is a `.txt` alone, a member of the `.zip` that carries it with the media
(`_chat.txt` from iOS, `WhatsApp Chat with X.txt` from Android), or a file of the folder such
a zip was unpacked into. A zip or folder holding several chat texts (and no `_chat.txt`) is
refused, naming them, rather than one imported silently. Lines are read with a bounded
`readline` (a line longer than WIRECAT_IMPORT_MAX_LINE is refused, naming it) and decoded
strictly as UTF-8; zip members are checked before and while they inflate (their size, their
compression ratio: archive/connectors/limits.py); a zip member that turns out corrupt while
an attachment is stored raises OSError.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, BinaryIO, cast

from archive.connectors.base import (
    LINE_SETTING,
    ZIP_ERRORS,
    FormatError,
    import_limits,
    line_too_long,
    read_head,
    safe_member,
    safe_zip_member,
    size_text,
    zip_opener,
)
from archive.connectors.whatsapp.grammar import looks_like_chat

HEAD_BYTES = 4096
MAX_CANDIDATES = 50  # chat-text candidates looked at inside one zip or folder


def unsafe_name(name: str) -> bool:
    cleaned = name.replace("\\", "/").strip()
    return (
        not cleaned
        or cleaned.startswith("/")
        or re.match(r"^[A-Za-z]:", cleaned) is not None
        or ".." in PurePosixPath(cleaned).parts
    )


def _ranked(names: Iterable[str]) -> list[str]:
    """Chat-text candidates, the likeliest first: `_chat.txt`, then `WhatsApp Chat…`."""

    def rank(name: str) -> tuple[bool, bool, int, str]:
        base = PurePosixPath(name).name.lower()
        return (base != "_chat.txt", not base.startswith("whatsapp"), name.count("/"), name)

    return sorted(names, key=rank)


@dataclass(frozen=True)
class Source:
    given: Path  # what the owner pointed at: the .txt, the .zip or the folder
    text_name: str  # the chat text's own file name
    member: str | None = None  # the chat text inside the zip
    text_file: Path | None = None  # the chat text on disk

    def open_text(self) -> IO[bytes]:
        if self.member is not None:
            return cast(IO[bytes], zip_opener(self.given, self.member)())
        assert self.text_file is not None
        return self.text_file.open("rb")

    def error(self, line: int, problem: str) -> FormatError:
        if self.member is not None:
            return FormatError(self.given, f"{self.member}, line {line}", problem)
        return FormatError(self.text_file or self.given, f"line {line}", problem)

    @property
    def container_name(self) -> str:
        """The zip's or folder's name, which iOS exports name after the chat."""
        if self.member is not None:
            return self.given.stem
        if self.text_file is not None and self.text_file != self.given:
            return self.given.name
        return self.given.parent.name


class SeveralChats(Exception):
    def __init__(self, names: list[str]) -> None:
        super().__init__(", ".join(names))
        self.names = names


def _one_chat(matches: list[str]) -> str | None:
    """The chat text among the texts that look like one: `_chat.txt`, else the only one.
    Several chats in one zip or folder are refused rather than one picked silently."""
    if not matches:
        return None
    if PurePosixPath(matches[0]).name.lower() == "_chat.txt" or len(matches) == 1:
        return matches[0]
    raise SeveralChats(matches)


def locate(path: Path) -> Source | None:
    """The chat text of the export at `path`, or None when it holds none."""
    if path.is_dir():
        found: dict[str, Path] = {}
        names = [p.name for p in path.iterdir() if p.suffix.lower() == ".txt"]
        for name in _ranked(names)[:MAX_CANDIDATES]:
            inside = safe_member(path, name)  # a regular file, no symlink out of the folder
            if inside is not None and looks_like_chat(read_head(inside, HEAD_BYTES)):
                found[name] = inside
        chosen = _one_chat(list(found))
        if chosen is None:
            return None
        return Source(given=path, text_name=chosen, text_file=found[chosen])
    if not path.is_file():
        return None
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            names = [
                info.filename
                for info in archive.infolist()
                if info.filename.lower().endswith(".txt")
                and not info.filename.startswith("__MACOSX/")
                and not unsafe_name(info.filename)
                and safe_zip_member(archive, info.filename) is not None
            ]
            matches = []
            for name in _ranked(names)[:MAX_CANDIDATES]:
                with archive.open(name) as stream:
                    head = stream.read(HEAD_BYTES)
                if looks_like_chat(head):
                    matches.append(name)
        member = _one_chat(matches)
        if member is None:
            return None
        return Source(given=path, text_name=PurePosixPath(member).name, member=member)
    if looks_like_chat(read_head(path, HEAD_BYTES)):
        return Source(given=path, text_name=path.name, text_file=path)
    return None


def read_lines(source: Source) -> Iterator[tuple[int, str]]:
    """(line number, text) of the chat text, decoded strictly, without line ends."""
    limit = import_limits().line_bytes
    number = 0
    try:
        with source.open_text() as handle:
            while raw := handle.readline(limit + 1):
                number += 1
                if line_too_long(raw, limit):
                    problem = f"the line is longer than {size_text(limit)} ({LINE_SETTING})"
                    raise source.error(number, problem)
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise source.error(
                        number,
                        f"not UTF-8 text (byte {exc.start + 1} of the line is "
                        f"0x{raw[exc.start]:02x})",
                    ) from None
                if number == 1:
                    line = line.removeprefix("\ufeff")
                yield number, line.rstrip("\r\n")
    except ZIP_ERRORS as exc:
        raise source.error(number + 1, f"the zip cannot be read: {exc}") from None


class _GuardedStream(io.RawIOBase):
    """A zip member stream whose read errors (bad CRC, truncated data) become OSError,
    which the import service records as a missing attachment instead of crashing."""

    def __init__(self, inner: IO[bytes]) -> None:
        super().__init__()
        self._inner = inner

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        try:
            return self._inner.read(size)
        except ZIP_ERRORS as exc:
            raise OSError(f"attachment unreadable: {exc}") from exc

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
        super().close()


@dataclass(frozen=True)
class _Guarded:
    """An opener whose stream turns a corrupt zip member into an OSError."""

    opener: Callable[[], IO[bytes]]

    def __call__(self) -> BinaryIO:
        try:
            return cast(BinaryIO, _GuardedStream(self.opener()))
        except ZIP_ERRORS as exc:
            raise OSError(f"attachment unreadable: {exc}") from exc


def guarded(opener: Callable[[], IO[bytes]]) -> Callable[[], BinaryIO]:
    return _Guarded(opener)
