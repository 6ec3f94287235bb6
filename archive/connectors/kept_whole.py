"""A message's text kept whole, however long: what a reader cannot hold, or the import
should not index, is written aside and becomes an attachment of its message.

- One message's text past WIRECAT_IMPORT_MAX_TEXT characters is kept whole in a spill file,
  handed on as an attachment the import stages into the blob store like any other; the
  message keeps the first part as its text (`LongText` as a reader gathers it,
  `item_kept_whole` for any item). The same goes for its source JSON and any metadata value
  that large, and for JSON strings the guard set aside (json_strings.py): their markers are
  taken out of the text and their files attached.
- Spill files live in the state folder under `import-spill/<pid>/`; one is removed once
  staged (a string kept under its content's name when the import ends), and `spill_sweep`
  removes what an ended (or killed) reading process left.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO, Protocol, TypeVar

from archive.connectors.limits import Limits, import_limits
from archive.store.domain import AttachmentRecord, MessageRecord

TEXT_SETTING = "WIRECAT_IMPORT_MAX_TEXT"
VALUE_SETTING = "WIRECAT_IMPORT_MAX_JSON_VALUE"
SPILL_FOLDER = "import-spill"
_ENCODE_SLICE = 1 << 20  # characters encoded at a time when text is written aside


def _spill_root() -> Path:
    from django.conf import settings

    return Path(settings.STATE_DIR) / SPILL_FOLDER


def spill_file(suffix: str, prefix: str = "kept-") -> tuple[BinaryIO, Path]:
    """A new file in this process's spill folder, open for writing."""
    folder = _spill_root() / str(os.getpid())
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    handle, name = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=suffix)
    return os.fdopen(handle, "wb"), Path(name)


def _spilled(name: str) -> Path | None:
    """The spill file this process wrote under `name` (a stem), if it is there."""
    path = _spill_root() / str(os.getpid()) / f"{name}.txt"
    return path if path.is_file() else None


# A JSON string set aside whole (json_strings.py) reaches the reader as its first part and
# this marker; in a message's source JSON it appears escaped.
_KEPT = re.compile("\x00wirecat-kept:([A-Za-z0-9_-]{1,64})\x00")
_KEPT_IN_JSON = re.compile(r"\\u0000wirecat-kept:([A-Za-z0-9_-]{1,64})\\u0000")
_KEPT_WORD = "wirecat-kept:"


def kept_mark(name: str) -> str:
    return f"\x00wirecat-kept:{name}\x00"


def spill_sweep(pid: int | None = None) -> None:
    """Remove what the reading process `pid` set aside and never had staged, and what
    processes that no longer run left (an import killed mid-way)."""
    root = _spill_root()
    if not root.is_dir():
        return
    for folder in root.iterdir():
        if not folder.name.isdigit():
            continue
        owner = int(folder.name)
        if owner == pid or not _running(owner):
            shutil.rmtree(folder, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _RemovedOnClose(io.FileIO):
    """A spill file, removed when closed: it was kept only to be staged once."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, "rb")
        self._spill = path

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._spill.unlink(missing_ok=True)


@dataclass(frozen=True)
class SpilledFile:
    """Opens a file a reader wrote aside (picklable: it travels to the importing process).
    `remove`: once staged; a string kept under its content's name may be named again by a
    later message, and goes when the import's spill folder is swept."""

    path: Path
    remove: bool = True

    def __call__(self) -> BinaryIO:
        return _RemovedOnClose(self.path) if self.remove else self.path.open("rb")


def utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


class LongText:
    """A message's text as a reader gathers it: the first `limit` characters in memory and,
    once it grows past them, all of it in a spill file."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit if limit is not None else import_limits().text_chars
        self.length = 0  # characters added
        self._parts: list[str] = []
        self._held = 0
        self._file: BinaryIO | None = None
        self._path: Path | None = None

    @property
    def spilled(self) -> bool:
        return self._path is not None

    def add(self, piece: str) -> None:
        self.length += len(piece)
        if self._file is not None:
            self._write(piece)
            return
        self._parts.append(piece)
        self._held += len(piece)
        if self._held > self.limit:
            self._file, self._path = spill_file(".txt")
            for part in self._parts:
                self._write(part)
            self._parts = [self.text()]
            self._held = len(self._parts[0])

    def _write(self, piece: str) -> None:
        assert self._file is not None
        for start in range(0, len(piece), _ENCODE_SLICE):
            self._file.write(utf8(piece[start : start + _ENCODE_SLICE]))

    def text(self) -> str:
        """The first `limit` characters."""
        if len(self._parts) == 1:
            return self._parts[0][: self.limit]
        return "".join(self._parts)[: self.limit]

    def whole(self, name: str = "message.txt") -> AttachmentRecord | None:
        """The whole text as an attachment (None when it fit); ends writing."""
        if self._file is None or self._path is None:
            return None
        self._file.close()
        self._file = None
        return _kept(self._path, "text", name, "text/plain", self.length)


def with_whole_text(message: MessageRecord, whole: LongText) -> MessageRecord:
    """`message` (its text the first part of `whole`) with the whole text attached."""
    attachment = whole.whole()
    if attachment is None:
        return message
    kept = {"setting": TEXT_SETTING, "text_characters": whole.length}
    return replace(
        message,
        metadata={**message.metadata, "kept_whole": kept},
        attachments=(*message.attachments, attachment),
    )


def _kept(path: Path, what: str, name: str, mime_type: str, length: int) -> AttachmentRecord:
    return AttachmentRecord(
        external_id=f"kept-{what}",
        file_name=name,
        mime_type=mime_type,
        size=path.stat().st_size,
        metadata={"kept_whole": what, "characters": length},
        content=SpilledFile(path),
    )


def _text_aside(text: str, what: str, name: str, mime_type: str) -> AttachmentRecord:
    handle, path = spill_file(Path(name).suffix)
    with handle:
        for start in range(0, len(text), _ENCODE_SLICE):
            handle.write(utf8(text[start : start + _ENCODE_SLICE]))
    return _kept(path, what, name, mime_type, len(text))


def _write_json(handle: BinaryIO, value: Any, depth: int = 0) -> None:
    """`value` as JSON into `handle`, a long string a slice at a time (escaping is per
    character, so slices escape alike): never a second whole copy in memory."""
    if isinstance(value, str):
        if len(value) <= _ENCODE_SLICE:
            handle.write(utf8(json.dumps(value, ensure_ascii=False)))
            return
        handle.write(b'"')
        for start in range(0, len(value), _ENCODE_SLICE):
            piece = json.dumps(value[start : start + _ENCODE_SLICE], ensure_ascii=False)
            handle.write(utf8(piece[1:-1]))
        handle.write(b'"')
    elif isinstance(value, dict) and depth < 200:
        handle.write(b"{")
        for index, (key, item) in enumerate(value.items()):
            handle.write(b"," if index else b"")
            handle.write(utf8(json.dumps(str(key), ensure_ascii=False) + ":"))
            _write_json(handle, item, depth + 1)
        handle.write(b"}")
    elif isinstance(value, list | tuple) and depth < 200:
        handle.write(b"[")
        for index, item in enumerate(value):
            handle.write(b"," if index else b"")
            _write_json(handle, item, depth + 1)
        handle.write(b"]")
    else:
        handle.write(utf8(json.dumps(value, ensure_ascii=False, default=str)))


def json_aside(value: Any, what: str, name: str) -> AttachmentRecord:
    """`value` written as JSON to a spill file, as an attachment (see `LongText`)."""
    handle, path = spill_file(".json")
    with handle:
        _write_json(handle, value)
    return _kept(path, what, name, "application/json", path.stat().st_size)


def heavier(value: Any, budget: int) -> bool:
    """Whether `value` (JSON-like) holds more than about `budget` characters; stops early."""
    pending = [value]
    while pending:
        found = pending.pop()
        if isinstance(found, str):
            budget -= len(found)
        elif isinstance(found, dict):
            budget -= 8 * len(found)
            pending.extend(found.keys())
            pending.extend(found.values())
        elif isinstance(found, list | tuple):
            budget -= 4 * len(found)
            pending.extend(found)
        else:
            budget -= 8
        if budget < 0:
            return True
    return False


class _HasMessage(Protocol):
    @property
    def message(self) -> MessageRecord: ...


Item = TypeVar("Item", bound=_HasMessage)


def item_weight(item: _HasMessage) -> int:
    """About what an item costs in memory, for batches and chunks: its text and source."""
    message = item.message
    return len(message.text) + len(message.raw_json) + 512


def item_kept_whole(item: Item, limits: Limits | None = None) -> Item:
    """`item` unchanged, or, when its text or source JSON is longer than the text cap or
    holds JSON strings set aside whole, with the whole of each attached (spill files the
    import stages) and the first part as the text."""
    message = item.message
    limit = (limits or import_limits()).text_chars
    marked = _KEPT_WORD in message.text or _KEPT_WORD in message.raw_json
    if not marked and len(message.text) <= limit and len(message.raw_json) <= limit:
        return item
    return replace(item, message=message_kept_whole(message, limit))  # type: ignore[type-var]


def _strings_kept(message: MessageRecord) -> tuple[str, list[AttachmentRecord]]:
    """The text without the markers of JSON strings set aside, and those strings' files."""
    names = _KEPT.findall(message.text) + _KEPT_IN_JSON.findall(message.raw_json)
    attachments = []
    for number, name in enumerate(dict.fromkeys(names), start=1):
        path = _spilled(name)
        if path is None:  # not one of ours (a marker typed into a message), or staged
            continue
        file_name = "message.txt" if number == 1 else f"message-{number}.txt"
        attachments.append(
            AttachmentRecord(
                external_id=f"kept-{name}",
                file_name=file_name,
                mime_type="text/plain",
                size=path.stat().st_size,
                metadata={"kept_whole": "value", "setting": VALUE_SETTING},
                content=SpilledFile(path, remove=False),
            )
        )
    return _KEPT.sub("", message.text), attachments


def message_kept_whole(message: MessageRecord, limit: int) -> MessageRecord:
    text, strings = _strings_kept(message)
    attachments = [*message.attachments, *strings]
    metadata = dict(message.metadata)
    kept: dict[str, Any] = {"setting": TEXT_SETTING}
    if strings:
        kept["strings"] = len(strings)
    if len(text) > limit:
        name = "message-text.txt" if strings else "message.txt"
        attachments.append(_text_aside(text, "text", name, "text/plain"))
        kept["text_characters"] = len(text)
        text = text[:limit]
    raw_json = message.raw_json
    if len(raw_json) > limit:
        attachments.append(_text_aside(raw_json, "source", "message.json", "application/json"))
        kept["source_characters"] = len(raw_json)
        raw_json = ""
    heavy = [key for key, value in metadata.items() if heavier(value, limit // 8)]
    if heavy:
        attachments.append(
            json_aside({key: metadata[key] for key in heavy}, "metadata", "metadata.json")
        )
        kept["metadata_keys"] = heavy
        for key in heavy:
            del metadata[key]
    metadata["kept_whole"] = kept
    return replace(
        message,
        text=text,
        raw_json=raw_json,
        metadata=metadata,
        attachments=tuple(attachments),
    )
