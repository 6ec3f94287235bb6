"""The notes pages' reads: a folder's notes, what a body's `[[links]]` name (saved, or
resolved afresh for the editor's preview), a typed reference described, and what `[[`
may link to as the owner types (people, notes, chats, tasks, meetings)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q
from django.db.models.functions import Substr

from archive.search.selectors import Segment
from archive.store.models import Chat, Identity, Person
from archive.tags.models import Tag
from archive.tags.selectors import tags_of
from meetings.models import Meeting
from notes.models import BUILTIN_KINDS, Folder, Link, Note, NoteRevision
from notes.references import fold, ref_guess, ref_parse, wiki_links
from notes.rendering import chip_html, target_key
from notes.selectors import FolderNode, Target, folder_tree, link_targets, notes_in_folder
from notes.services.folders import folder_paths
from notes.services.targets import Resolver, note_names
from tasks.models import Task

PER_PAGE = 50
PREVIEW_TARGETS_MAX = 300  # distinct `[[targets]]` a preview resolves (each may be a read)
SUGGEST_MAX = 10
SUGGEST_PER_KIND = 5
QUERY_MAX = 100
REVISIONS_MAX = 500

# --- what a body's links name ----------------------------------------------------------


Resolved = tuple[str, int | None, str, str]  # kind, pk or None, key, folded name


def _described(resolved: Sequence[tuple[str, Resolved]]) -> dict[str, Target]:
    """Targets of (written, (kind, pk, key, folded)) by `target_key(written)`, described in
    a few reads (unsaved Link rows stand in for the links, as link_targets wants)."""
    links = [
        Link(
            pk=index + 1,
            target_kind=kind,
            target_id=pk,
            target_key=key,
            target_folded=folded,
        )
        for index, (_written, (kind, pk, key, folded)) in enumerate(resolved)
    ]
    targets = link_targets(links)
    return {
        target_key(written): targets[index + 1] for index, (written, _found) in enumerate(resolved)
    }


def resolved_targets(written: Iterable[str]) -> dict[str, Target]:
    """What each written `[[target]]` would name if saved now (the editor's preview)."""
    wanted: dict[str, str] = {}
    for text in written:
        wanted.setdefault(target_key(text), text)
        if len(wanted) >= PREVIEW_TARGETS_MAX:
            break
    resolver = Resolver()
    return _described([(text, resolver.written(text)) for text in wanted.values()])


def preview_targets(body: str) -> dict[str, Target]:
    return resolved_targets(link.target for link in wiki_links(body))


def saved_targets(note: Note) -> dict[str, Target]:
    """What the note's `[[links]]` name as saved (a renamed person keeps their links): its
    body links, matched to the body's `[[…]]` by their order."""
    written = wiki_links(note.body)
    rows = list(Link.objects.filter(source_kind="note", source_id=note.pk, origin="body"))
    for row in rows:
        row.label = ""  # the chip shows the words written where each link stands
    targets = link_targets(rows)
    out: dict[str, Target] = {}
    for row in rows:
        if row.position < len(written):
            out.setdefault(target_key(written[row.position].target), targets[row.pk])
    missing = [link.target for link in written if target_key(link.target) not in out]
    if missing:  # saved before a change the links did not follow: as they would be now
        out.update(resolved_targets(missing))
    return out


@dataclass(frozen=True)
class LinkChip:
    chip: str  # HTML, escaped by chip_html
    context: str
    origin: str


def links_by_kind(note: Note) -> list[tuple[str, list[LinkChip]]]:
    """The note's links by kind ("about" first, then the built-in kinds, then the owner's),
    each target once, as chips named by the target's own name, with the sentence an
    explicit link was made with."""
    return source_links_by_kind("note", note.pk)


def source_links_by_kind(kind: str, pk: int) -> list[tuple[str, list[LinkChip]]]:
    """The links made from anything (a note, a task) by kind, as `links_by_kind` says."""
    links = list(
        Link.objects.filter(source_kind=kind, source_id=pk).order_by("-origin", "position", "id")
    )
    for link in links:
        link.label = ""
    targets = link_targets(links)
    groups: dict[str, list[LinkChip]] = {}
    seen: set[tuple[str, str]] = set()
    for link in links:
        target = targets[link.pk]
        key = (link.kind, target.ref or fold(target.label))
        if key in seen:
            continue
        seen.add(key)
        context = link.context if link.origin == Link.Origin.EXPLICIT else ""
        groups.setdefault(link.kind, []).append(
            LinkChip(chip_html(target, target.label), context, link.origin)
        )
    order = ["about", *BUILTIN_KINDS]
    return sorted(
        groups.items(),
        key=lambda group: (order.index(group[0]) if group[0] in order else 99, group[0]),
    )


def ref_described(ref: str) -> Target:
    """A typed reference as a chip shows it (Invalid when it is not one)."""
    parsed = ref_parse(ref, field="link")
    if parsed.kind == "url":
        found: Resolved = ("url", None, parsed.key, "")
    else:
        found = (parsed.kind, Resolver().ref(parsed), parsed.key, "")
    return next(iter(_described([(str(parsed), found)]).values()))


# --- the list -----------------------------------------------------------------------------


@dataclass
class TreeNode:
    """A folder in the sidebar: its notes with its subfolders' (`total`), open when the
    chosen folder is it or inside it."""

    id: int
    name: str
    path: str
    total: int
    children: list[TreeNode] = field(default_factory=list)
    current: bool = False
    open: bool = False


def _tree(nodes: list[FolderNode], chosen: int | None) -> list[TreeNode]:
    out: list[TreeNode] = []
    for node in nodes:
        children = _tree(node.children, chosen)
        current = node.id == chosen
        out.append(
            TreeNode(
                id=node.id,
                name=node.name,
                path=node.path,
                total=node.notes + sum(child.total for child in children),
                children=children,
                current=current,
                open=current or any(child.open for child in children),
            )
        )
    return out


def sidebar_tree(chosen: int | None = None) -> list[TreeNode]:
    return _tree(folder_tree(), chosen)


_MARKUP = re.compile(r"[#*_>`~]+|^\s*[-+]\s+(\[[ xX]\]\s+)?|^\s*\d+\.\s+", re.MULTILINE)
_WIKI_SHOWN = re.compile(r"!?\[\[([^\[\]\n|]*)(?:\|([^\[\]\n]*))?\]\]")
_MD_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")


def excerpt(text: str, size: int = 160) -> str:
    """The start of a body as plain words, for a list."""
    text = _WIKI_SHOWN.sub(lambda m: (m.group(2) or m.group(1).split("#", 1)[0]).strip(), text)
    text = _MD_LINK.sub(r"\1", text)
    text = " ".join(_MARKUP.sub(" ", text).split())
    return text if len(text) <= size else text[: size - 1].rstrip() + "…"


_OPEN, _CLOSE = "\x01", "\x02"
_MARKED = re.compile("\x01(.*?)\x02", re.S)


def snippet_read(parts: Sequence[Segment]) -> list[Segment]:
    """A search hit's snippet as a reader sees the note: `[[target|shown]]` as its shown
    words, `[text](url)` as its text; the matched words stay marked."""
    joined = "".join(f"{_OPEN}{part.text}{_CLOSE}" if part.hit else part.text for part in parts)
    text = _WIKI_SHOWN.sub(lambda m: (m.group(2) or m.group(1).split("#", 1)[0]).strip(), joined)
    text = _MD_LINK.sub(r"\1", text)
    out: list[Segment] = []
    position = 0
    for found in _MARKED.finditer(text):
        if found.start() > position:
            out.append(Segment(text[position : found.start()].replace(_CLOSE, ""), False))
        out.append(Segment(found.group(1), True))
        position = found.end()
    if position < len(text):
        out.append(Segment(text[position:].replace(_OPEN, "").replace(_CLOSE, ""), False))
    return [part for part in out if part.text]


@dataclass(frozen=True)
class NoteRow:
    note: Note
    folder: str
    excerpt: str
    tags: list[Tag]


@dataclass(frozen=True)
class NotesPage:
    rows: list[NoteRow]
    total: int
    page: int
    pages: int
    folder: Folder | None
    folder_path: str
    unfiled: bool


def rows_for(notes: Sequence[Note], paths: dict[int, str] | None = None) -> list[NoteRow]:
    """Notes as a list shows them: folder path, the body's start, tags."""
    if paths is None:
        paths = folder_paths() if any(note.folder_id for note in notes) else {}
    tags = tags_of("note", [note.pk for note in notes])
    return [
        NoteRow(
            note=note,
            folder=paths.get(note.folder_id or 0, ""),
            excerpt=excerpt(getattr(note, "head", None) or note.body),
            tags=tags.get(note.pk, []),
        )
        for note in notes
    ]


def notes_page(*, folder_id: int | None = None, unfiled: bool = False, page: int = 1) -> NotesPage:
    """A page of notes, newest change first: all of them, a folder's (with its subfolders'),
    or those in no folder (`unfiled`). An unknown folder is NotFound's business: the caller
    passes only what `folder_paths` knows."""
    folder = Folder.objects.filter(pk=folder_id).first() if folder_id is not None else None
    notes = Note.objects.all()
    if unfiled:
        notes = notes.filter(notes_in_folder(None))
    elif folder is not None:
        notes = notes.filter(notes_in_folder(folder.pk, subfolders=True))
    total = notes.count()
    pages = max(1, -(-total // PER_PAGE))
    page = min(max(1, page), pages)
    start = (page - 1) * PER_PAGE
    chosen = list(
        notes.order_by("-updated_at", "-id")
        .annotate(head=Substr("body", 1, 600))
        .defer("body")[start : start + PER_PAGE]
    )
    paths = folder_paths()
    return NotesPage(
        rows=rows_for(chosen, paths),
        total=total,
        page=page,
        pages=pages,
        folder=folder,
        folder_path=paths.get(folder.pk, "") if folder else "",
        unfiled=unfiled,
    )


def folder_neighbours(note: Note, limit: int = 30) -> list[Note]:
    """The other notes of a note's folder, newest change first (the sidebar of its page)."""
    return list(
        Note.objects.filter(notes_in_folder(note.folder_id))
        .only("public_id", "title", "updated_at", "folder_id")
        .order_by("-updated_at", "-id")[:limit]
    )


# --- `[[` suggestions ---------------------------------------------------------------------


@dataclass(frozen=True)
class Suggestion:
    """Something `[[` may link to: its kind, its name, a detail, and what goes between the
    brackets (a plain name when the link would reach exactly this, else a typed
    reference with the name shown)."""

    kind: str
    label: str
    detail: str
    insert: str
    rank: int = 2


_UNSAFE = re.compile(r"[\[\]|#\n\r]")


def _shown(label: str) -> str:
    """A name as the shown part of `[[ref|shown]]` can hold it."""
    return " ".join(_UNSAFE.sub(" ", label).split())[:120]


def _rank(label: str, q: str) -> int:
    """0: the name starts with what was typed; 1: a word of it does; 2: it is inside."""
    folded, typed = fold(label), fold(q)
    if folded.startswith(typed):
        return 0
    return 1 if any(word.startswith(typed) for word in folded.split()) else 2


def _person_reached(name: str, pk: int) -> bool:
    """True when `[[name]]` resolves to person `pk` (no note has that name, and of the
    people called so they are the oldest), as the links' Resolver reads it."""
    folded = fold(name)
    if not folded or _UNSAFE.search(name) or ref_guess(name) is not None:
        return False
    if note_names([folded]):
        return False
    rivals = set(Person.objects.filter(name__iexact=name.strip()).values_list("pk", "name"))
    for person_id, display, handle in Identity.objects.filter(
        Q(display_name__iexact=name.strip())
        | Q(handle__iexact=name.strip())
        | Q(handle__iexact="@" + name.strip()),
        person__isnull=False,
    ).values_list("person_id", "display_name", "handle"):
        for text in (display, handle, (handle or "").lstrip("@")):
            if text and fold(text) == folded:
                rivals.add((int(person_id), text))
    same = [person_id for person_id, text in rivals if fold(text) == folded]
    return bool(same) and min(same) == pk


def _note_reached(title: str, pk: int) -> bool:
    folded = fold(title)
    if not folded or _UNSAFE.search(title) or ref_guess(title) is not None:
        return False
    return note_names([folded]).get(folded) == pk


_TASK_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9]{0,9})-(\d{0,9})$")


def _kept(found: Iterable[Any], q: str, label: Any) -> list[tuple[Any, int]]:
    """The few best of `found` (names starting with `q` first), each once, with its rank."""
    ranked: dict[int, tuple[Any, int]] = {}
    for item in found:
        ranked.setdefault(item.pk, (item, _rank(label(item), q)))
    best = sorted(ranked.values(), key=lambda pair: (pair[1], fold(label(pair[0]))))
    return best[:SUGGEST_PER_KIND]


def _people(q: str) -> list[Suggestion]:
    matching = Person.objects.filter(
        Q(name__icontains=q)
        | Q(identities__display_name__icontains=q)
        | Q(identities__handle__icontains=q)
    ).distinct()
    # Those whose name starts so first: a long list of names merely holding `q` never
    # pushes them out.
    found = list(Person.objects.filter(name__istartswith=q).order_by("name")[:SUGGEST_PER_KIND])
    found += list(matching.order_by("name")[: SUGGEST_PER_KIND * 3])
    out = []
    for person, rank in _kept(found, q, lambda p: p.name):
        handles = sorted(
            {i.handle or i.display_name for i in person.identities.all()} - {person.name, ""}
        )
        detail = "Person" + (f" · {', '.join(handles[:2])}" if handles else "")
        insert = (
            person.name
            if _person_reached(person.name, person.pk)
            else f"person:{person.pk}|{_shown(person.name)}"
        )
        out.append(Suggestion("person", person.name, detail, insert, rank))
    return out


def _notes(q: str, paths: dict[int, str]) -> list[Suggestion]:
    folded = fold(q)
    notes = Note.objects.only("public_id", "title", "folder_id", "updated_at")
    found = list(notes.filter(title__istartswith=q).order_by("-updated_at")[:SUGGEST_PER_KIND])
    found += list(
        notes.filter(Q(title__icontains=q) | Q(names__folded__contains=folded))
        .distinct()
        .order_by("-updated_at")[: SUGGEST_PER_KIND * 3]
    )
    out = []
    for note, rank in _kept(found, q, lambda n: n.title):
        where = paths.get(note.folder_id or 0, "")
        insert = (
            note.title
            if _note_reached(note.title, note.pk)
            else f"note:{note.public_id}|{_shown(note.title)}"
        )
        detail = "Note" + (f" · {where}" if where else "")
        out.append(Suggestion("note", note.title, detail, insert, rank))
    return out


def _chats(q: str) -> list[Suggestion]:
    found = Chat.objects.filter(title__icontains=q).order_by("-last_message_at")[:SUGGEST_PER_KIND]
    return [
        Suggestion(
            "chat",
            str(chat),
            f"Chat · {chat.get_kind_display()}",
            f"chat:{chat.pk}|{_shown(str(chat))}",
            _rank(str(chat), q),
        )
        for chat in found
    ]


def _tasks(q: str) -> list[Suggestion]:
    key = _TASK_KEY.match(q)
    matching = Q(title__icontains=q)
    if key:
        by_key = Q(project__key__iexact=key.group(1))
        if key.group(2):
            by_key &= Q(number__startswith=key.group(2))
        matching |= by_key
    found = (
        Task.objects.filter(matching)
        .select_related("project")
        .order_by("-updated_at")[:SUGGEST_PER_KIND]
    )
    return [
        Suggestion(
            "task",
            f"{task.key} {task.title}",
            f"Task · {task.get_status_display()}",
            task.key,
            0 if key else _rank(task.title, q),
        )
        for task in found
    ]


def _meetings(q: str) -> list[Suggestion]:
    found = Meeting.objects.filter(title__icontains=q).order_by("-start")[:SUGGEST_PER_KIND]
    return [
        Suggestion(
            "meeting",
            meeting.title,
            f"Meeting · {meeting.start:%Y-%m-%d}",
            f"meeting:{meeting.public_id}|{_shown(meeting.title)}",
            _rank(meeting.title, q),
        )
        for meeting in found
    ]


_ORDER = {"person": 0, "note": 1, "task": 2, "chat": 3, "meeting": 4}


def suggestions(q: str, *, limit: int = SUGGEST_MAX) -> list[Suggestion]:
    """What `[[q` may link to: people, notes, tasks, chats and meetings whose name holds
    `q` (a typed reference or a task key: that one), names starting so first."""
    q = " ".join(str(q or "").split())[:QUERY_MAX]
    if not q:
        return []
    guessed = ref_guess(q)
    exact: list[Suggestion] = []
    if guessed is not None and guessed.kind not in ("url", "task"):
        target = ref_described(str(guessed))
        if target.exists:
            exact.append(
                Suggestion(target.kind, target.label, target.kind.title(), str(guessed), -1)
            )
    paths = folder_paths()
    found = _people(q) + _notes(q, paths) + _tasks(q) + _chats(q) + _meetings(q)
    found.sort(key=lambda s: (s.rank, _ORDER.get(s.kind, 9), fold(s.label)))
    kept: list[Suggestion] = []
    per_kind: dict[str, int] = {}
    for item in exact + found:
        if per_kind.get(item.kind, 0) >= SUGGEST_PER_KIND:
            continue
        per_kind[item.kind] = per_kind.get(item.kind, 0) + 1
        kept.append(item)
        if len(kept) >= limit:
            break
    return kept


def folder_choices() -> list[str]:
    """Every folder's path, sorted (the editor's datalist)."""
    return sorted(folder_paths().values(), key=str.casefold)


def folder_crumbs(folder: Folder | None) -> list[Folder]:
    """The folders from the top down to `folder` (a breadcrumb)."""
    chain: list[Folder] = []
    seen: set[int] = set()
    while folder is not None and folder.pk not in seen and len(chain) < 32:
        seen.add(folder.pk)
        chain.append(folder)
        folder = folder.parent
    return list(reversed(chain))


# --- revisions ----------------------------------------------------------------------------


def revision_list(note: Note) -> list[NoteRevision]:
    """The note's revisions, newest first, without their texts."""
    return list(
        NoteRevision.objects.filter(note=note).defer("body").order_by("-number")[:REVISIONS_MAX]
    )


def revision_pair(note: Note, number: int) -> tuple[NoteRevision | None, NoteRevision | None]:
    """Revision `number` and the one before it (None where there is none)."""
    rows = {
        row.number: row
        for row in NoteRevision.objects.filter(note=note, number__in=[number, number - 1])
    }
    return rows.get(number), rows.get(number - 1)


def revision_text(note: Note, number: int) -> tuple[str, str] | None:
    """(title, body) of revision `number`, None when there is no such revision."""
    return (
        NoteRevision.objects.filter(note=note, number=number).values_list("title", "body").first()
    )


def note_counts() -> dict[str, int]:
    """How many notes there are, and how many are in no folder (the sidebar)."""
    return {
        "all": Note.objects.count(),
        "unfiled": Note.objects.filter(folder__isnull=True).count(),
    }
