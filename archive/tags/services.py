"""Tags on chats, people, messages and notes: add, remove, rename, merge, delete, colour, and
"tag all results" of a search with undo. Every function is idempotent where the verb allows
it and is called alike by the pages, the API, the shell and the Celery job."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction
from django.db.models import Model, QuerySet
from django.db.models.functions import Lower
from django.utils import timezone

from archive.search.selectors import message_ids_matching
from archive.store import changes
from archive.store.models import Chat, Message, Person
from archive.tags.models import Tag, TagBulk, TagBulkState, Tagging, TagTargetKind
from notes.models import Note
from wirecat.errors import Conflict, Invalid, NotFound

NAME_MAX = 64
COLOUR = re.compile(r"^#[0-9a-fA-F]{6}$")
# Colours given to new tags in turn (readable on white and on the dark theme).
PALETTE = ("#2563eb", "#16a34a", "#d97706", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#4b5563")
BULK_INLINE = 2_000  # "tag all results" above this many matches runs as a Celery job
BULK_MAX = 200_000  # and never tags more than this many in one run
BULK_SLICE = 1_000


@dataclass(frozen=True)
class TagTarget:
    """What a tag is put on: a chat, a person or a message, by primary key."""

    kind: str
    pk: int


def tag_target(*, kind: str, key: str | int) -> TagTarget:
    """The target named by kind and key (a message or a note by its `msg_…`/`note_…` id or
    pk, a chat or a person by id). Invalid or NotFound, naming what was wrong."""
    if kind not in TagTargetKind.values:
        raise Invalid(f"target kind: one of {', '.join(TagTargetKind.values)}, not {kind!r}")
    text = str(key).strip()
    by_public_id: dict[str, tuple[str, type[Model]]] = {
        TagTargetKind.MESSAGE: ("msg_", Message),
        TagTargetKind.NOTE: ("note_", Note),
    }
    if kind in by_public_id and text.startswith(by_public_id[kind][0]):
        model = by_public_id[kind][1]
        found = model._default_manager.filter(public_id=text).values_list("pk", flat=True).first()
        if found is None:
            raise NotFound(f"{kind} {text[:60]!r} does not exist")
        return TagTarget(kind, found)
    if not text.isdigit() or len(text) > 18:
        raise Invalid(f"{kind}: not an id: {text[:40]!r}")
    exists = {
        "chat": Chat.objects.filter(pk=int(text)),
        "person": Person.objects.filter(pk=int(text)),
        "message": Message.objects.filter(pk=int(text)),
        "note": Note.objects.filter(pk=int(text)),
    }[kind].exists()
    if not exists:
        raise NotFound(f"{kind} {text} does not exist")
    return TagTarget(kind, int(text))


def tag_name_clean(name: str) -> str:
    """A tag name as stored: spaces collapsed, 1 to 64 characters, no quotes or control
    characters (a name must be writable as `tag:"…"` in a query)."""
    cleaned = " ".join(unicodedata.normalize("NFC", str(name)).split())
    if not cleaned:
        raise Invalid("tag name: empty")
    if len(cleaned) > NAME_MAX:
        raise Invalid(f"tag name: at most {NAME_MAX} characters")
    if '"' in cleaned or any(unicodedata.category(char).startswith("C") for char in cleaned):
        raise Invalid('tag name: no " or control characters')
    return cleaned


def _find(name: str) -> Tag | None:
    return Tag.objects.annotate(folded=Lower("name")).filter(folded=name.lower()).first()


def tag_get(*, name: str) -> Tag:
    tag = _find(tag_name_clean(name))
    if tag is None:
        raise NotFound(f"tag {name!r} does not exist")
    return tag


def _ensure(name: str) -> Tag:
    cleaned = tag_name_clean(name)
    tag = _find(cleaned)
    if tag is not None:
        return tag
    colour = PALETTE[Tag.objects.count() % len(PALETTE)]
    try:
        with transaction.atomic():
            return Tag.objects.create(name=cleaned, colour=colour)
    except IntegrityError:  # made meanwhile by another writer
        found = _find(cleaned)
        if found is None:
            raise
        return found


def _targets(taggings: QuerySet[Tagging]) -> list[tuple[str, int]]:
    """(target kind, target id) of the taggings, in the order they were made."""
    return list(taggings.order_by("id").values_list("target_kind", "target_id"))


@transaction.atomic
def tag_add(*, target: TagTarget, name: str, actor: str = "owner") -> Tag:
    """Put tag `name` on `target`, making the tag when it is new. Idempotent."""
    tag = _ensure(name)
    _, made = Tagging.objects.get_or_create(
        tag=tag, target_kind=target.kind, target_id=target.pk, defaults={"actor": actor}
    )
    if made:
        changes.tags_changed(added=True, tag=tag.name, targets=[(target.kind, target.pk)])
    return tag


@transaction.atomic
def tag_remove(*, target: TagTarget, name: str) -> bool:
    """Take tag `name` off `target`. True when it was there; idempotent."""
    tag = _find(tag_name_clean(name))
    if tag is None:
        return False
    deleted, _ = Tagging.objects.filter(
        tag=tag, target_kind=target.kind, target_id=target.pk
    ).delete()
    if deleted:
        changes.tags_changed(added=False, tag=tag.name, targets=[(target.kind, target.pk)])
    return bool(deleted)


@transaction.atomic
def tag_rename(*, name: str, new_name: str) -> Tag:
    """Rename a tag (a change of case only is a rename too). Conflict when another tag
    already has the new name: merge them instead."""
    tag = tag_get(name=name)
    cleaned = tag_name_clean(new_name)
    other = _find(cleaned)
    if other is not None and other.pk != tag.pk:
        raise Conflict(f"tag {other.name!r} already exists: merge {tag.name!r} into it instead")
    if tag.name != cleaned:
        tag.name = cleaned
        tag.save(update_fields=["name"])
    return tag


@transaction.atomic
def tag_merge(*, name: str, into: str) -> Tag:
    """Move every tagging of `name` to `into` (made when new) and delete `name`. A target
    carrying both keeps one. Merging a tag that is already gone into an existing one is a
    no-op, so a repeated merge does not fail."""
    source = _find(tag_name_clean(name))
    if source is None:
        target = _find(tag_name_clean(into))
        if target is None:
            raise NotFound(f"tag {name!r} does not exist")
        return target
    target = _ensure(into)
    if target.pk == source.pk:
        raise Invalid("merge: a tag cannot be merged into itself")
    moving = _targets(source.taggings.all())
    had = set(_targets(target.taggings.all()))
    changes.tags_changed(added=False, tag=source.name, targets=moving)
    changes.tags_changed(added=True, tag=target.name, targets=[t for t in moving if t not in had])
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE OR IGNORE archive_tagging SET tag_id = %s WHERE tag_id = %s",
            [target.pk, source.pk],
        )
    source.delete()  # with the taggings the target already had (cascade)
    return target


@transaction.atomic
def tag_delete(*, name: str) -> int:
    """Delete a tag and its taggings; the number of taggings removed (0 when gone)."""
    tag = _find(tag_name_clean(name))
    if tag is None:
        return 0
    removed = _targets(tag.taggings.all())
    changes.tags_changed(added=False, tag=tag.name, targets=removed)
    tag.delete()
    return len(removed)


def tag_colour_set(*, name: str, colour: str) -> Tag:
    if not COLOUR.match(colour):
        raise Invalid("colour: #rrggbb")
    tag = tag_get(name=name)
    tag.colour = colour.lower()
    tag.save(update_fields=["colour"])
    return tag


# --- tag all results ----------------------------------------------------------------------


def tag_bulk_create(*, query: str, name: str) -> TagBulk:
    """Record a "tag all results" run of `query` with tag `name`; the caller runs it now
    (`tag_bulk_run`) when `total` is at most BULK_INLINE, else as a job."""
    ids = message_ids_matching(query, most=BULK_MAX)
    tag = _ensure(name)
    return TagBulk.objects.create(tag=tag, query=query, total=len(ids))


def tag_bulk_run(
    *,
    bulk_id: int,
    progress: Callable[[int, int], None] | None = None,
    actor: str = "owner",
) -> TagBulk:
    """Tag the matches of a recorded run, a slice per transaction; the taggings it makes
    (not those already there) are linked to the run and recorded as made by `actor`."""
    bulk = TagBulk.objects.select_related("tag").filter(pk=bulk_id).first()
    if bulk is None:
        raise NotFound(f"tag-all run {bulk_id} does not exist")
    if bulk.state not in (TagBulkState.QUEUED, TagBulkState.RUNNING):
        return bulk
    ids = message_ids_matching(bulk.query, most=BULK_MAX)
    bulk.state, bulk.total, bulk.done = TagBulkState.RUNNING, len(ids), 0
    bulk.save(update_fields=["state", "total", "done"])
    now = timezone.now()
    for start in range(0, len(ids), BULK_SLICE):
        chunk = ids[start : start + BULK_SLICE]
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO archive_tagging (tag_id, target_kind, target_id, actor, bulk_id,"
                " created_at) SELECT %s, 'message', value, %s, %s, %s FROM json_each(%s)"
                " WHERE true ON CONFLICT (tag_id, target_kind, target_id) DO NOTHING"
                " RETURNING target_id",
                [bulk.tag_id, actor, bulk.pk, now, "[" + ",".join(map(str, chunk)) + "]"],
            )
            made = [int(row[0]) for row in cursor.fetchall()]
            added = len(made)
            changes.tags_changed(
                added=True, tag=bulk.tag.name, targets=[(TagTargetKind.MESSAGE, pk) for pk in made]
            )
            TagBulk.objects.filter(pk=bulk.pk).update(
                done=start + len(chunk), added=bulk.added + added
            )
            bulk.added += added
        bulk.done = start + len(chunk)
        if progress is not None:
            progress(bulk.done, bulk.total)
    bulk.state, bulk.finished_at = TagBulkState.DONE, timezone.now()
    bulk.save(update_fields=["state", "finished_at", "done", "added"])
    return bulk


@transaction.atomic
def tag_bulk_undo(*, bulk_id: int) -> int:
    """Remove exactly the taggings a run added; the number removed. Idempotent."""
    bulk = TagBulk.objects.select_related("tag").filter(pk=bulk_id).first()
    if bulk is None:
        raise NotFound(f"tag-all run {bulk_id} does not exist")
    changes.tags_changed(
        added=False, tag=bulk.tag.name, targets=_targets(Tagging.objects.filter(bulk=bulk))
    )
    removed, _ = Tagging.objects.filter(bulk=bulk).delete()
    if bulk.state != TagBulkState.UNDONE:
        bulk.state = TagBulkState.UNDONE
        bulk.save(update_fields=["state"])
    return removed


def tag_bulk_fail(*, bulk_id: int, error: str) -> None:
    TagBulk.objects.filter(pk=bulk_id).update(
        state=TagBulkState.FAILED, error=error[:2000], finished_at=timezone.now()
    )
