"""What a reference or a written name stands for in the store: a target's primary key.

One `Resolver` serves one write (a save, a vault import): it looks each thing up once and
remembers, so a note with a hundred links, or a thousand notes, costs one read of each
kind of name."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db.models import QuerySet

from archive.conversations.domain import root_public_id
from archive.store.models import Attachment, Chat, Identity, Message, Person
from meetings.models import Meeting
from notes.models import Note, NoteName
from notes.references import Ref, fold, ref_guess
from tasks.models import Task


def ref_target(ref: Ref) -> int | None:
    """The primary key of what `ref` names, or None when the store holds no such thing (a
    URL has none either: it is its own target). A conversation's is its first message's."""
    found: QuerySet | None
    match ref.kind:
        case "note":
            found = Note.objects.filter(public_id=ref.key)
        case "message":
            found = Message.objects.filter(public_id=ref.key)
        case "meeting":
            found = Meeting.objects.filter(public_id=ref.key)
        case "attachment":
            found = Attachment.objects.filter(public_id=ref.key)
        case "conversation":
            # Its first message: a rebuild makes new conversation rows, the message stays,
            # and the conversation it is in is found again through it.
            found = Message.objects.filter(public_id=root_public_id(ref.key) or "")
        case "chat":
            found = Chat.objects.filter(pk=int(ref.key))
        case "person":
            found = Person.objects.filter(pk=int(ref.key))
        case "task":
            project, _, number = ref.key.rpartition("-")
            found = Task.objects.filter(project__key__iexact=project, number=int(number))
        case _:
            found = None
    if found is None:
        return None
    pk = found.values_list("pk", flat=True).first()
    return int(pk) if pk is not None else None


def person_names(person_ids: Iterable[int] | None = None) -> dict[str, int]:
    """Folded name → person: each person's name, and the names and handles of the
    identities linked to them (their aliases). Of two people with one name, the older."""
    people = (
        Person.objects.all() if person_ids is None else Person.objects.filter(pk__in=person_ids)
    )
    names: dict[str, int] = {}
    candidates: dict[str, list[int]] = defaultdict(list)
    for pk, name in people.values_list("pk", "name"):
        candidates[fold(name)].append(pk)
    identities = Identity.objects.filter(person__isnull=False)
    if person_ids is not None:
        identities = identities.filter(person_id__in=person_ids)
    for person_id, display, handle in identities.values_list("person_id", "display_name", "handle"):
        for text in (display, handle, handle.lstrip("@") if handle else ""):
            if text:
                candidates[fold(text)].append(int(person_id))
    for folded, pks in candidates.items():
        if folded:
            names[folded] = min(pks)
    return names


def note_names(folded: Iterable[str]) -> dict[str, int]:
    """Folded name → note (by title or alias); of two notes with one name, the older."""
    found: dict[str, int] = {}
    wanted = sorted(set(folded))
    for start in range(0, len(wanted), 500):
        rows = NoteName.objects.filter(folded__in=wanted[start : start + 500]).values_list(
            "folded", "note_id"
        )
        for name, note_id in rows:
            if name not in found or note_id < found[name]:
                found[name] = int(note_id)
    return found


class Resolver:
    """Targets of `[[links]]` for one write, looked up once each."""

    def __init__(self) -> None:
        self._refs: dict[Ref, int | None] = {}
        self._people: dict[str, int] | None = None

    def ref(self, ref: Ref) -> int | None:
        if ref not in self._refs:
            self._refs[ref] = ref_target(ref)
        return self._refs[ref]

    def people(self) -> dict[str, int]:
        if self._people is None:
            self._people = person_names()
        return self._people

    def written(self, written: str) -> tuple[str, int | None, str, str]:
        """(target kind, target pk or None, target key, folded name) of a link's target as
        written in a body: a typed reference by its form; else a note's title or alias,
        then a person's name or alias; else a name that waits (kind "")."""
        guessed = ref_guess(written)
        folded = fold(written)
        if guessed is not None:
            pk = self.ref(guessed) if guessed.kind != "url" else None
            if pk is not None or guessed.kind != "task":
                return guessed.kind, pk, guessed.key, ""
            # `[[ABC-1]]` with no such task may still be a note's title or a name.
        note = note_names([folded]).get(folded) if folded else None
        if note is not None:
            return "note", note, written.strip(), folded
        person = self.people().get(folded) if folded else None
        if person is not None:
            return "person", person, written.strip(), folded
        if guessed is not None:
            return guessed.kind, None, guessed.key, folded
        return "", None, written.strip(), folded
