"""Walking a vault: the Markdown files under its folder and the folders they are in, in a
stable order, within bounds; symbolic links never followed, dot files and folders skipped."""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from notes.services.folders import DEPTH_MAX, folder_name_clean
from notes.vault.marker import MARKER, Marker
from wirecat.errors import Invalid

FILES_MAX = 100_000  # Markdown files in one vault
ENTRIES_MAX = 1_000_000  # files and folders walked, whatever they are


@dataclass
class Walk:
    files: list[tuple[Path, str, str]] = field(default_factory=list)  # path, rel, folder
    folders: list[str] = field(default_factory=list)  # folders of empty directories
    errors: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def walk_vault(root: Path, marker: Marker | None) -> Walk:
    """The Markdown files under `root` and the folders they are in, in a stable order;
    symbolic links never followed, dot files and folders skipped."""
    walk = Walk()
    names = marker.dirs if marker else {}
    seen = 0

    def folder_of(rel_dir: str, parent_folder: str) -> str:
        name = PurePosixPath(rel_dir).name
        if rel_dir in names:
            name = names[rel_dir].rsplit("/", 1)[-1]
        name = folder_name_clean(name)
        return f"{parent_folder}/{name}" if parent_folder else name

    def visit(directory: Path, rel_dir: str, folder: str, depth: int) -> bool:
        """True when the directory holds no file that is not hidden (it is kept as an
        empty folder)."""
        nonlocal seen
        try:
            with os.scandir(directory) as found:
                entries = sorted(found, key=lambda e: e.name)
        except OSError as exc:
            walk.errors.append(f"{rel_dir or '.'}/: cannot be read ({exc.strerror or exc})")
            return False
        empty = True
        for entry in entries:
            seen += 1
            if seen > ENTRIES_MAX:
                raise Invalid(
                    f"{root}: more than {ENTRIES_MAX:,} files and folders; is this a vault?"
                )
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.name.startswith("."):
                if rel != MARKER:
                    walk.skipped["hidden files and folders (.obsidian, .trash, …)"] += 1
                continue
            if entry.is_symlink():
                walk.skipped["symbolic links (never followed)"] += 1
                empty = False
                continue
            if entry.is_dir(follow_symlinks=False):
                try:
                    inner = folder_of(rel, folder)
                except Invalid as exc:
                    walk.errors.append(f"{rel}/: {exc}")
                    empty = False
                    continue
                if depth + 1 > DEPTH_MAX:
                    walk.errors.append(f"{rel}/: at most {DEPTH_MAX} levels of folders")
                    empty = False
                    continue
                # A directory holding nothing (hidden files aside) is an empty folder; one
                # holding notes is their folder; one holding only other files (attachments)
                # is not a folder of notes.
                if visit(Path(entry.path), rel, inner, depth + 1):
                    walk.folders.append(inner)
                else:
                    empty = False
                continue
            empty = False
            if not entry.is_file(follow_symlinks=False):
                walk.skipped["special files (not regular files)"] += 1
            elif entry.name.lower().endswith(".md"):
                walk.files.append((Path(entry.path), rel, folder))
                if len(walk.files) > FILES_MAX:
                    raise Invalid(
                        f"{root}: more than {FILES_MAX:,} Markdown files (the last read: {rel})"
                    )
            else:
                walk.skipped["files that are not Markdown (.md)"] += 1
        return empty

    visit(root, "", "", 0)
    walk.skipped = dict(walk.skipped)
    return walk
