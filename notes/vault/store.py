"""The notes as the store holds them, read to compare a vault's files with: each note by id
and by folder and title, their tags, their links made by hand; and whether importing a file
would change its note (an export asks too, before it writes over a file)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from archive.tags.models import Tagging, TagTargetKind
from notes.models import Link, Note
from notes.services.folders import folder_paths
from notes.vault.frontmatter import Parsed, inline_tags, tag_names
from notes.vault.names import nfc


@dataclass
class Known:
    """A note of the store, as an import compares files with it."""

    pk: int
    public_id: str
    revision: int
    title: str
    folder: str
    updated_at: datetime


@dataclass
class Store:
    """What the store holds that a vault's files are compared with, read once."""

    by_id: dict[str, Known]
    by_place: dict[tuple[str, str], list[Known]]  # (folder, title), casefolded
    tags: dict[int, list[str]]
    links: dict[int, list[Explicit]]


def store_read() -> Store:
    paths = folder_paths()
    by_id: dict[str, Known] = {}
    by_place: dict[tuple[str, str], list[Known]] = defaultdict(list)
    for pk, public_id, revision, title, folder_id, updated_at in Note.objects.values_list(
        "pk", "public_id", "revision", "title", "folder_id", "updated_at"
    ).order_by("pk"):
        known = Known(pk, public_id, revision, title, paths.get(folder_id or 0, ""), updated_at)
        by_id[public_id] = known
        by_place[(known.folder.casefold(), nfc(title).casefold())].append(known)
    return Store(by_id, by_place, note_tags(), explicit_links())


def note_tags(pks: list[int] | None = None) -> dict[int, list[str]]:
    """The tags on notes (these, or all), by note."""
    rows = Tagging.objects.filter(target_kind=TagTargetKind.NOTE)
    if pks is not None:
        rows = rows.filter(target_id__in=pks)
    found: dict[int, list[str]] = defaultdict(list)
    for target_id, name in rows.order_by("tag__name").values_list("target_id", "tag__name"):
        found[int(target_id)].append(name)
    return found


class Explicit(NamedTuple):
    """A link made by hand from a note: its target as a typed reference, kind, context."""

    public_id: str
    target: str
    kind: str
    context: str


def explicit_links(pks: list[int] | None = None) -> dict[int, list[Explicit]]:
    """The links made by hand from notes (these, or all), by note, oldest first."""
    rows = Link.objects.filter(source_kind="note", origin=Link.Origin.EXPLICIT)
    if pks is not None:
        rows = rows.filter(source_id__in=pks)
    found: dict[int, list[Explicit]] = defaultdict(list)
    for source, public_id, kind_, key, kind, context in rows.order_by("id").values_list(
        "source_id", "public_id", "target_kind", "target_key", "kind", "context"
    ):
        found[source].append(Explicit(public_id, f"{kind_}:{key}", kind, context))
    return found


def link_key(link: Explicit) -> tuple[str, str]:
    return link.target, link.kind


def wanted_tags(parsed: Parsed, stored_body: str | None, stored: list[str]) -> list[str]:
    """The note's tags after the import: the front matter's, and the `#tags` of the text,
    except those the note had in its text and lost in WireCat (a tag taken off a note is
    not put back by the same text coming home). A new note takes all of them."""
    dropped: set[str] = set()
    if stored_body is not None:
        have = {name.casefold() for name in stored}
        dropped = {
            name.casefold()
            for name in tag_names(inline_tags(stored_body), strict=False)
            if name.casefold() not in have
        }
    inline = [name for name in parsed.inline_tags if name.casefold() not in dropped]
    return tag_names(parsed.front_tags + inline)


def _same_tags(one: list[str], other: list[str]) -> bool:
    return {name.casefold() for name in one} == {name.casefold() for name in other}


def same(parsed: Parsed, note: Known, store: Store) -> bool:
    """Whether importing the file would change nothing of its note."""
    row = Note.objects.filter(pk=note.pk).values_list("title", "body", "aliases").first()
    if row is None:
        return False
    title, body, aliases = row
    if (title, body, list(aliases)) != (parsed.title, parsed.body, parsed.aliases):
        return False
    if parsed.folder.casefold() != note.folder.casefold():
        return False
    tags = store.tags.get(note.pk, [])
    if not _same_tags(wanted_tags(parsed, body, tags), tags):
        return False
    links = {link_key(link): link.context for link in store.links.get(note.pk, [])}
    wanted = {(spec.target, spec.kind): spec.context for spec in parsed.links}
    # A link without a context in the file keeps the one it has (as `link_add` does).
    return links.keys() == wanted.keys() and all(
        not context or links[key] == context for key, context in wanted.items()
    )
