"""`backup_restore`: an archive made by `backup_make` back into an empty state folder.

Nothing is final before everything is checked. The archive is read once, as a stream,
into a hidden folder inside the state folder: each member's name must be one a backup
writes (never a link, an absolute name or `..`), sizes and the member count are bounded,
and each part is hashed as it is written. Then the manifest is checked against every part
(size and SHA-256), the schema against the migrations this WireCat knows, the store by
`PRAGMA integrity_check` and every FTS5 index's `integrity-check`, and its counts against
the manifest's. Only then do the parts move into place, the store file last: until that
rename there is no store in the folder, so a failed restore leaves none half-made.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tarfile
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

from archive.backups.services.parts import (
    FORMAT,
    FORMAT_VERSION,
    KEY_FILES,
    MANIFEST_PART,
    STORE_PART,
    Progress,
    blob_part,
    part_allowed,
    store_counts,
    store_faults,
    store_open,
)
from wirecat.errors import Invalid, WireCatError
from wirecat.paths import database_path

CHUNK = 1 << 20
MAX_MEMBERS = 2_000_000
MAX_MANIFEST = 512 << 20
MAX_KEY = 64 << 10
DISK_MARGIN = 256 << 20  # left free on the state folder's disk while parts are written
# Made by any start of WireCat in an empty folder (wirecat/settings.py): not a store.
LEFT_BY_A_START = {"secret_key", "uploads"}
# The backups themselves (`wirecat backup`'s default folder): a restore leaves them be.
BACKUPS = "backups"


class RestoreRefused(WireCatError):
    """A restore that was not done: the archive is damaged or hostile, or the folder
    already holds a store. Nothing was written to the state folder's own names."""


@dataclass(frozen=True)
class Restored:
    state: Path
    counts: dict[str, int]
    manifest: dict[str, Any]


def _quiet(_: str, __: int, ___: int) -> None:
    return None


def state_refusal(state: Path) -> str | None:
    """Why `state` cannot take a restore (it holds a store, or anything a start does not
    make), or None when it is empty enough."""
    if not state.exists():
        return None
    if not state.is_dir():
        return f"{state} is not a folder"
    store = database_path(state)
    if store.exists():
        return f"{state} already holds a store ({store}): restore only into an empty state folder"
    for entry in sorted(state.iterdir()):
        if entry.name.startswith(".restore-"):
            continue  # a restore that died before cleaning up: its own, never final
        if entry.name == BACKUPS and entry.is_dir() and not entry.is_symlink():
            continue
        if entry.name in LEFT_BY_A_START and (entry.is_file() or not any(entry.iterdir())):
            continue
        if entry.is_dir() and not entry.is_symlink() and not any(entry.iterdir()):
            continue
        return (
            f"{state} is not empty (it holds {entry.name}): restore only into an empty state folder"
        )
    return None


class _Counting:
    """The archive file read through, its position reported as progress."""

    def __init__(self, handle: BinaryIO, total: int, tick: Progress) -> None:
        self.handle = handle
        self.total = total
        self.tick = tick
        self.done = 0

    def read(self, size: int = -1) -> bytes:
        chunk = self.handle.read(size)
        self.done += len(chunk)
        self.tick("reading", self.done, self.total)
        return chunk


def _member_write(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path) -> str:
    source = tar.extractfile(member)
    assert source is not None
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    digest = hashlib.sha256()
    written = 0
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
            written += len(chunk)
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    if written != member.size:
        raise RestoreRefused(f"part {member.name} is cut short ({written} of {member.size} bytes)")
    return digest.hexdigest()


def _member_check(member: tarfile.TarInfo, seen: set[str], free: int) -> None:
    name = member.name
    if not member.isreg():
        kind = "link" if member.issym() or member.islnk() else "not a plain file"
        raise RestoreRefused(f"member {name!r} is a {kind}: a backup holds only files")
    if name in seen:
        raise RestoreRefused(f"member {name!r} appears twice")
    if name == MANIFEST_PART:
        if member.size > MAX_MANIFEST:
            raise RestoreRefused(f"{MANIFEST_PART} is {member.size:,} bytes, more than any backup")
        return
    if not part_allowed(name):
        raise RestoreRefused(f"member {name!r} is no part of a WireCat backup")
    if name.startswith("keys/") and member.size > MAX_KEY:
        raise RestoreRefused(f"part {name} is {member.size:,} bytes, too large for a key")
    if member.size > free - DISK_MARGIN:
        raise RestoreRefused(
            f"part {name} needs {member.size:,} bytes and the state folder's disk has"
            f" {max(free - DISK_MARGIN, 0):,} to spare"
        )


def _unpack(src: Path, work: Path, progress: Progress) -> tuple[dict[str, Any], dict[str, str]]:
    """Every part into `work` (hashed), and the manifest; refuses a member out of shape."""
    hashes: dict[str, str] = {}
    manifest_body: bytes | None = None
    seen: set[str] = set()
    with src.open("rb") as raw:
        counting = _Counting(raw, src.stat().st_size, progress)
        current = "the archive's start"
        try:
            with tarfile.open(fileobj=cast("BinaryIO", counting), mode="r|*") as tar:
                for member in tar:
                    current = f"part {member.name}"
                    if len(seen) >= MAX_MEMBERS:
                        raise RestoreRefused(f"more than {MAX_MEMBERS:,} members")
                    _member_check(member, seen, shutil.disk_usage(work).free)
                    seen.add(member.name)
                    if member.name == MANIFEST_PART:
                        handle = tar.extractfile(member)
                        assert handle is not None
                        manifest_body = handle.read(MAX_MANIFEST + 1)
                        continue
                    hashes[member.name] = _member_write(tar, member, work / member.name)
        except (tarfile.TarError, zlib.error, EOFError, OSError) as exc:
            if isinstance(exc, OSError) and exc.errno is not None:  # the disk's
                raise
            raise RestoreRefused(f"the archive is damaged (reading {current}): {exc}") from exc
    if manifest_body is None:
        raise RestoreRefused(
            f"the archive ends, after {current}, without its {MANIFEST_PART}: it is damaged,"
            " cut short, or not a WireCat backup"
        )
    try:
        manifest = json.loads(manifest_body)
    except ValueError as exc:
        raise RestoreRefused(f"{MANIFEST_PART} is not JSON: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise RestoreRefused(f"{MANIFEST_PART} is not a WireCat backup's manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise RestoreRefused(
            f"the backup's format {manifest.get('format_version')!r} is not one this WireCat"
            f" reads ({FORMAT_VERSION})"
        )
    return manifest, hashes


def _parts_check(manifest: dict[str, Any], hashes: dict[str, str], work: Path) -> None:
    """Every part the manifest lists is there, whole, with its SHA-256; nothing else is."""
    listed = manifest.get("parts")
    if not isinstance(listed, list):
        raise RestoreRefused(f"{MANIFEST_PART} lists no parts")
    expected: dict[str, dict[str, Any]] = {}
    for part in listed:
        if not isinstance(part, dict) or not isinstance(part.get("name"), str):
            raise RestoreRefused(f"{MANIFEST_PART} has a part without a name")
        expected[part["name"]] = part
    extra = sorted(set(hashes) - set(expected))
    if extra:
        raise RestoreRefused(f"part {extra[0]} is in the archive but not in the manifest")
    absent = sorted(set(expected) - set(hashes))
    if absent:
        raise RestoreRefused(f"part {absent[0]} is in the manifest but not in the archive")
    if STORE_PART not in hashes:
        raise RestoreRefused(f"the archive has no store ({STORE_PART})")
    for name, part in expected.items():
        size = (work / name).stat().st_size
        if part.get("size") != size or part.get("sha256") != hashes[name]:
            raise RestoreRefused(
                f"part {name} is damaged: its size or SHA-256 does not match the manifest"
            )
        claimed = blob_part(name)
        if claimed is not None and claimed != hashes[name]:
            raise RestoreRefused(f"part {name} is damaged: its bytes are not the blob it names")


def _schema_check(manifest: dict[str, Any]) -> None:
    """Refuse a store migrated further than this WireCat's code knows."""
    from django.db.migrations.loader import MigrationLoader

    schema = manifest.get("schema")
    if not isinstance(schema, dict):
        raise RestoreRefused(f"{MANIFEST_PART} has no schema versions")
    known = set(MigrationLoader(None, ignore_no_migrations=True).disk_migrations)
    for app, name in sorted(schema.items()):
        if (app, name) not in known and app in {a for a, _ in known}:
            raise RestoreRefused(
                f"the backup's schema is newer than this WireCat ({app} migration {name} is"
                " unknown here): restore it with the WireCat that made it, or a newer one"
            )


def _store_check(manifest: dict[str, Any], store: Path) -> dict[str, int]:
    db = store_open(store)
    try:
        faults = store_faults(db)
        if faults:
            raise RestoreRefused(f"the backed-up store fails its checks: {'; '.join(faults[:5])}")
        counts = store_counts(db)
    finally:
        db.close()
    promised = manifest.get("counts")
    if not isinstance(promised, dict):
        raise RestoreRefused(f"{MANIFEST_PART} has no counts")
    blobs = sum(1 for part in manifest["parts"] if blob_part(str(part["name"])) is not None)
    found = {**counts, "blobs": blobs}
    for name, value in found.items():
        if promised.get(name) != value:
            raise RestoreRefused(
                f"the store holds {value:,} {name} and the manifest counted {promised.get(name)!r}"
            )
    return found


def _into_place(work: Path, state: Path, store: Path) -> None:
    """Keys, then blobs, then the store file last (its name is what makes a store)."""
    for key in KEY_FILES:
        if (work / "keys" / key).is_file():
            os.replace(work / "keys" / key, state / key)
    if (work / "blobs").is_dir():
        if (state / "blobs").is_dir():
            (state / "blobs").rmdir()  # empty (state_refusal): the restored one replaces it
        os.replace(work / "blobs", state / "blobs")
    os.replace(work / STORE_PART, store)
    fd = os.open(state, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def backup_restore(src: Path, state: Path, progress: Progress = _quiet) -> Restored:
    """Restore the archive `src` into the empty state folder `state`; RestoreRefused (with
    what and where) for a damaged or hostile archive or a folder that holds a store."""
    if not src.is_file():
        raise Invalid(f"{src}: no such backup file")
    state = state.expanduser().absolute()
    store = database_path(state)
    if store.parent != state:
        raise Invalid(
            f"WIRECAT_DB names {store}, outside the state folder {state}: a restore puts the"
            " store in the state folder (unset WIRECAT_DB, or set it to a plain file name)"
        )
    refusal = state_refusal(state)
    if refusal is not None:
        raise RestoreRefused(refusal)
    made_state = not state.exists()
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    work = Path(tempfile.mkdtemp(prefix=".restore-", dir=state))
    done = False
    try:
        manifest, hashes = _unpack(src, work, progress)
        progress("checking", 0, 1)
        _parts_check(manifest, hashes, work)
        _schema_check(manifest)
        counts = _store_check(manifest, work / STORE_PART)
        refusal = state_refusal(state)  # a store made meanwhile is never overwritten
        if refusal is not None:
            raise RestoreRefused(refusal)
        _into_place(work, state, store)
        done = True
        progress("checking", 1, 1)
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(work)
        if made_state and not done:
            with contextlib.suppress(OSError):
                state.rmdir()  # only when empty: the folder this restore made
    return Restored(state=state, counts=counts, manifest=manifest)
