"""What every export reader implements, and the helpers they share."""

from __future__ import annotations

import functools
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, ClassVar, Protocol

# What a hostile file may cost (limits.py), and a message's text kept whole beside it
# (kept_whole.py); the import service reaches them here, through the connectors' public face.
from archive.connectors.kept_whole import LongText as LongText
from archive.connectors.kept_whole import item_kept_whole as item_kept_whole
from archive.connectors.kept_whole import item_weight as item_weight
from archive.connectors.kept_whole import spill_sweep as spill_sweep
from archive.connectors.limits import LINE_SETTING as LINE_SETTING
from archive.connectors.limits import Limits as Limits
from archive.connectors.limits import checked_member, guarded_member
from archive.connectors.limits import import_limits as import_limits
from archive.connectors.limits import import_preflight as import_preflight
from archive.connectors.limits import line_too_long as line_too_long
from archive.connectors.limits import size_text as size_text
from archive.store.domain import AccountRecord, ChatRecord, IdentityRecord, MessageRecord
from wirecat.errors import Invalid


class FormatError(Invalid):
    """The export is malformed. The message names the file and the position."""

    def __init__(self, path: Path | str, position: str, problem: str) -> None:
        self.path = str(path)
        self.position = position
        self.problem = problem
        super().__init__(f"{Path(path).name}, {position}: {problem}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.position, self.problem))


@dataclass(frozen=True)
class ImportItem:
    """One message of an export, with the chat it belongs to and the people it mentions."""

    chat: ChatRecord
    message: MessageRecord
    identities: tuple[IdentityRecord, ...] = ()


@dataclass(frozen=True)
class ReadOptions:
    account_name: str | None = None  # `--account NAME`: the owner's account these belong to
    # The name the owner gave the file (an upload is stored under a generated folder).
    source_name: str | None = None


@dataclass
class ExportStream:
    """An opened export: the account it belongs to, and its messages as a stream."""

    format: str
    account: AccountRecord
    items: Iterator[ImportItem]
    total: int | None = None  # messages in the export, when the format tells
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> count, filled as read
    # Releases what the reader holds open (a database, a temporary copy); called once.
    close: Callable[[], None] | None = None
    # The reader parses the file whole at C speed (telegram/whole_file.py): read in the
    # importing process, it costs less than a forked reader's pickling and copied pages.
    held_whole: bool = False


class ExportReader(Protocol):
    format: ClassVar[str]  # short name, e.g. "telegram"
    label: ClassVar[str]  # what the owner calls it, e.g. "Telegram Desktop export (result.json)"

    def detect(self, path: Path) -> bool:
        """True when `path` (a file or folder) holds this format. Reads content, not names."""
        ...

    def open(self, path: Path, options: ReadOptions) -> ExportStream: ...


# What reading a damaged or unusual zip member can raise: a bad archive, corrupt deflate
# data, a member cut short, an encrypted member (RuntimeError), an unsupported compression
# method (zipfile raises NotImplementedError for those).
ZIP_ERRORS: tuple[type[BaseException], ...] = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    RuntimeError,
    NotImplementedError,
)

# Reading a member that may be missing, unreadable or damaged.
ZIP_READ_ERRORS: tuple[type[BaseException], ...] = (OSError, KeyError, *ZIP_ERRORS)


def export_account(provider: str, options: ReadOptions) -> AccountRecord:
    """The account of an export whose format does not say whose it is: the one the owner
    named with `--account`, else one shared "<provider>-export" account."""
    return AccountRecord(
        provider=provider,
        external_id=options.account_name or f"{provider}-export",
        name=options.account_name or "",
    )


def safe_member(root: Path, relative: str) -> Path | None:
    """`relative` (a path an export names) inside `root`, or None when it would escape it
    (absolute paths, `..`, symlinks out) or does not exist. Windows separators accepted."""
    cleaned = relative.replace("\\", "/").strip()
    if not cleaned or cleaned.startswith("/") or (len(cleaned) > 1 and cleaned[1] == ":"):
        return None
    parts = PurePosixPath(cleaned).parts
    if any(part in ("..", "") for part in parts):
        return None
    candidate = root.joinpath(*parts)
    try:
        resolved = candidate.resolve(strict=True)
        resolved.relative_to(root.resolve())
    except (OSError, ValueError):
        return None
    return resolved if resolved.is_file() else None


def safe_zip_member(archive: zipfile.ZipFile, relative: str) -> zipfile.ZipInfo | None:
    """The zip entry an export names, refusing absolute paths and `..` (zip slip)."""
    cleaned = relative.replace("\\", "/")
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    if not cleaned or cleaned.startswith("/") or ".." in PurePosixPath(cleaned).parts:
        return None
    try:
        info = archive.getinfo(cleaned)
    except KeyError:
        return None
    return None if info.is_dir() else info


# Openers are picklable (module-level functions bound with functools.partial, or small
# classes): an import may read the export in a child process and hand items over a pipe.


def _open_file(path: Path) -> BinaryIO:
    return path.open("rb")


def file_opener(path: Path) -> Callable[[], BinaryIO]:
    return functools.partial(_open_file, path)


def _open_zip_member(archive_path: Path, member: str) -> BinaryIO:
    # A fresh ZipFile per call: the caller reads and closes the member stream. The member's
    # declared size and compression ratio are checked before anything is inflated, and
    # again while it streams (limits.py).
    handle = zipfile.ZipFile(archive_path)
    try:
        info = handle.getinfo(member)
        checked_member(archive_path, info)
        return guarded_member(archive_path, info, handle.open(info), on_close=handle.close)
    except BaseException:
        handle.close()
        raise


def zip_opener(archive_path: Path, member: str) -> Callable[[], BinaryIO]:
    return functools.partial(_open_zip_member, archive_path, member)


def read_head(path: Path, size: int = 4096) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(size)
    except OSError:
        return b""


# Export JSON is untrusted: these take whatever a field holds and give the expected type.


def json_id(value: object) -> str:
    """An id field as text ("" for null/true/false); 12.0 becomes "12"."""
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def json_text(value: object) -> str:
    return value if isinstance(value, str) else ""


def json_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def json_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
