"""The marker an export leaves in its folder (`.wirecat-vault.json`): what it wrote, with
each file's digest, the folders it made and the owner's link kinds. An export writes only
where its marker says it may; an import takes folder names and link kinds from it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from notes.vault.disk import VaultFileError, read_bytes, write_atomic
from wirecat.errors import Invalid

MARKER = ".wirecat-vault.json"
MARKER_VERSION = 1


@dataclass
class Marker:
    """What an export left in its folder: the files it wrote (with their digests; None for
    one being written when the export stopped), the folders it made (directory → the
    folder's path, which a directory name cannot always spell), the owner's link kinds."""

    files: dict[str, str | None] = field(default_factory=dict)
    dirs: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)


def marker_read(root: Path) -> Marker | None:
    path = root / MARKER
    if not path.exists() and not path.is_symlink():
        return None
    problem = f"{path} is not a WireCat vault marker; remove it if this is not an export"
    try:
        data = read_bytes(path, 64 * 1024 * 1024)
        raw = json.loads(data.decode("utf-8"))
    except (OSError, ValueError, VaultFileError) as exc:
        raise Invalid(f"{problem} ({exc})") from exc
    if not isinstance(raw, dict) or raw.get("wirecat_vault") != MARKER_VERSION:
        raise Invalid(problem)
    files, dirs, kinds = raw.get("files", {}), raw.get("dirs", {}), raw.get("link_kinds", {})
    if not all(isinstance(x, dict) for x in (files, dirs, kinds)):
        raise Invalid(problem)
    return Marker(
        files={str(k): (str(v) if v else None) for k, v in files.items()},
        dirs={str(k): str(v) for k, v in dirs.items()},
        kinds={str(k): str(v) for k, v in kinds.items()},
    )


def marker_write(root: Path, marker: Marker) -> None:
    data = {
        "wirecat_vault": MARKER_VERSION,
        "about": "Written by `wirecat notes export`: the files it wrote. Import with"
        " `wirecat notes import`.",
        "link_kinds": dict(sorted(marker.kinds.items())),
        "dirs": dict(sorted(marker.dirs.items())),
        "files": dict(sorted(marker.files.items())),
    }
    text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    write_atomic(root / MARKER, text.encode())
