"""Reading notes and links: a note's links with what each names, the backlinks of anything,
the folder tree. Reads only; a handful of queries whatever the number of links."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Q
from django.urls import reverse

from archive.conversations.domain import conversation_public_id
from archive.conversations.models import ConversationLink
from archive.conversations.selectors import (
    ConversationView,
    conversation_by_public_id,
    conversations_of,
)
from archive.store.models import Attachment, Chat, Message, Person
from meetings.models import Meeting
from notes.models import Folder, Link, Note, NoteRevision
from notes.references import Ref
from notes.references import ref_parse as ref_parse  # a typed reference read: public face
from notes.search import NoteHit as NoteHit  # the search: part of the public face
from notes.search import NoteSearchPage as NoteSearchPage
from notes.search import note_search as note_search
from notes.services.folders import folder_paths
from notes.services.targets import ref_target
from tasks.models import Task
from wirecat.errors import NotFound

BACKLINKS_MAX = 200


@dataclass(frozen=True)
class Target:
    """What a link points at, as a page or an agent shows it. `ref` is the typed reference
    (None for a bare name that names nothing yet); `url` the page that shows it (None when
    nothing does); `exists` False for a link that waits or whose target was deleted."""

    kind: str
    ref: str | None
    label: str
    url: str | None
    exists: bool
    detail: str = ""


def _short(text: str, size: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 1] + "…"


def conversation_url(conversation: ConversationView) -> str:
    """The conversation's page (the Conversations view's)."""
    return reverse("archive:conversation", args=[conversation.public_id])


def _conversations(pks: set[int]) -> dict[int, Target]:
    """Conversations by the message a link holds (the first message of the one linked): the
    conversation that message is in now, in its chat's current build; a chat not built yet
    shows the message."""
    found = conversations_of(list(pks))
    out: dict[int, Target] = {}
    rows = Message.objects.filter(pk__in=pks).select_related("chat")
    for message in rows.only("public_id", "sent_at", "chat__title", "chat__external_id"):
        view = found.get(message.pk)
        if view is None:
            out[message.pk] = Target(
                "conversation",
                f"conversation:{conversation_public_id(message.public_id)}",
                "a conversation not built yet",
                reverse("archive:message", args=[message.public_id]),
                True,
                detail=f"{message.chat} · its conversations are not built yet",
            )
            continue
        out[message.pk] = Target(
            "conversation",
            f"conversation:{view.public_id}",
            view.title or "(a conversation)",
            conversation_url(view),
            True,
            detail=f"{message.chat} · {view.message_count} message"
            + ("" if view.message_count == 1 else "s")
            + f" from {view.first_at:%Y-%m-%d %H:%M}",
        )
    return out


def _describe(kind: str, pks: set[int]) -> dict[int, Target]:
    """Targets of one kind by primary key, in one query."""
    out: dict[int, Target] = {}
    if not pks:
        return out
    if kind == "note":
        for note in Note.objects.filter(pk__in=pks).only("public_id", "title"):
            out[note.pk] = Target(
                "note", note.ref, note.title, reverse("notes:note", args=[note.public_id]), True
            )
    elif kind == "message":
        rows = Message.objects.filter(pk__in=pks).select_related("chat", "sender")
        for message in rows.only(
            "public_id",
            "text",
            "sent_at",
            "chat__title",
            "chat__external_id",
            "sender__display_name",
            "sender__handle",
            "sender__external_id",
        ):
            who = str(message.sender) if message.sender else ""
            text = _short(message.text or "(no text)", 70)
            out[message.pk] = Target(
                "message",
                f"message:{message.public_id}",
                f"{who}: {text}" if who else text,
                reverse("archive:message", args=[message.public_id]),
                True,
                detail=f"{message.chat} · {message.sent_at:%Y-%m-%d %H:%M}",
            )
    elif kind == "chat":
        for chat in Chat.objects.filter(pk__in=pks).only("title", "external_id"):
            out[chat.pk] = Target(
                "chat", f"chat:{chat.pk}", str(chat), reverse("archive:chat", args=[chat.pk]), True
            )
    elif kind == "person":
        for person in Person.objects.filter(pk__in=pks).only("name"):
            out[person.pk] = Target(
                "person",
                f"person:{person.pk}",
                person.name,
                reverse("archive:person", args=[person.pk]),
                True,
            )
    elif kind == "meeting":
        for meeting in Meeting.objects.filter(pk__in=pks).only("public_id", "title", "start"):
            out[meeting.pk] = Target(
                "meeting",
                f"meeting:{meeting.public_id}",
                meeting.title or "(untitled meeting)",
                reverse("meetings:meeting", args=[meeting.public_id]),
                True,
                detail=f"{meeting.start:%Y-%m-%d %H:%M}" if meeting.start else "",
            )
    elif kind == "task":
        for task in Task.objects.filter(pk__in=pks).select_related("project"):
            out[task.pk] = Target(
                "task",
                f"task:{task.key}",
                f"{task.key} {task.title}",
                reverse("tasks:task", args=[task.key]),
                True,
                detail=task.get_status_display(),
            )
    elif kind == "conversation":
        out = _conversations(pks)
    elif kind == "attachment":
        for attachment in Attachment.objects.filter(pk__in=pks).only("public_id", "file_name"):
            out[attachment.pk] = Target(
                "attachment",
                f"attachment:{attachment.public_id}",
                attachment.file_name or attachment.public_id,
                reverse("archive:attachment", args=[attachment.public_id]),
                True,
            )
    return out


def _waiting(link: Link) -> Target:
    shown = link.label or link.target_key
    if link.target_kind == "url":
        return Target("url", f"url:{link.target_key}", shown, link.target_key, True)
    if link.target_kind == "":
        return Target("", None, shown, None, False, detail="names no one yet")
    return Target(
        link.target_kind,
        f"{link.target_kind}:{link.target_key}",
        shown,
        None,
        False,
        detail="not in the archive",
    )


def link_targets(links: Sequence[Link]) -> dict[int, Target]:
    """Each link's target, described, by the link's primary key."""
    wanted: dict[str, set[int]] = defaultdict(set)
    for link in links:
        if link.target_id is not None:
            wanted[link.target_kind].add(link.target_id)
    found = {kind: _describe(kind, pks) for kind, pks in wanted.items()}
    out: dict[int, Target] = {}
    for link in links:
        target = found.get(link.target_kind, {}).get(link.target_id or 0)
        if target is None:
            target = _waiting(link)
        elif link.label:
            target = Target(
                target.kind, target.ref, link.label, target.url, True, detail=target.label
            )
        out[link.pk] = target
    return out


def note_links(note: Note) -> list[tuple[Link, Target]]:
    """The note's links in order (body links as they stand in the text, then explicit)."""
    links = list(
        # "body" sorts before "explicit"
        Link.objects.filter(source_kind="note", source_id=note.pk).order_by(
            "origin", "position", "id"
        )
    )
    targets = link_targets(links)
    return [(link, targets[link.pk]) for link in links]


@dataclass(frozen=True)
class Backlink:
    """A note linking to something, with the sentence that links it and the link's kind."""

    note_id: str
    note_title: str
    folder: str
    updated_at: datetime
    kind: str
    context: str
    link_id: str
    origin: str


def ref_key(ref: Ref) -> tuple[str, int] | None:
    """(kind, primary key) of a reference to something the store holds; None otherwise."""
    if ref.kind == "url":
        return None
    pk = ref_target(ref)
    return (ref.kind, pk) if pk is not None else None


def backlinks(ref: Ref | str, *, limit: int = BACKLINKS_MAX) -> list[Backlink]:
    """The notes that link to `ref`, newest note first, one row per link (a note that names
    it in two sentences shows both). A URL's backlinks are the links to that URL."""
    if isinstance(ref, str):
        ref = ref_parse(ref)
    if ref.kind == "url":
        links = Link.objects.filter(target_kind="url", target_key=ref.key)
    elif ref.kind == "conversation" and (found := conversation_by_public_id(ref.key)):
        # A link holds the message it named the conversation by (its first message then);
        # after a rebuild that message may be any of the conversation's now.
        members = ConversationLink.objects.filter(conversation_id=found.id).values("message_id")
        links = Link.objects.filter(target_kind="conversation", target_id__in=members)
    else:
        key = ref_key(ref)
        if key is None:
            raise NotFound(f"{ref} does not exist")
        links = Link.objects.filter(target_kind=key[0], target_id=key[1])
    rows = list(
        links.filter(source_kind="note").values_list(
            "source_id", "kind", "context", "public_id", "origin"
        )
    )
    notes = Note.objects.select_related("folder").in_bulk({row[0] for row in rows})
    paths = folder_paths() if any(n.folder_id for n in notes.values()) else {}
    out = [
        Backlink(
            note_id=notes[source].public_id,
            note_title=notes[source].title,
            folder=paths.get(notes[source].folder_id or 0, ""),
            updated_at=notes[source].updated_at,
            kind=kind,
            context=context,
            link_id=public_id,
            origin=origin,
        )
        for source, kind, context, public_id, origin in rows
        if source in notes
    ]
    out.sort(key=lambda b: (b.updated_at, b.note_id), reverse=True)
    return out[:limit]


def backlink_counts(kind: str, pks: Iterable[int]) -> dict[int, int]:
    """How many notes link to each of these targets (for lists: a chat list, people)."""
    rows = (
        Link.objects.filter(source_kind="note", target_kind=kind, target_id__in=list(pks))
        .values("target_id")
        .annotate(notes=Count("source_id", distinct=True))
    )
    return {int(row["target_id"]): int(row["notes"]) for row in rows}


@dataclass
class FolderNode:
    """A folder in the tree, with its notes counted (its own, not its children's)."""

    id: int
    name: str
    path: str
    notes: int
    children: list[FolderNode] = field(default_factory=list)


def folder_tree() -> list[FolderNode]:
    """Every folder as a tree, sorted by name, each with its note count."""
    paths = folder_paths()
    counts = dict(Folder.objects.annotate(n=Count("notes")).values_list("pk", "n"))
    nodes = {
        pk: FolderNode(id=pk, name=path.rsplit("/", 1)[-1], path=path, notes=int(counts.get(pk, 0)))
        for pk, path in paths.items()
    }
    roots: list[FolderNode] = []
    for pk, parent in Folder.objects.values_list("pk", "parent_id"):
        if parent is not None and parent in nodes and parent != pk:
            nodes[parent].children.append(nodes[pk])
        else:
            roots.append(nodes[pk])
    for node in nodes.values():
        node.children.sort(key=lambda n: n.name.casefold())
    roots.sort(key=lambda n: n.name.casefold())
    return roots


def notes_in_folder(folder_id: int | None, *, subfolders: bool = False) -> Q:
    """A filter of notes in a folder (None: the top), optionally with its subfolders'."""
    if folder_id is None:
        return Q(folder__isnull=True)
    if not subfolders:
        return Q(folder_id=folder_id)
    inside, frontier = [folder_id], [folder_id]
    while frontier:
        frontier = list(Folder.objects.filter(parent_id__in=frontier).values_list("pk", flat=True))
        inside.extend(pk for pk in frontier if pk not in inside)
    return Q(folder_id__in=inside)


def note_revisions(note: Note) -> list[NoteRevision]:
    return list(NoteRevision.objects.filter(note=note).order_by("-number"))
