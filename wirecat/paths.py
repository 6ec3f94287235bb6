"""Where WireCat keeps its state: one folder holding the store, blobs and the broker file."""

from __future__ import annotations

import os
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
