"""Links: read from a note's body on every save, made explicitly, and resolved when what a
waiting name names appears.

A body's links are replaced on each save (a link keeps its id while its target and kind
stay). A written name resolved once keeps its target when the note is saved again, so
renaming a person or a note never loses a link. A link to nothing yet is kept as it was
written, never an error: `[[Bob]]` waits until a person or a note called Bob appears (the
people's services send `archive.store.signals.people_named`; a note's title and aliases
resolve in the note's own save)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from notes.models import BUILTIN_KINDS, CONTEXT_MAX, DEFAULT_KIND, Link, LinkKind, Note
from notes.references import NAME_MAX, Ref, fold, ref_guess, ref_parse, wiki_links
from notes.services.targets import Resolver, person_names, ref_target
from wirecat.errors import Invalid, NotFound

LINKS_PER_NOTE_MAX = 5_000
KIND_MAX = 40


def link_kinds() -> list[str]:
    """The vocabulary: the fixed kinds (from the code, so a store whose rows were wiped
    still has them), then the owner's additions."""
    added = LinkKind.objects.exclude(name__in=list(BUILTIN_KINDS)).values_list("name", flat=True)
    return [*BUILTIN_KINDS, *added]


def link_kind_clean(kind: str | None) -> str:
    """A kind of the vocabulary (the owner's additions included); Invalid naming the known."""
    name = str(kind or DEFAULT_KIND).strip().lower()
    if name not in BUILTIN_KINDS and not LinkKind.objects.filter(name=name).exists():
        raise Invalid(f"kind: one of {', '.join(link_kinds())}; not {name[:40]!r}")
    return name


@transaction.atomic
def link_kind_add(*, name: str, description: str = "") -> LinkKind:
    """Add a kind to the vocabulary (idempotent): lowercase letters, digits and dashes."""
    text = str(name or "").strip().lower()
    if not text or len(text) > KIND_MAX or not all(ch.isalnum() or ch == "-" for ch in text):
        raise Invalid(
            f"kind: letters, digits and dashes, at most {KIND_MAX} characters; not {text[:60]!r}"
        )
    kind, _ = LinkKind.objects.get_or_create(name=text, defaults={"description": description[:200]})
    return kind


def _actor_clean(actor: str) -> str:
    actor = str(actor or "").strip()
    if actor == "owner" or (actor.startswith("agent:") and len(actor) <= 120 and actor[6:].strip()):
        return actor
    raise Invalid(f'actor: "owner" or "agent:<name>", not {actor[:60]!r}')


def _source_check(source: Ref) -> int:
    if source.kind == "url":
        raise Invalid("source: a link starts at something the archive holds, not at a URL")
    if source.kind == "conversation":
        raise Invalid("source: a conversation is linked to, not from (link from a note or task)")
    pk = ref_target(source)
    if pk is None:
        raise NotFound(f"source: {source} does not exist")
    return pk


@dataclass(frozen=True)
class LinkSpec:
    """An explicit link to make with a note (the editor's "Write a note" from a message)."""

    target: str
    kind: str = DEFAULT_KIND
    context: str = ""


@transaction.atomic
def link_add(
    *, source: str, target: str, kind: str | None = None, context: str = "", actor: str = "owner"
) -> Link:
    """An explicit link from `source` to `target` (typed references). A target the store
    does not hold is kept unresolved; the same link again updates its context. Invalid for
    a malformed reference or kind, NotFound for a source that does not exist."""
    source_ref = ref_parse(source, field="source")
    target_ref = ref_parse(target, field="target")
    source_pk = _source_check(source_ref)
    kind = link_kind_clean(kind)
    actor = _actor_clean(actor)
    context = " ".join(str(context or "").split())
    if len(context) > CONTEXT_MAX:
        raise Invalid(f"context: at most {CONTEXT_MAX} characters, not {len(context)}")
    target_pk = None if target_ref.kind == "url" else ref_target(target_ref)
    link = Link.objects.filter(
        source_kind=source_ref.kind,
        source_id=source_pk,
        origin=Link.Origin.EXPLICIT,
        target_kind=target_ref.kind,
        target_key=target_ref.key,
        kind=kind,
    ).first()
    if link is not None:
        if context and context != link.context:
            link.context = context
            link.save(update_fields=["context"])
        return link
    return Link.objects.create(
        source_kind=source_ref.kind,
        source_id=source_pk,
        target_kind=target_ref.kind,
        target_id=target_pk,
        target_key=target_ref.key,
        kind=kind,
        context=context,
        origin=Link.Origin.EXPLICIT,
        actor=actor,
        created_at=timezone.now(),
    )


@transaction.atomic
def link_remove(*, public_id: str, actor: str = "owner") -> None:
    """Remove an explicit link. A link read from a note's text goes when the text no longer
    holds it: removing it here is refused, naming the note."""
    _actor_clean(actor)
    link = Link.objects.filter(public_id=str(public_id)).first()
    if link is None:
        raise NotFound(f"link {str(public_id)[:60]!r} does not exist")
    if link.origin == Link.Origin.BODY:
        note = Note.objects.filter(pk=link.source_id).values_list("public_id", flat=True).first()
        raise Invalid(
            f"link {link.public_id} is written in the text of note {note}: edit the note to"
            " remove it"
        )
    link.delete()


def body_links_sync(note: Note, *, resolver: Resolver | None = None, actor: str = "owner") -> int:
    """Replace the note's body links by what its body says now. Call inside the save's
    transaction. Returns how many links the body holds."""
    resolver = resolver or Resolver()
    kinds = set(link_kinds())
    found = wiki_links(note.body, kinds=kinds)
    if len(found) > LINKS_PER_NOTE_MAX:
        raise Invalid(
            f"note {note.title[:60]!r}: at most {LINKS_PER_NOTE_MAX:,} [[links]],"
            f" not {len(found):,}"
        )
    old = list(Link.objects.filter(source_kind="note", source_id=note.pk, origin=Link.Origin.BODY))
    # What each written target resolved to before: kept (a rename does not lose a link).
    kept: dict[str, tuple[str, int]] = {}
    reusable: dict[tuple[str, str], list[Link]] = {}
    for link in old:
        written = fold(link.target_key)
        if link.target_id is not None:
            kept.setdefault(written, (link.target_kind, link.target_id))
        reusable.setdefault((written, link.kind), []).append(link)
    now = timezone.now()
    made: list[Link] = []
    for position, wiki in enumerate(found):
        written = fold(wiki.target)
        target_pk: int | None
        if written in kept:
            target_kind, target_pk = kept[written]
            guessed = ref_guess(wiki.target)
            if guessed is not None and guessed.kind == target_kind:
                key, folded = guessed.key, ""
            else:
                key, folded = wiki.target.strip(), written
        else:
            target_kind, target_pk, key, folded = resolver.written(wiki.target)
        kind = wiki.kind or DEFAULT_KIND
        previous = reusable.get((written, kind))
        reused = previous.pop(0) if previous else None
        made.append(
            Link(
                public_id=reused.public_id
                if reused
                else Link._meta.get_field("public_id").default(),
                source_kind="note",
                source_id=note.pk,
                target_kind=target_kind,
                target_id=target_pk,
                target_key=key[:2000],
                target_folded=folded[:NAME_MAX],
                label=wiki.label,
                kind=kind,
                context=wiki.context[:CONTEXT_MAX],
                origin=Link.Origin.BODY,
                position=position,
                actor=reused.actor if reused else actor,
                created_at=reused.created_at if reused else now,
            )
        )
    Link.objects.filter(pk__in=[link.pk for link in old]).delete()
    Link.objects.bulk_create(made, batch_size=500)
    return len(made)


def _resolve_names(names: dict[str, int], kind: str) -> int:
    """Point the links waiting for these folded names at their targets."""
    if not names:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE notes_link SET target_kind = %s, target_id = n.value"
            " FROM json_each(%s) AS n"
            " WHERE notes_link.target_id IS NULL AND notes_link.target_kind = ''"
            " AND notes_link.target_folded <> '' AND notes_link.target_folded = n.key",
            [kind, json.dumps(names, ensure_ascii=False)],
        )
        return int(cursor.rowcount)


def links_resolve_people(*, person_ids: Iterable[int]) -> int:
    """Resolve the links waiting for a name or alias of these people (created, renamed, or
    given identities). Runs in the caller's transaction."""
    return _resolve_names(person_names(list(person_ids)), "person")


def links_resolve_note(note: Note, folded_names: Iterable[str]) -> int:
    """Resolve the links waiting for the note: by one of its names (its title, its
    aliases), or by its id (`[[note:note_…]]` written before the note was made here: a
    vault's notes link each other by id, and a deleted note may come back)."""
    by_id = Link.objects.filter(
        target_kind="note", target_id__isnull=True, target_key=note.public_id
    ).update(target_id=note.pk)
    return by_id + _resolve_names({name: note.pk for name in folded_names if name}, "note")
