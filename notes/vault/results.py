"""What an import or an export reports: its result, and its progress as it goes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

# Progress: (stage, done, total); stages "read" and "write".
Progress = Callable[[str, int, int], None]


@dataclass
class ImportResult:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    folders: int = 0  # folders made
    errors: list[str] = field(default_factory=list)  # "path: what is wrong"
    skipped: dict[str, int] = field(default_factory=dict)  # reason → how many
    # Errors found while checking: nothing was written. Stopped while writing (a file
    # changed meanwhile): the batches before it were; the same import again finishes.
    stopped: bool = False


@dataclass
class ExportResult:
    notes: int = 0
    folders: int = 0
    written: int = 0  # files new or changed
    unchanged: int = 0  # files already as they would be written
    removed: int = 0  # files of notes since deleted or renamed
