"""Backlinks on any page: `{% backlinks ref %}` lists the notes that link to a typed
reference ("person:12", "message:msg_…") with the sentence that links it, and
`{% write_note_url ref %}` is the address of a new note already linked to it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django import template
from django.urls import reverse

from notes.models import Link
from notes.reads import source_links_by_kind
from notes.references import ref_guess
from notes.selectors import Backlink, backlink_counts
from notes.selectors import backlinks as backlinks_of
from wirecat.errors import WireCatError

register = template.Library()

_NOT_ID = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Mention:
    """One linking sentence, cut around the linked words so the page can emphasise them
    (`linked` is empty when the words are not found in it, as an explicit link's own text)."""

    kind: str
    before: str
    linked: str
    after: str
    written: str = ""  # the reference as written, when `linked` shows a name for it


@dataclass
class NoteLinking:
    """A note that links here and each of its sentences that do."""

    note_id: str
    title: str
    folder: str
    updated_at: datetime
    mentions: list[Mention] = field(default_factory=list)


def _is_reference(words: str) -> bool:
    """A typed reference or a bare public id as written (`chat:3`, `msg_01J…`): words a
    reader would rather see as a name. A task key or a URL reads well as it is."""
    guess = ref_guess(words)
    return guess is not None and guess.kind != "url" and (":" in words or guess.kind != "task")


def _mention(row: Backlink, shown: tuple[str, ...], name: str) -> Mention:
    folded = row.context.casefold()
    for words in shown:
        at = folded.find(words.casefold()) if words else -1
        if at >= 0:
            end = at + len(words)
            linked, written = row.context[at:end], ""
            if name and _is_reference(linked):
                linked, written = name, linked
            return Mention(row.kind, row.context[:at], linked, row.context[end:], written)
    return Mention(row.kind, row.context, "", "")


def _shown_words(rows: list[Backlink]) -> dict[str, tuple[str, ...]]:
    """What each link may show in its sentence, most likely first: its label, the typed
    reference as written (`[[task:HOME-12]]`), its key (a name, an id); by the link's
    public id, in one query for all of them."""
    found = Link.objects.filter(public_id__in=[row.link_id for row in rows]).values_list(
        "public_id", "label", "target_kind", "target_key"
    )
    return {
        public_id: (label, f"{kind}:{key}" if kind else "", key)
        for public_id, label, kind, key in found
    }


def linking_notes(ref: str, *, name: str = "") -> list[NoteLinking]:
    """The notes linking to `ref`, newest first, a note's sentences together; where a
    sentence names it by reference (`[[chat:3]]`), `name` stands for it. A reference that
    names nothing (a bad one, or a target gone) has no backlinks, never an error."""
    try:
        rows = backlinks_of(ref)
    except WireCatError:
        return []
    words = _shown_words(rows) if rows else {}
    notes: dict[str, NoteLinking] = {}
    for row in rows:
        note = notes.get(row.note_id)
        if note is None:
            note = notes[row.note_id] = NoteLinking(
                row.note_id, row.note_title, row.folder, row.updated_at
            )
        note.mentions.append(_mention(row, words.get(row.link_id, ()), name))
    return list(notes.values())


def _ref(ref: Any, key: Any) -> str:
    """A reference as a template has it: whole ("person:12"), or a kind and a key apart
    (`{% backlinks "person" person.pk %}`, as a template cannot join a string and a number)."""
    return f"{ref}:{key}" if key is not None else str(ref)


@register.simple_tag
def write_note_url(ref: Any, key: Any = None) -> str:
    """/notes/new/?link=<ref>: the editor opens with the link to `ref` already made."""
    return f"{reverse('notes:new')}?{urlencode({'link': _ref(ref, key)}, safe=':')}"


@dataclass(frozen=True)
class NotesAbout:
    """The notes linking to one thing, read once: a page that shows them in two places (the
    chat's header counts them, its menu lists them) reads them with `{% notes_about %}` and
    hands the result to `{% backlinks %}`."""

    ref: str
    notes: list[NoteLinking]


# Kinds whose reference key is the primary key itself.
_PK_KINDS = ("chat", "person")


@register.simple_tag
def notes_about(ref: Any, key: Any = None, *, pk: Any = None, name: Any = "") -> NotesAbout:
    """The notes linking to `ref`. With the target's primary key (given as `pk`, or the
    key of a chat or a person) a page nothing links to, the usual case, costs one query."""
    ref = _ref(ref, key)
    kind = ref.partition(":")[0]
    if pk is None and kind in _PK_KINDS:
        pk = ref.partition(":")[2]
    if pk is not None:
        try:
            target = int(pk)
        except (TypeError, ValueError):
            return NotesAbout(ref, [])
        if not backlink_counts(kind, [target]):
            return NotesAbout(ref, [])
    return NotesAbout(ref, linking_notes(ref, name=str(name or "")))


@register.inclusion_tag("notes/_backlinks.html")
def backlinks(
    ref: Any,
    key: Any = None,
    *,
    heading: str = "",
    compact: bool = False,
    name: Any = "",
    pk: Any = None,
) -> dict[str, Any]:
    """The "Notes" section of a page: the notes that link to `ref` and a "Write a note"
    action (the empty state says so quietly). `compact` draws it without its card, for a
    menu or a side panel; `heading` replaces "Notes" ("Linked from" on a note); `name` is
    what a sentence shows instead of the bare reference (the chat's title, "this message");
    `pk` the target's primary key, when the page has it (see `notes_about`). `ref` may be
    what `{% notes_about %}` read."""
    about = ref if isinstance(ref, NotesAbout) else notes_about(ref, key, pk=pk, name=name)
    return {
        "ref": about.ref,
        "notes": about.notes,
        "heading": heading or ("Linked from" if about.ref.startswith("note:") else "Notes"),
        "section_id": "notes-" + _NOT_ID.sub("-", about.ref).strip("-"),
        "write_url": write_note_url(about.ref),
        "compact": compact,
        "is_note": about.ref.startswith("note:"),
    }


@register.inclusion_tag("notes/_links_from.html")
def links_from(kind: str, pk: Any, *, heading: str = "Links") -> dict[str, Any]:
    """The links made from something that is not a note (a task: `POST /api/links` with
    `source` `task:HOME-12`), grouped by kind as a note's page shows its own; nothing when
    it has none."""
    try:
        source = int(pk)
    except (TypeError, ValueError):
        return {"groups": [], "heading": heading}
    return {"groups": source_links_by_kind(str(kind), source), "heading": heading}
