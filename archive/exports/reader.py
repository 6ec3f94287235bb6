"""Reading a WireCat export back: its manifest, each file's lines as typed fields, and a
check of the whole export before anything is written. Every fault is a FormatError naming
the file, the line and the field ("messages.jsonl, line 7: sent_at: not a time")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from archive.connectors.base import FormatError
from archive.exports.format import (
    ATTACHMENTS,
    FILES,
    FORMAT,
    MANIFEST,
    VERSION,
    file_name,
    time_parsed,
)

_SHA256_CHARS = frozenset("0123456789abcdef")


def is_export(path: Path) -> bool:
    """True when `path` is a folder holding a WireCat export's manifest."""
    manifest = path / MANIFEST
    if not path.is_dir() or not manifest.is_file():
        return False
    try:
        found = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeError, ValueError):
        return False
    return isinstance(found, dict) and found.get("format") == FORMAT


@dataclass(frozen=True)
class Line:
    """One JSON object of a file (or an object inside one, `where` naming it), read field
    by field: each reader returns the expected type or raises naming the field."""

    path: Path
    number: int
    data: dict[str, Any]
    where: str = ""

    def fail(self, problem: str) -> FormatError:
        return FormatError(self.path, f"line {self.number}", f"{self.where}{problem}")

    def _get(self, name: str) -> Any:
        return self.data.get(name)

    def text(self, name: str, *, required: bool = False) -> str:
        value = self._get(name)
        if value is None and not required:
            return ""
        if not isinstance(value, str) or (required and not value):
            raise self.fail(f"{name}: {'a text' if value is None else 'not a text'}, required")
        return value

    def optional_text(self, name: str) -> str | None:
        value = self._get(name)
        if value is not None and not isinstance(value, str):
            raise self.fail(f"{name}: not a text or null")
        return value

    def integer(self, name: str) -> int:
        value = self._get(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{name}: not a whole number")
        return value

    def optional_integer(self, name: str) -> int | None:
        return None if self._get(name) is None else self.integer(name)

    def flag(self, name: str) -> bool:
        value = self._get(name)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.fail(f"{name}: not true or false")
        return value

    def time(self, name: str) -> datetime:
        found = self.optional_time(name)
        if found is None:
            raise self.fail(f"{name}: a time is required")
        return found

    def optional_time(self, name: str) -> datetime | None:
        value = self._get(name)
        if value is None:
            return None
        found = time_parsed(value)
        if found is None:
            raise self.fail(f"{name}: not a time with an offset ({str(value)[:40]!r})")
        return found

    def mapping(self, name: str) -> dict[str, Any]:
        value = self._get(name)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(f"{name}: not an object")
        return value

    def objects(self, name: str) -> list[Line]:
        """The objects of list field `name`, each readable as a Line."""
        value = self._get(name)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise self.fail(f"{name}: not a list of objects")
        return [
            Line(self.path, self.number, item, f"{self.where}{name}[{index}].")
            for index, item in enumerate(value)
        ]

    def values(self, name: str) -> list[Any]:
        value = self._get(name)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(f"{name}: not a list")
        return value

    def child(self, name: str) -> Line | None:
        value = self._get(name)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(f"{name}: not an object")
        return Line(self.path, self.number, value, f"{self.where}{name}.")


class ExportFolder:
    """An export on disk: its manifest read and checked, its files readable line by line."""

    def __init__(self, root: Path) -> None:
        self.root = root
        manifest_path = root / MANIFEST
        if not manifest_path.is_file():
            raise FormatError(manifest_path, "file", "missing: not a finished WireCat export")
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (UnicodeError, ValueError) as exc:
            raise FormatError(manifest_path, "file", f"not JSON ({exc})") from exc
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise FormatError(manifest_path, "format", f"not {FORMAT!r}")
        version = manifest.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version > VERSION:
            raise FormatError(
                manifest_path, "version", f"{version!r}: this WireCat reads up to {VERSION}"
            )
        counts = manifest.get("counts")
        if not isinstance(counts, dict):
            raise FormatError(manifest_path, "counts", "not an object")
        self.manifest = manifest
        self.counts: dict[str, int] = {}
        for kind in FILES:
            count = counts.get(kind)
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise FormatError(manifest_path, "counts", f"{kind}: not a count")
            if not self.path(kind).is_file():
                raise FormatError(self.path(kind), "file", "missing from the export")
            self.counts[kind] = count

    def path(self, kind: str) -> Path:
        return self.root / file_name(kind)

    def lines(self, kind: str) -> Iterator[Line]:
        """The file's objects in order, one per line; a line that is no JSON object is a
        FormatError naming it; so is a file with more or fewer lines than the manifest's."""
        path = self.path(kind)
        number = 0
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    data = json.loads(raw)
                except (UnicodeError, ValueError) as exc:
                    raise FormatError(path, f"line {number}", f"not JSON ({exc})") from exc
                if not isinstance(data, dict):
                    raise FormatError(path, f"line {number}", "not a JSON object")
                yield Line(path, number, data)
        if number != self.counts[kind]:
            raise FormatError(
                path,
                "file",
                f"{number} lines where the manifest counts {self.counts[kind]}: cut short?",
            )

    def attachment(self, line: Line, name: str) -> Path:
        """The bytes' file `name` (attachments/<sha256>) of an attachment, which must exist."""
        folder, _, sha = name.partition("/")
        if folder != ATTACHMENTS or len(sha) != 64 or not set(sha) <= _SHA256_CHARS:
            raise line.fail(f"file: not attachments/<sha256> ({name[:80]!r})")
        found = self.root / ATTACHMENTS / sha
        if not found.is_file():
            raise line.fail(f"file: {name} is missing from the export")
        return found
