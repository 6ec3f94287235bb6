"""Importing a vault: every file read and checked first (a vault with any problem writes
nothing), then the changes written in batches (see `notes.vault`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from archive.store.changes import quiet_changes
from archive.tags.models import TagTargetKind
from archive.tags.services import TagTarget, tag_add, tag_remove
from notes.models import Folder, Note
from notes.services.folders import folder_ensure
from notes.services.links import LinkSpec, link_add, link_kind_add, link_kinds, link_remove
from notes.services.notes import note_create, note_update
from notes.services.targets import Resolver
from notes.vault.disk import VaultFileError
from notes.vault.frontmatter import moment, parse, second
from notes.vault.marker import MARKER, Marker, marker_read
from notes.vault.names import nfc
from notes.vault.results import ImportResult, Progress
from notes.vault.store import (
    Known,
    explicit_links,
    link_key,
    note_tags,
    same,
    store_read,
    wanted_tags,
)
from notes.vault.walking import Walk, walk_vault
from wirecat.errors import Invalid, NotFound, WireCatError

ERRORS_SHOWN = 200
BATCH = 100  # files written in one transaction


@dataclass
class _Plan:
    rel: str
    path: Path
    folder: str
    digest: str
    action: str  # "create", "update", "unchanged"
    note: Known | None


def _plans(
    walk: Walk, kinds: set[str], *, overwrite: bool, progress: Progress | None
) -> tuple[list[_Plan], list[str]]:
    """Every file read and checked against the store (nothing written): what to do with
    each, and every problem."""
    store = store_read()
    errors = list(walk.errors)
    plans: list[_Plan] = []
    claimed: dict[str, str] = {}  # a note (its id, or "new:" folder/title) → the file that is it
    for done, (path, rel, folder) in enumerate(walk.files, 1):
        if progress:
            progress("read", done, len(walk.files))
        try:
            parsed = parse(path, rel, folder, kinds)
        except (VaultFileError, WireCatError) as exc:
            errors.append(f"{rel}: {exc}")
            continue
        place = f"{parsed.title!r} in {folder!r}" if folder else f"{parsed.title!r} at the top"
        if parsed.id is not None:
            note = store.by_id.get(parsed.id)
            claim, what = parsed.id, f"two files with the id {parsed.id}"
        else:
            found = store.by_place.get((folder.casefold(), nfc(parsed.title).casefold()), [])
            if len(found) > 1:
                ids = ", ".join(n.public_id for n in found[:3])
                errors.append(
                    f"{rel}: {len(found)} notes are {place}; give the file the `id:` of one ({ids})"
                )
                continue
            note = found[0] if found else None
            claim = (
                note.public_id
                if note
                else f"new:{folder.casefold()}/{nfc(parsed.title).casefold()}"
            )
            what = f"two files for one note ({place})"
        if claim in claimed:
            errors.append(f"{claimed[claim]} and {rel}: {what}; keep one")
            continue
        claimed[claim] = rel
        action = "create"
        if note is not None:
            action = "unchanged" if same(parsed, note, store) else "update"
            if (
                action == "update"
                and not overwrite
                and parsed.updated is not None
                and second(note.updated_at) > parsed.updated
            ):
                errors.append(
                    f"{rel}: note {note.public_id} was changed in WireCat"
                    f" ({moment(note.updated_at)}) after this file was exported"
                    f" ({moment(parsed.updated)}); import with --overwrite to take the"
                    " file's text (WireCat's stays in the note's revisions)"
                )
                continue
        plans.append(_Plan(rel, path, folder, parsed.digest, action, note))
    return plans, errors


def _tags_sync(note: Note, wanted: list[str], have: list[str]) -> None:
    target = TagTarget(TagTargetKind.NOTE, note.pk)
    keep = {name.casefold() for name in wanted}
    for name in have:
        if name.casefold() not in keep:
            tag_remove(target=target, name=name)
    for name in wanted:
        tag_add(target=target, name=name)


def _links_sync(note: Note, wanted: list[LinkSpec]) -> None:
    keys = {(spec.target, spec.kind) for spec in wanted}
    for link in explicit_links([note.pk]).get(note.pk, []):
        if link_key(link) not in keys:
            link_remove(public_id=link.public_id)
    for spec in wanted:
        link_add(source=note.ref, target=spec.target, kind=spec.kind, context=spec.context)


class _Abort(Exception):
    """The import stops; the batch it was writing rolls back. The message names the file."""


def _write(plan: _Plan, kinds: set[str], resolver: Resolver, now: datetime) -> Note:
    """One file's note written (in the caller's transaction)."""
    parsed = parse(plan.path, plan.rel, plan.folder, kinds)
    if parsed.digest != plan.digest:
        raise VaultFileError("changed while it was imported; import again")
    if plan.note is None:
        note = note_create(
            title=parsed.title,
            body=parsed.body,
            folder=parsed.folder,
            aliases=parsed.aliases,
            author=parsed.author,
            links=parsed.links,
            public_id=parsed.id,
            created_at=parsed.created,
            updated_at=parsed.updated or parsed.created,
            resolver=resolver,
        )
        _tags_sync(note, wanted_tags(parsed, None, []), [])
        return note
    known = plan.note
    stored_body = Note.objects.filter(pk=known.pk).values_list("body", flat=True).first()
    have = note_tags([known.pk]).get(known.pk, [])
    wanted = wanted_tags(parsed, stored_body, have)
    # A file exported later than the note's last save keeps its time; an edit made to the
    # file is dated now (the front matter's `updated` is rarely touched by an editor).
    later = parsed.updated is not None and parsed.updated > second(known.updated_at)
    note = note_update(
        public_id=known.public_id,
        revision=known.revision,
        title=parsed.title,
        body=parsed.body,
        folder=parsed.folder,
        aliases=parsed.aliases,
        updated_at=parsed.updated if later else now,
        resolver=resolver,
    )
    _links_sync(note, parsed.links)
    _tags_sync(note, wanted, have)
    return note


def _apply(
    plans: list[_Plan],
    folders: list[str],
    marker: Marker | None,
    kinds: set[str],
    progress: Progress | None,
    result: ImportResult,
) -> None:
    """Write what the plans say, BATCH files to a transaction (the store's write lock is
    never held for long: pages and the worker keep writing meanwhile); `result` counts what
    is committed. _Abort names the file that stopped it, its batch rolled back."""
    before = Folder.objects.count()
    with transaction.atomic():
        for name, description in (marker.kinds if marker else {}).items():
            try:
                link_kind_add(name=name, description=description)
            except Invalid as exc:
                raise _Abort(f"{MARKER}: link kind {name[:40]!r}: {exc}") from exc
        for path in folders:
            folder_ensure(path)
    result.folders = Folder.objects.count() - before
    work = [plan for plan in plans if plan.action != "unchanged"]
    result.unchanged = len(plans) - len(work)
    now = timezone.now()
    for start in range(0, len(work), BATCH):
        batch = work[start : start + BATCH]
        # One resolver a batch: it remembers what it did not find, and a note made in an
        # earlier batch is there now.
        resolver = Resolver()
        made: list[str] = []
        with transaction.atomic():
            for done, plan in enumerate(batch, start + 1):
                if progress:
                    progress("write", done, len(work))
                try:
                    note = _write(plan, kinds, resolver, now)
                except (VaultFileError, WireCatError) as exc:
                    raise _Abort(f"{plan.rel}: {exc}") from exc
                if plan.note is None:
                    made.append(note.public_id)
        result.created += len(made)
        result.updated += len(batch) - len(made)
        result.folders = Folder.objects.count() - before


def vault_import(
    src: Path, *, overwrite: bool = False, progress: Progress | None = None
) -> ImportResult:
    """Import the vault at `src` (see `notes.vault`): every file checked first, a
    vault with any problem writing nothing (its result lists the problems); then the
    changes, in batches. `overwrite`: a file wins over its note changed in WireCat after
    the file was exported. NotFound or Invalid for a `src` that is not a folder."""
    root = Path(src).expanduser()
    if not root.exists():
        raise NotFound(f"{root}: no such folder")
    root = root.resolve()
    if not root.is_dir():
        raise Invalid(f"{root}: not a folder (give the vault's folder)")
    result = ImportResult()
    try:
        marker = marker_read(root)
        walk = walk_vault(root, marker)
    except Invalid as exc:
        result.errors = [str(exc)]
        return result
    result.skipped = walk.skipped
    kinds = set(link_kinds()) | set(marker.kinds if marker else ())
    plans, errors = _plans(walk, kinds, overwrite=overwrite, progress=progress)
    if errors:
        result.errors = errors[:ERRORS_SHOWN]
        if len(errors) > ERRORS_SHOWN:
            result.errors.append(f"… and {len(errors) - ERRORS_SHOWN:,} more problems")
        return result
    try:
        with quiet_changes():
            _apply(plans, walk.folders, marker, kinds, progress, result)
    except _Abort as exc:
        result.errors = [str(exc)]
        result.stopped = True
    return result
