"""The folder tree: made by path (`Work/Clients`), renamed, moved (never into itself), and
deleted with its notes kept (they move to the parent)."""

from __future__ import annotations

from django.db import transaction

from notes.models import FOLDER_NAME_MAX, Folder, Note
from wirecat.errors import Conflict, Invalid, NotFound

DEPTH_MAX = 32
_FORBIDDEN = set('/\\\x00:*?"<>|')


def folder_name_clean(name: str) -> str:
    """A folder's name: one path part, usable as a directory name in an exported vault."""
    text = " ".join(str(name or "").split())
    if not text:
        raise Invalid("folder: a name is needed")
    if len(text) > FOLDER_NAME_MAX:
        raise Invalid(f"folder: at most {FOLDER_NAME_MAX} characters, not {len(text)}")
    bad = sorted({ch for ch in text if ch in _FORBIDDEN or ord(ch) < 32})
    if bad or text in (".", "..") or text.startswith("."):
        shown = " ".join(repr(ch) for ch in bad) or repr(text)
        raise Invalid(f"folder {text[:60]!r}: a folder's name cannot hold {shown}")
    return text


def folder_path(folder: Folder | None) -> str:
    """`Work/Clients`; "" for the top. Stops at DEPTH_MAX (a loop made outside the services
    cannot hang a page)."""
    parts: list[str] = []
    seen: set[int] = set()
    while folder is not None and folder.pk not in seen and len(parts) < DEPTH_MAX:
        seen.add(folder.pk)
        parts.append(folder.name)
        folder = folder.parent
    return "/".join(reversed(parts))


def folder_paths() -> dict[int, str]:
    """Every folder's path, from one read."""
    rows = {
        pk: (name, parent)
        for pk, name, parent in Folder.objects.values_list("pk", "name", "parent_id")
    }
    paths: dict[int, str] = {}

    def path_of(pk: int, depth: int = 0) -> str:
        if pk in paths:
            return paths[pk]
        name, parent = rows[pk]
        if parent is None or parent not in rows or depth >= DEPTH_MAX:
            paths[pk] = name
        else:
            paths[pk] = path_of(parent, depth + 1) + "/" + name
        return paths[pk]

    for pk in rows:
        path_of(pk)
    return paths


def _child(parent: Folder | None, name: str) -> Folder | None:
    return Folder.objects.filter(parent=parent, name__iexact=name).first()


@transaction.atomic
def folder_ensure(path: str) -> Folder | None:
    """The folder at `path` (`Work/Clients`, made where missing); None for "" (the top)."""
    parts = [part for part in str(path or "").replace("\\", "/").split("/") if part.strip()]
    if len(parts) > DEPTH_MAX:
        raise Invalid(f"folder {path[:80]!r}: at most {DEPTH_MAX} levels deep")
    folder: Folder | None = None
    for part in parts:
        name = folder_name_clean(part)
        found = _child(folder, name)
        folder = found or Folder.objects.create(name=name, parent=folder)
    return folder


def folder_get(folder_id: int) -> Folder:
    folder = Folder.objects.filter(pk=folder_id).first()
    if folder is None:
        raise NotFound(f"folder {folder_id} does not exist")
    return folder


@transaction.atomic
def folder_rename(*, folder_id: int, name: str) -> Folder:
    folder = folder_get(folder_id)
    name = folder_name_clean(name)
    other = _child(folder.parent, name)
    if other is not None and other.pk != folder.pk:
        raise Conflict(f"folder {folder_path(other)!r} exists already")
    folder.name = name
    folder.save(update_fields=["name"])
    return folder


@transaction.atomic
def folder_move(*, folder_id: int, parent_id: int | None) -> Folder:
    """Put the folder under `parent_id` (None: the top). Moving a folder into itself or
    into one of its own folders is refused, naming both."""
    folder = folder_get(folder_id)
    parent = folder_get(parent_id) if parent_id is not None else None
    walker, depth = parent, 0
    while walker is not None:
        if walker.pk == folder.pk:
            raise Invalid(
                f"folder {folder_path(folder)!r} cannot go into {folder_path(parent)!r}:"
                " that folder is inside it (a folder loop)"
            )
        walker, depth = walker.parent, depth + 1
        if depth > DEPTH_MAX:
            raise Invalid(f"folder {folder_path(parent)!r} is more than {DEPTH_MAX} levels deep")
    other = _child(parent, folder.name)
    if other is not None and other.pk != folder.pk:
        raise Conflict(f"folder {folder_path(other)!r} exists already")
    folder.parent = parent
    folder.save(update_fields=["parent"])
    return folder


@transaction.atomic
def folder_delete(*, folder_id: int) -> int:
    """Delete the folder and the folders inside it; their notes move to its parent (never
    deleted with it). Returns how many notes moved."""
    folder = folder_get(folder_id)
    inside: list[int] = [folder.pk]
    frontier = [folder.pk]
    while frontier:
        frontier = list(Folder.objects.filter(parent_id__in=frontier).values_list("pk", flat=True))
        inside.extend(frontier)
    moved = Note.objects.filter(folder_id__in=inside).update(folder=folder.parent)
    Folder.objects.filter(pk__in=inside).delete()
    return moved
