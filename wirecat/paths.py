"""Where WireCat keeps its state: one folder holding the store, blobs and the broker file."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path


def state_dir() -> Path:
    """`WIRECAT_STATE_DIR`, else `$XDG_DATA_HOME/WireCat`, else `~/.local/share/WireCat`."""
    explicit = os.environ.get("WIRECAT_STATE_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return (base / "WireCat").resolve()


def database_path(folder: Path) -> Path:
    """`WIRECAT_DB` names the file (relative names live in the state folder)."""
    name = os.environ.get("WIRECAT_DB", "wirecat.db")
    path = Path(name).expanduser()
    return path if path.is_absolute() else folder / path


PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600
PRIVATE_UMASK = 0o077
# SQLite's companions of a database file (it makes them with the database file's mode).
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def _make_private(path: Path, *, folder_mode: int = PRIVATE_FOLDER) -> bool:
    """chmod `path` to 0700 (a folder) or 0600 (a file); symlinks and other kinds are left
    alone (chmod would follow a link out of the folder). True when it is a folder."""
    try:
        found = path.lstat()
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(found.st_mode):
        if stat.S_IMODE(found.st_mode) != folder_mode:
            path.chmod(folder_mode)
        return True
    if stat.S_ISREG(found.st_mode) and stat.S_IMODE(found.st_mode) != PRIVATE_FILE:
        path.chmod(PRIVATE_FILE)
    return False


def umask_private() -> None:
    """What the WireCat processes make is their owner's alone (files 0600, folders 0700).
    Set by the `wirecat` command (so `wirecat start` passes it to gunicorn, the worker and
    beat) and by the WSGI module, not by the settings: a test run or another program that
    imports them keeps its own umask."""
    os.umask(PRIVATE_UMASK)


def state_dir_private(folder: Path, *, database: Path | None = None) -> None:
    """Make the state folder its owner's alone, at every start of every process (settings
    import): the folder 0700, and what it holds 0600 (files) and 0700 (folders). SQLite
    makes a store's -wal and -shm with the store's own mode; what the processes make later
    is born private under `umask_private()`, and sits in the 0700 folder whatever its mode.

    A folder already 0700 was made or fixed by an earlier start: only its top level is
    checked (cheap, whatever the number of blobs). Any other mode (a folder made before
    this rule, or loosened by hand) has its whole tree fixed once.
    """
    try:
        _state_dir_private(folder, database)
    except OSError as exc:  # a read-only folder: nothing can be fixed, nothing written
        logging.getLogger(__name__).warning(
            "The state folder %s could not be made private (%s): fix its modes by hand"
            " (folder 0700, files 0600) once it is writable.",
            folder,
            exc.strerror or exc,
        )


def _state_dir_private(folder: Path, database: Path | None) -> None:
    folder.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)
    whole_tree = stat.S_IMODE(folder.stat().st_mode) != PRIVATE_FOLDER
    if whole_tree:  # (one already 0700 is not chmod-ed again: it may be read-only)
        folder.chmod(PRIVATE_FOLDER)
        for root, folders, files in os.walk(folder):
            for name in files + folders:
                _make_private(Path(root) / name)
    else:
        for entry in folder.iterdir():
            _make_private(entry)
    if database is not None and folder not in database.parents:
        # WIRECAT_DB names a file elsewhere: that file and its companions, not their folder.
        for candidate in (database, *(Path(f"{database}{end}") for end in SQLITE_COMPANIONS)):
            if candidate.is_file():
                _make_private(candidate)
