"""The content-addressed blob store for attachment bytes, in the state folder.

Bytes are stored under `blobs/<aa>/<bb>/<sha256>`; a row keeps that relative path. File
names from providers never become paths. Writes go to a temporary file first and are renamed
into place, so a crash never leaves a half-written blob under its final name; storing the
same bytes twice is a no-op. Staging happens before the sink's transaction (no file I/O
inside a write transaction); a blob whose batch rolled back is an orphan, never a loss.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.conf import settings

from wirecat.errors import Invalid, NotFound

CHUNK = 1 << 20
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class StoredBlob:
    sha256: str
    size: int
    path: str  # relative to the state folder


def blob_root() -> Path:
    return Path(settings.BLOB_DIR)


def _relative(sha256: str) -> str:
    return f"blobs/{sha256[:2]}/{sha256[2:4]}/{sha256}"


def blob_put(stream: BinaryIO) -> StoredBlob:
    """Copy `stream` into the store; returns its SHA-256, size and relative path."""
    root = blob_root()
    root.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(prefix=".incoming-", dir=root)
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := stream.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        sha256 = digest.hexdigest()
        relative = _relative(sha256)
        final = Path(settings.STATE_DIR) / relative
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.exists():
            os.unlink(tmp_name)
        else:
            os.replace(tmp_name, final)
    except BaseException:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
        raise
    return StoredBlob(sha256=sha256, size=size, path=relative)


def blob_open(path: str) -> BinaryIO:
    """Open a stored blob by the relative path a row keeps. Refuses anything else."""
    parts = path.split("/")
    if len(parts) != 4 or parts[0] != "blobs" or not _SHA256.match(parts[3]):
        raise Invalid(f"not a blob path: {path!r}")
    full = Path(settings.STATE_DIR) / path
    if not full.is_file():
        raise NotFound(f"blob {parts[3][:12]}… is not on disk (swept or never stored)")
    return full.open("rb")
