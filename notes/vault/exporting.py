"""Exporting the notes into a folder: where each folder and note goes, each note's file, and
the checks that nothing changed there since the last export is written over (see
`notes.vault`)."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from notes.models import Folder, LinkKind, Note
from notes.services.folders import folder_path, folder_paths
from notes.services.links import link_kinds
from notes.vault.disk import VaultFileError, file_digest, read_bytes, write_atomic
from notes.vault.frontmatter import FILE_BYTES_MAX, moment, parse, second
from notes.vault.marker import MARKER, Marker, marker_read, marker_write
from notes.vault.names import safe_name, unique_name
from notes.vault.results import ExportResult, Progress
from notes.vault.store import Explicit, Known, Store, explicit_links, note_tags, same
from wirecat.errors import Conflict, Invalid, WireCatError


def _render(note: Note, *, title: bool, tags: list[str], links: list[Explicit]) -> bytes:
    front: dict[str, object] = {"id": note.public_id}
    if title:
        front["title"] = note.title
    if note.aliases:
        front["aliases"] = list(note.aliases)
    if tags:
        front["tags"] = sorted(tags, key=lambda name: (name.casefold(), name))
    front["created"] = moment(note.created_at)
    front["updated"] = moment(note.updated_at)
    if note.author != "owner":
        front["author"] = note.author
    if links:
        front["links"] = [
            {"target": link.target, "kind": link.kind}
            | ({"context": link.context} if link.context else {})
            for link in links
        ]
    text = yaml.safe_dump(
        front, sort_keys=False, allow_unicode=True, default_flow_style=False, width=2**31 - 1
    )
    return f"---\n{text}---\n{note.body}".encode()


@dataclass
class _Layout:
    dirs: dict[int, str]  # folder pk → its directory ("" none: the top)
    files: dict[int, tuple[str, bool]]  # note pk → (file, whether the title is in the front matter)
    folder_paths: dict[str, str]  # directory → the folder's path


def _layout() -> _Layout:
    """Where each folder and note goes: names made safe and unique per directory, in an order
    that does not depend on the store (names; a note's creation, then its id)."""
    children: dict[int | None, list[tuple[str, int]]] = defaultdict(list)
    for folder_id, folder_name, parent_id in Folder.objects.values_list("pk", "name", "parent_id"):
        children[parent_id].append((folder_name, folder_id))
    paths = folder_paths()
    taken: dict[str, set[str]] = defaultdict(set)
    dirs: dict[int, str] = {}
    frontier: list[tuple[int | None, str]] = [(None, "")]
    while frontier:
        parent, where = frontier.pop()
        for name, pk in sorted(children.get(parent, []), key=lambda c: (c[0].casefold(), c[0])):
            if pk in dirs:
                continue  # a loop made outside the services
            safe = unique_name(safe_name(name), taken[where])
            dirs[pk] = f"{where}/{safe}" if where else safe
            frontier.append((pk, dirs[pk]))
    notes = sorted(
        Note.objects.values_list("pk", "public_id", "title", "folder_id", "created_at"),
        key=lambda n: (second(n[4]), n[1]),
    )
    files: dict[int, tuple[str, bool]] = {}
    for pk, _public_id, title, folder_id, _created in notes:
        where = dirs.get(folder_id or 0, "")
        stem = unique_name(safe_name(title), taken[where], ".md")
        files[pk] = (f"{where}/{stem}.md" if where else f"{stem}.md", stem != title)
    return _Layout(dirs, files, {d: paths.get(pk, "") for pk, d in dirs.items()})


def _on_disk(root: Path, rel: str) -> Path:
    """`root/rel`, refused when a symbolic link stands anywhere on the way."""
    path = root
    for part in PurePosixPath(rel).parts:
        path = path / part
        if path.is_symlink():
            raise Conflict(
                f"{path} is a symbolic link; an export never writes through one (remove it)"
            )
    return path


def _disk_digest(path: Path) -> str | None:
    try:
        return file_digest(read_bytes(path, FILE_BYTES_MAX))
    except VaultFileError:
        return None if not path.exists() else "unreadable"


def _render_pk(pk: int, layout: _Layout) -> bytes:
    note = Note.objects.get(pk=pk)
    return _render(
        note,
        title=layout.files[pk][1],
        tags=note_tags([pk]).get(pk, []),
        links=explicit_links([pk]).get(pk, []),
    )


def _imported(path: Path, rel: str, pk: int) -> bool:
    """Whether importing the file would change nothing of note `pk` (an edit made to an
    exported file and imported since: writing over it loses nothing)."""
    note = Note.objects.select_related("folder").get(pk=pk)
    known = Known(
        pk, note.public_id, note.revision, note.title, folder_path(note.folder), note.updated_at
    )
    try:
        parsed = parse(path, rel, known.folder, set(link_kinds()))
    except (VaultFileError, WireCatError):
        return False
    store = Store({}, {}, note_tags([pk]), explicit_links([pk]))
    return parsed.id in (None, note.public_id) and same(parsed, known, store)


def vault_export(dest: Path, *, progress: Progress | None = None) -> ExportResult:
    """Write every note and folder into `dest` (see `notes.vault`). Invalid for a
    `dest` that is not empty and not an earlier export; Conflict, naming the files, when
    files changed there since the last export would be written over (nothing written)."""
    root = Path(dest).expanduser()
    if root.exists() and not root.is_dir():
        raise Invalid(f"{root}: a file, not a folder; give an empty folder or an earlier export")
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    marker = marker_read(root)
    if marker is None and any(root.iterdir()):
        raise Invalid(
            f"{root} is not empty and is not a WireCat export (it has no {MARKER});"
            " give an empty folder, or one an earlier `wirecat notes export` wrote"
        )
    old = marker or Marker()
    layout = _layout()
    planned = {rel: pk for pk, (rel, _) in layout.files.items()}
    problems: list[str] = []
    on_disk: dict[str, str | None] = {}
    for rel in sorted(set(planned) | set(old.files)):
        path = _on_disk(root, rel)
        if path.is_dir():
            problems.append(f"{rel}: a folder where the export writes a file")
            continue
        found = _disk_digest(path)
        on_disk[rel] = found
        if (
            found is None
            or found == old.files.get(rel)
            or (rel in old.files and not old.files[rel])
        ):
            continue  # absent, as written, or being written when an export stopped
        if rel in planned and (
            file_digest(_render_pk(planned[rel], layout)) == found
            or _imported(root / rel, rel, planned[rel])
        ):
            continue  # what it says is its note's already (an edit imported since)
        why = "changed since the last export" if rel in old.files else "not written by WireCat"
        problems.append(f"{rel}: {why}")
    for rel in sorted(layout.folder_paths):
        path = _on_disk(root, rel)
        if path.exists() and not path.is_dir():
            problems.append(f"{rel}: a file where the export makes a folder")
    if problems:
        shown = "; ".join(problems[:5])
        if len(problems) > 5:
            shown += f"; and {len(problems) - 5} more"
        raise Conflict(
            f"{root}: nothing exported, it would write over files changed there — {shown}."
            " Import them first (`wirecat notes import`) or move them away."
        )
    # Claim the files first (a new one without a digest: "being written"), so that an
    # export stopped half-way is finished by the next one, not refused by it.
    kinds = dict(LinkKind.objects.filter(builtin=False).values_list("name", "description"))
    claimed = {**old.files, **{rel: old.files.get(rel) for rel in planned}}
    dirs = {**old.dirs, **layout.folder_paths}
    marker_write(root, Marker(files=claimed, dirs=dirs, kinds=kinds))
    for rel in sorted(layout.folder_paths):
        (root / rel).mkdir(parents=True, exist_ok=True)
    result = ExportResult(notes=len(planned), folders=len(layout.dirs))
    tags = note_tags()
    links = explicit_links()
    written: dict[str, str | None] = {}
    pks = sorted(layout.files)
    for start in range(0, len(pks), 500):
        for note in Note.objects.filter(pk__in=pks[start : start + 500]).order_by("pk"):
            rel, title = layout.files[note.pk]
            data = _render(
                note, title=title, tags=tags.get(note.pk, []), links=links.get(note.pk, [])
            )
            digest = file_digest(data)
            if on_disk.get(rel) == digest:
                result.unchanged += 1
            else:
                path = root / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(path, data)
                result.written += 1
            written[rel] = digest
            if progress:
                progress("write", len(written), len(pks))
    kept = {rel.casefold() for rel in written}
    for rel in sorted(set(old.files) - set(written)):
        # (on a file system that ignores case, `Ideas.md` just written is `ideas.md`)
        if on_disk.get(rel) is not None and rel.casefold() not in kept:
            (root / rel).unlink(missing_ok=True)
            result.removed += 1
    for rel in sorted(set(old.dirs) - set(layout.folder_paths), key=lambda d: -d.count("/")):
        with contextlib.suppress(OSError):
            (root / rel).rmdir()  # only when empty: what else is there is the owner's
    marker_write(root, Marker(files=written, dirs=layout.folder_paths, kinds=kinds))
    return result
