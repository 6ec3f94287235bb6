"""What one export may cost, whatever the file: the caps every reader applies (each an
import setting of wirecat/settings.py, listed in docs/operations.md).

- A zip member's declared size and compression ratio are checked before it is inflated
  (`checked_member`), and again while it streams (`guarded_member`), in case its header lies.
- A line is read with a bounded `readline` (`line_too_long` tells the caller).
- An import's bytes are capped and the state folder's free space checked before anything is
  written (`import_preflight`).
The JSON checks (depth, one value's size, values and bytes in one message) are
json_guard.py's; a message's text past WIRECAT_IMPORT_MAX_TEXT is kept whole (kept_whole.py).

Exceeding a cap is a FormatError (archive.connectors.base) naming the file, the member or the
offset, and the setting.
"""

from __future__ import annotations

import io
import os
import shutil
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wirecat.errors import Invalid

if TYPE_CHECKING:
    from archive.connectors.base import FormatError

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30

LINE_SETTING = "WIRECAT_IMPORT_MAX_LINE"
MEMBER_SETTING = "WIRECAT_IMPORT_MAX_ZIP_MEMBER"
RATIO_SETTING = "WIRECAT_IMPORT_MAX_ZIP_RATIO"
BYTES_SETTING = "WIRECAT_IMPORT_MAX_BYTES"
MARGIN_SETTING = "WIRECAT_IMPORT_DISK_MARGIN"
# Members that inflate to no more than this are not held to the ratio (a small file of
# repeated JSON compresses well and costs nothing).
RATIO_FLOOR = 1 * MIB


@dataclass(frozen=True)
class Limits:
    json_depth: int = 64
    json_value_bytes: int = 1 * MIB
    message_bytes: int = 16 * MIB
    message_values: int = 100_000
    line_bytes: int = 16 * MIB
    text_chars: int = 1_000_000
    member_bytes: int = 4 * GIB
    zip_ratio: int = 200
    import_bytes: int = 256 * GIB
    disk_margin: int = 512 * MIB
    whole_file_bytes: int = 4 * MIB


def import_limits() -> Limits:
    """The caps as configured now (wirecat/settings.py reads them from the environment)."""
    from django.conf import settings

    default = Limits()
    return Limits(
        json_depth=getattr(settings, "IMPORT_MAX_JSON_DEPTH", default.json_depth),
        json_value_bytes=getattr(settings, "IMPORT_MAX_JSON_VALUE", default.json_value_bytes),
        message_bytes=getattr(settings, "IMPORT_MAX_MESSAGE_BYTES", default.message_bytes),
        message_values=getattr(settings, "IMPORT_MAX_MESSAGE_VALUES", default.message_values),
        line_bytes=getattr(settings, "IMPORT_MAX_LINE", default.line_bytes),
        text_chars=getattr(settings, "IMPORT_MAX_TEXT", default.text_chars),
        member_bytes=getattr(settings, "IMPORT_MAX_ZIP_MEMBER", default.member_bytes),
        zip_ratio=getattr(settings, "IMPORT_MAX_ZIP_RATIO", default.zip_ratio),
        import_bytes=getattr(settings, "IMPORT_MAX_BYTES", default.import_bytes),
        disk_margin=getattr(settings, "IMPORT_DISK_MARGIN", default.disk_margin),
        whole_file_bytes=getattr(settings, "IMPORT_WHOLE_FILE", default.whole_file_bytes),
    )


def size_text(size: int) -> str:
    """1536 → "1.5 KiB"; whole units without decimals."""
    for unit, factor in (("TiB", 1 << 40), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if size >= factor:
            value = size / factor
            return f"{value:.0f} {unit}" if value.is_integer() else f"{value:.1f} {unit}"
    return f"{size} bytes"


def _format_error(path: Path | str, position: str, problem: str) -> FormatError:
    from archive.connectors.base import FormatError  # base imports this module

    return FormatError(path, position, problem)


# --- zip members ---------------------------------------------------------------------------


def checked_member(archive_path: Path, info: zipfile.ZipInfo, limits: Limits | None = None) -> None:
    """Refuse, before inflating a byte, a member bigger than the cap or compressed more than
    the ratio allows (a zip bomb), or one claiming more compressed bytes than the zip has."""
    found = limits or import_limits()
    where = f"member {info.filename}"
    if info.file_size > found.member_bytes:
        raise _format_error(
            archive_path,
            where,
            f"inflates to {size_text(info.file_size)}, more than "
            f"{size_text(found.member_bytes)} ({MEMBER_SETTING})",
        )
    if info.file_size <= RATIO_FLOOR:
        return
    try:
        archive_size = archive_path.stat().st_size
    except OSError:
        archive_size = None
    if archive_size is not None and info.compress_size > archive_size:
        raise _format_error(
            archive_path,
            where,
            f"claims {size_text(info.compress_size)} of compressed data in a zip of "
            f"{size_text(archive_size)}: its header is wrong",
        )
    ratio = info.file_size / max(info.compress_size, 1)
    if ratio > found.zip_ratio:
        raise _format_error(
            archive_path,
            where,
            f"inflates {size_text(info.compress_size)} to {size_text(info.file_size)}, "
            f"{ratio:,.0f} times, more than {found.zip_ratio} times ({RATIO_SETTING}): "
            "refused as a zip bomb",
        )


class _GuardedMember(io.RawIOBase):
    """A zip member's stream that counts what it inflates: never more than its header
    declared nor the member cap, never at a higher ratio than allowed."""

    def __init__(
        self,
        archive_path: Path,
        info: zipfile.ZipInfo,
        stream: Any,
        on_close: Callable[[], None] | None,
        limits: Limits,
    ) -> None:
        super().__init__()
        self._archive_path = archive_path
        self._info = info
        self._stream = stream
        self._on_close = on_close
        self._limits = limits
        self._inflated = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._stream.read(len(buffer))
        self._inflated += len(data)
        self._check()
        buffer[: len(data)] = data
        return len(data)

    def _check(self) -> None:
        where = f"member {self._info.filename}, byte {self._inflated}"
        ceiling = min(self._info.file_size, self._limits.member_bytes)
        if self._inflated > ceiling:
            raise _format_error(
                self._archive_path,
                where,
                f"inflates past its declared {size_text(self._info.file_size)} "
                f"(or {MEMBER_SETTING})",
            )
        if self._inflated <= RATIO_FLOOR:
            return
        left = getattr(self._stream, "_compress_left", None)
        if not isinstance(left, int):
            return
        decompressor = getattr(self._stream, "_decompressor", None)
        tail = getattr(decompressor, "unconsumed_tail", b"")
        consumed = self._info.compress_size - left - len(tail)
        ratio = self._inflated / max(consumed, 1)
        if ratio > self._limits.zip_ratio:
            raise _format_error(
                self._archive_path,
                where,
                f"inflates {ratio:,.0f} times, more than {self._limits.zip_ratio} times "
                f"({RATIO_SETTING}), although its header says less: refused as a zip bomb",
            )

    def close(self) -> None:
        if not self.closed:
            try:
                self._stream.close()
            finally:
                if self._on_close is not None:
                    self._on_close()
        super().close()


def guarded_member(
    archive_path: Path,
    info: zipfile.ZipInfo,
    stream: Any,
    *,
    on_close: Callable[[], None] | None = None,
    limits: Limits | None = None,
) -> io.BufferedReader:
    """`stream` (the member opened) read through the checks above, buffered (readline
    works); `on_close` runs after it is closed."""
    raw = _GuardedMember(archive_path, info, stream, on_close, limits or import_limits())
    return io.BufferedReader(raw, buffer_size=64 * KIB)


# --- lines ---------------------------------------------------------------------------------


def line_too_long(line: bytes, limit: int) -> bool:
    """Whether `line`, read with `readline(limit + 1)`, is longer than `limit` bytes (its
    line end not counted)."""
    return len(line) > limit and not line.endswith(b"\n")


# --- the whole import ----------------------------------------------------------------------


def import_size(path: Path) -> int:
    """The bytes an import of `path` reads: a file's size (a zip's members as declared,
    inflated), or the sum of a folder's files (links not followed)."""
    if path.is_dir():
        total = 0
        for folder, _subfolders, files in os.walk(path):
            for name in files:
                try:
                    total += os.lstat(os.path.join(folder, name)).st_size
                except OSError:
                    continue
        return total
    size = path.stat().st_size
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as archive:
                return max(size, sum(info.file_size for info in archive.infolist()))
        except (zipfile.BadZipFile, OSError, ValueError, EOFError):
            return size
    return size


def import_preflight(path: Path, limits: Limits | None = None) -> None:
    """Before an import writes anything: refuse one larger than the import cap, or one the
    state folder has no room for (its bytes plus a margin)."""
    from django.conf import settings

    found = limits or import_limits()
    try:
        size = import_size(path)
    except OSError as exc:
        raise Invalid(f"{path.name}: cannot be read ({exc})") from exc
    if size > found.import_bytes:
        raise _format_error(
            path,
            "the whole export",
            f"holds {size_text(size)}, more than one import may read "
            f"({size_text(found.import_bytes)}, {BYTES_SETTING})",
        )
    state = Path(settings.STATE_DIR)
    free = shutil.disk_usage(state).free
    if free < size + found.disk_margin:
        raise Invalid(
            f"{path.name}: the state folder {state} has {size_text(free)} free, and this import "
            f"may need {size_text(size)} plus a margin of {size_text(found.disk_margin)} "
            f"({MARGIN_SETTING}). Free some space, or move the state folder "
            "(WIRECAT_STATE_DIR) to a larger disk."
        )
