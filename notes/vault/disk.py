"""A vault's files on disk: one read never through a symbolic link and never past a limit,
one written whole or not at all, and their digests (the marker keeps them)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from pathlib import Path


class VaultFileError(Exception):
    """A file of a vault that cannot be imported; the message says why (the command and the
    result put the file's path in front)."""


def file_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_bytes(path: Path, limit: int) -> bytes:
    """A regular file's bytes, never through a symbolic link, refused above `limit` before
    it is read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise VaultFileError(f"cannot be read ({exc.strerror or exc})") from exc
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise VaultFileError("is not a regular file")
        if info.st_size > limit:
            raise VaultFileError(
                f"is {info.st_size:,} bytes; a note's file holds at most {limit:,}"
            )
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise VaultFileError(f"grew past {limit:,} bytes while it was read")
    return data


def write_atomic(path: Path, data: bytes) -> None:
    """Write `path` whole or not at all: a temporary file beside it, then a rename."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".wirecat-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
