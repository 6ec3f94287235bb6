"""Writing notes: create, edit (naming the revision edited), delete. Every save that changes
something is a revision; its links, names and search queue follow in the same transaction;
the changes feed says note.created / note.updated / note.deleted."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from archive.store import changes
from archive.store.effects import on_commit_effect
from notes.models import TITLE_MAX, Folder, Note, NoteName, NoteRevision
from notes.references import NAME_MAX, fold
from notes.services.folders import folder_ensure, folder_get, folder_path
from notes.services.links import LinkSpec, body_links_sync, link_add, links_resolve_note
from notes.services.targets import Resolver
from wirecat.errors import Conflict, Invalid, NotFound, TooLarge

BODY_MAX = 1_000_000  # characters: a long document, never a dump
ALIASES_MAX = 50
# After commit: the notes' stems wait in their queue (notes/jobs.py drains it).
NOTES_INDEX_QUEUED = "notes.index_queued"


class NoteConflict(Conflict):
    """An edit made from a revision that is no longer the note's: nothing was saved. Holds
    both texts so the editor can show them side by side."""

    def __init__(self, note: Note, *, edited: int, title: str, body: str) -> None:
        super().__init__(
            f"note {note.public_id} is at revision {note.revision}; this edit was made from"
            f" revision {edited}. Nothing was saved: merge the two texts and save again."
        )
        self.note = note
        self.edited = edited
        self.current_revision = note.revision
        self.current_title = note.title
        self.current_body = note.body
        self.title = title
        self.body = body


def title_clean(title: str) -> str:
    text = " ".join(str(title or "").split())
    if not text:
        raise Invalid("title: a note needs a title")
    if len(text) > TITLE_MAX:
        raise Invalid(f"title: at most {TITLE_MAX} characters, not {len(text)}")
    return text


def body_clean(body: str) -> str:
    text = str(body or "").replace("\r\n", "\n").replace("\x00", "")
    if len(text) > BODY_MAX:
        raise TooLarge(f"body: at most {BODY_MAX:,} characters, not {len(text):,}")
    return text


def aliases_clean(aliases: Iterable[str] | None) -> list[str]:
    out: list[str] = []
    for alias in aliases or ():
        text = " ".join(str(alias or "").split())
        if not text:
            continue
        if len(text) > NAME_MAX:
            raise Invalid(f"aliases: at most {NAME_MAX} characters each, not {len(text)}")
        if text not in out:
            out.append(text)
    if len(out) > ALIASES_MAX:
        raise Invalid(f"aliases: at most {ALIASES_MAX}, not {len(out)}")
    return out


def author_clean(author: str) -> str:
    text = str(author or "").strip()
    if text == "owner" or (text.startswith("agent:") and text[6:].strip() and len(text) <= 120):
        return text
    raise Invalid(f'author: "owner" or "agent:<name>", not {text[:60]!r}')


def _folder(folder: Folder | str | int | None) -> Folder | None:
    if folder is None or isinstance(folder, Folder):
        return folder
    if isinstance(folder, int):
        return folder_get(folder)
    return folder_ensure(folder)


def _names_sync(note: Note) -> list[str]:
    """The note's names (title, aliases) as links find them; returns the folded names."""
    folded = [fold(note.title)] + [fold(alias) for alias in note.aliases]
    wanted = list(dict.fromkeys(name for name in folded if name))
    NoteName.objects.filter(note=note).delete()
    NoteName.objects.bulk_create(
        [NoteName(note=note, folded=name, is_title=i == 0) for i, name in enumerate(wanted)]
    )
    return wanted


def _revision(note: Note, actor: str, at: datetime) -> None:
    NoteRevision.objects.create(
        note=note,
        number=note.revision,
        title=note.title,
        body=note.body,
        folder_path=folder_path(note.folder),
        author=actor,
        created_at=at,
    )


def _saved(note: Note, *, actor: str, at: datetime, created: bool, resolver: Resolver) -> None:
    _revision(note, actor, at)
    names = _names_sync(note)
    links_resolve_note(note, names)
    body_links_sync(note, resolver=resolver, actor=actor)
    changes.note_changed(
        kind=changes.ChangeKind.NOTE_CREATED if created else changes.ChangeKind.NOTE_UPDATED,
        note_id=note.pk,
        public_id=note.public_id,
        at=at,
    )
    on_commit_effect(NOTES_INDEX_QUEUED)


@transaction.atomic
def note_create(
    *,
    title: str,
    body: str = "",
    folder: Folder | str | int | None = None,
    aliases: Iterable[str] | None = None,
    author: str = "owner",
    links: Sequence[LinkSpec] = (),
    public_id: str | None = None,
    created_at: datetime | None = None,
    updated_at: datetime | None = None,
    resolver: Resolver | None = None,
) -> Note:
    """A new note at revision 1, its body's links read, `links` made explicitly (the "Write
    a note" from a message: the message, pre-linked). `public_id` is given only by a vault
    import (a note's stable id from its front matter)."""
    author = author_clean(author)
    now = timezone.now()
    note = Note(
        title=title_clean(title),
        body=body_clean(body),
        folder=_folder(folder),
        aliases=aliases_clean(aliases),
        author=author,
        revision=1,
        created_at=created_at or now,
        updated_at=updated_at or created_at or now,
    )
    if public_id is not None:
        note.public_id = public_id
    note.save()
    _saved(note, actor=author, at=note.updated_at, created=True, resolver=resolver or Resolver())
    for spec in links:
        link_add(
            source=note.ref, target=spec.target, kind=spec.kind, context=spec.context, actor=author
        )
    return note


_UNSET = object()


def note_get(public_id: str) -> Note:
    note = Note.objects.select_related("folder").filter(public_id=str(public_id)).first()
    if note is None:
        raise NotFound(f"note {str(public_id)[:60]!r} does not exist")
    return note


@transaction.atomic
def note_update(
    *,
    public_id: str,
    revision: int,
    title: str | None = None,
    body: str | None = None,
    folder: object = _UNSET,
    aliases: Iterable[str] | None = None,
    actor: str = "owner",
    updated_at: datetime | None = None,
    resolver: Resolver | None = None,
) -> Note:
    """Save an edit made from `revision`. A stale revision raises NoteConflict (nothing
    saved). An edit that changes nothing keeps the revision. `folder`: a Folder, a path,
    a folder id, or None for the top; left out, unchanged."""
    actor = author_clean(actor)
    note = (
        Note.objects.select_for_update()
        .select_related("folder")
        .filter(public_id=str(public_id))
        .first()
    )
    if note is None:
        raise NotFound(f"note {str(public_id)[:60]!r} does not exist")
    new_title = title_clean(title) if title is not None else note.title
    new_body = body_clean(body) if body is not None else note.body
    if int(revision) != note.revision:
        raise NoteConflict(note, edited=int(revision), title=new_title, body=new_body)
    new_folder = note.folder if folder is _UNSET else _folder(folder)  # type: ignore[arg-type]
    new_aliases = aliases_clean(aliases) if aliases is not None else note.aliases
    if (
        new_title == note.title
        and new_body == note.body
        and new_aliases == note.aliases
        and (new_folder.pk if new_folder else None) == note.folder_id
    ):
        return note
    note.title, note.body, note.folder, note.aliases = new_title, new_body, new_folder, new_aliases
    note.revision += 1
    note.updated_at = updated_at or timezone.now()
    note.save()
    _saved(note, actor=actor, at=note.updated_at, created=False, resolver=resolver or Resolver())
    return note


@transaction.atomic
def note_delete(*, public_id: str, actor: str = "owner") -> None:
    """Delete the note with its revisions and the links it makes; links to it from
    elsewhere become unresolved, kept as written (migration 0002's triggers)."""
    author_clean(actor)
    note = note_get(public_id)
    pk = note.pk
    note.delete()
    changes.note_changed(kind=changes.ChangeKind.NOTE_DELETED, note_id=pk, public_id=note.public_id)
    on_commit_effect(NOTES_INDEX_QUEUED)
