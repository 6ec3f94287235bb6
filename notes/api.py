"""Notes for agents: write, read, edit (naming the revision edited) and delete notes, their
revisions, links between any two typed references, the backlinks of anything, the link
kinds, and the notes search. Scopes notes.read and notes.write; an agent's notes and
links carry it as author ("agent:<name>"), the owner's session "owner"."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any

from django.db.models import Q
from django.db.models.functions import Length
from django.http import HttpRequest
from ninja import Query, Router, Status

from archive.search.schemas import SnippetPart
from archive.tags.models import Tagging, TagTargetKind
from archive.tags.selectors import tags_of
from archive.tags.services import tag_get
from archive.web.api import answers, caller_actor, limit_query, links, public_id, requires, scope
from archive.web.schemas import ID_MAX, ErrorOut, Format, TagName
from notes.models import BUILTIN_KINDS, Folder, Link, LinkKind, Note, NoteRevision
from notes.references import Ref, ref_parse
from notes.schemas import (
    AnyRef,
    BacklinkOut,
    BacklinksOut,
    FolderPath,
    LinkIn,
    LinkKindIn,
    LinkKindOut,
    LinkOut,
    NoteConflictOut,
    NoteHitOut,
    NoteIn,
    NoteOut,
    NotePatch,
    NoteSearchOut,
    NotesOut,
    NoteSummaryOut,
    RevisionOut,
    RevisionsOut,
    TargetOut,
)
from notes.search import MAX_LIMIT, MAX_QUERY_CHARS, note_search
from notes.selectors import (
    BACKLINKS_MAX,
    Backlink,
    Target,
    backlinks,
    link_targets,
    note_links,
    notes_in_folder,
)
from notes.services.folders import folder_path, folder_paths
from notes.services.links import LinkSpec, link_add, link_kind_add, link_kinds, link_remove
from notes.services.notes import NoteConflict, note_create, note_delete, note_get, note_update
from wirecat.errors import Conflict, Invalid, NotFound

router = Router(tags=["notes"])

LIST_MAX = 200
REVISIONS_MAX = 100
BACKLINKS_LIST_MAX = 1000
_POSITION_MAX = 2**62  # a cursor's row id, as the other cursors bound theirs

NOTE = {"id": "$response.body#/id"}
THE_NOTE = links(
    __name__,
    GetNote=("notes_show", NOTE),
    ChangeNote=("notes_update", NOTE),
    DeleteNote=("notes_delete", NOTE),
    NoteRevisions=("notes_revisions", NOTE),
)
# After a delete, the note is gone: reading it again is 404.
GONE = links(__name__, GetDeletedNote=("notes_show", {"id": "$request.path.id"}))
THE_LINK = links(__name__, DeleteLink=("links_delete", {"id": "$response.body#/id"}))

NotesCursor = Annotated[str, Format("wirecat-notes-cursor")]
# Query parameters of the schemas' own types (their pattern and bounds), described.
FOLDER_QUERY = Query("", description="a folder's path (Work/Clients); empty: every folder")
TAG_QUERY = Query(None, description="only the notes with this tag")
CURSOR_QUERY = Query(None, description="the `next_cursor` of a page")
REF_QUERY = Query(..., description="a typed reference: person:12, message:msg_…, url:https://…")


def note_id() -> Any:
    return public_id("note", "note")


# --- shapes ---------------------------------------------------------------------------------


def _summary(note: Note, *, paths: dict[int, str], tags: list[str], size: int) -> dict[str, Any]:
    return {
        "id": note.public_id,
        "reference": note.ref,
        "title": note.title,
        "aliases": list(note.aliases or []),
        "folder": paths.get(note.folder_id, "") if note.folder_id else "",
        "author": note.author,
        "revision": note.revision,
        "tags": tags,
        "size": size,
        "created_at": note.created_at,
        "updated_at": note.updated_at,
    }


def _target_out(target: Target) -> TargetOut:
    return TargetOut(
        kind=target.kind,
        ref=target.ref,
        label=target.label,
        url=target.url,
        exists=target.exists,
        detail=target.detail,
    )


def _link_out(link: Link, target: Target, source: str) -> LinkOut:
    return LinkOut(
        id=link.public_id,
        source=source,
        target=_target_out(target),
        kind=link.kind,
        context=link.context,
        label=link.label,
        origin=link.origin,
        actor=link.actor,
        created_at=link.created_at,
    )


def _backlink_out(found: Backlink) -> BacklinkOut:
    return BacklinkOut(
        note=found.note_id,
        title=found.note_title,
        folder=found.folder,
        updated_at=found.updated_at,
        kind=found.kind,
        context=found.context,
        link=found.link_id,
        origin=found.origin,
    )


def _tag_names(pks: Iterable[int]) -> dict[int, list[str]]:
    return {pk: [tag.name for tag in tags] for pk, tags in tags_of(TagTargetKind.NOTE, pks).items()}


def note_out(note: Note) -> NoteOut:
    """The note whole: body, links with their targets, the notes linking to it."""
    paths = {note.folder_id: folder_path(note.folder)} if note.folder_id else {}
    return NoteOut(
        **_summary(
            note,
            paths=paths,
            tags=_tag_names([note.pk]).get(note.pk, []),
            size=len(note.body),
        ),
        body=note.body,
        links=[_link_out(link, target, note.ref) for link, target in note_links(note)],
        backlinks=[_backlink_out(b) for b in backlinks(Ref("note", note.public_id))],
    )


def _kinds_known(names: Sequence[str]) -> None:
    """A link kind the vocabulary lacks names nothing (404), listing those it has: the
    request is well formed (POST /api/link-kinds adds a kind)."""
    known = link_kinds()
    for name in names:
        if name.strip().lower() not in known:
            raise NotFound(f"kind: no link kind {name[:40]!r}; the kinds: {', '.join(known)}")


# --- a page of notes ------------------------------------------------------------------------


def _cursor(note: Note) -> str:
    raw = json.dumps([note.updated_at.isoformat(), note.pk]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _cursor_read(cursor: str) -> tuple[datetime, int]:
    refused = Invalid("cursor: not a cursor this endpoint gave out")
    try:
        at_text, pk = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii") + b"=="))
        at = datetime.fromisoformat(at_text)
    except (ValueError, TypeError, binascii.Error, UnicodeError) as exc:
        raise refused from exc
    if not isinstance(pk, int) or isinstance(pk, bool) or not 0 <= pk < _POSITION_MAX:
        raise refused
    return (at if at.tzinfo else at.replace(tzinfo=UTC)), pk


def _folder_find(path: str) -> Folder:
    """The folder at `path` (its names in any case, spaces as the services keep them);
    NotFound when there is none (a list never makes a folder)."""
    folder: Folder | None = None
    for part in path.split("/"):
        name = " ".join(part.split())
        folder = Folder.objects.filter(parent=folder, name__iexact=name).first()
        if folder is None:
            raise NotFound(f"folder {path[:200]!r} does not exist")
    assert folder is not None  # the schema's pattern: "" never comes here
    return folder


@router.get(
    "/notes",
    response=answers(NotesOut),
    summary="Notes, the most recently changed first",
    **scope("notes.read"),
)
@requires("notes.read")
def notes_list(
    request: HttpRequest,
    folder: FolderPath = FOLDER_QUERY,
    subfolders: bool = Query(False, description="with `folder`: its folders' notes too"),
    tag: TagName | None = TAG_QUERY,
    cursor: NotesCursor | None = CURSOR_QUERY,
    limit: int = limit_query(50, LIST_MAX),
) -> NotesOut:
    """Each note without its body (`size` says its length): `GET /api/notes/{id}` reads
    one whole. A `folder` or a `tag` that does not exist is 404."""
    notes = Note.objects.defer("body").annotate(body_size=Length("body"))
    if folder:
        notes = notes.filter(notes_in_folder(_folder_find(folder).pk, subfolders=subfolders))
    if tag is not None:
        tagged = Tagging.objects.filter(tag=tag_get(name=tag), target_kind=TagTargetKind.NOTE)
        notes = notes.filter(pk__in=tagged.values("target_id"))
    if cursor:
        at, pk = _cursor_read(cursor)
        notes = notes.filter(Q(updated_at__lt=at) | Q(updated_at=at, pk__lt=pk))
    rows = list(notes.order_by("-updated_at", "-pk")[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    paths = folder_paths() if any(note.folder_id for note in rows) else {}
    tags = _tag_names([note.pk for note in rows])
    return NotesOut(
        notes=[
            NoteSummaryOut(
                **_summary(
                    note,
                    paths=paths,
                    tags=tags.get(note.pk, []),
                    size=getattr(note, "body_size", 0) or 0,
                )
            )
            for note in rows
        ],
        next_cursor=_cursor(rows[-1]) if more and rows else None,
    )


# --- one note -------------------------------------------------------------------------------


@router.post(
    "/notes",
    response={**answers(NoteOut, 201), 413: ErrorOut},
    summary="Write a note",
    **scope("notes.write", responses={201: THE_NOTE}),
)
@requires("notes.write")
def notes_create(request: HttpRequest, body: NoteIn) -> Status:
    """201 with the note at revision 1, its body's `[[links]]` read and `links` made; a
    target the archive does not hold is kept, unresolved (it resolves when a person or a
    note of that name appears). The author is the caller: "agent:<name>" for an agent's
    token, "owner" for the owner's session. A body over 1,000,000 characters is 413; a
    link `kind` the vocabulary lacks is 404 (nothing is written)."""
    _kinds_known([spec.kind for spec in body.links])
    note = note_create(
        title=body.title,
        body=body.body,
        folder=body.folder,
        aliases=body.aliases,
        author=caller_actor(request),
        links=[LinkSpec(target=s.target, kind=s.kind, context=s.context) for s in body.links],
    )
    return Status(201, note_out(note))


@router.get(
    "/notes/{id}",
    response=answers(NoteOut),
    summary="A note with its links and backlinks",
    **scope("notes.read"),
)
@requires("notes.read")
def notes_show(request: HttpRequest, id: str = note_id()) -> NoteOut:
    """Each link's target described (`kind`, `ref`, `label`, `exists`: false for a name
    that names no one yet or a target deleted since), and the notes that link here."""
    return note_out(note_get(id))


@router.patch(
    "/notes/{id}",
    response={**answers(NoteOut), 409: NoteConflictOut, 413: ErrorOut},
    summary="Edit a note, naming the revision edited",
    **scope("notes.write"),
)
@requires("notes.write")
def notes_update(request: HttpRequest, body: NotePatch, id: str = note_id()) -> Any:
    """`revision` is the note's `revision` as it was read. When the note has been saved
    since, nothing is saved: 409 with both texts (the note's now, `current_revision`,
    `current_title`, `current_body`; and this edit's, `title`, `body`) to merge and send
    again from `current_revision`. An edit that changes nothing keeps the revision; one
    that does makes the next, saved by the caller."""
    changes: dict[str, Any] = {
        "title": body.title,
        "body": body.body,
        "aliases": body.aliases,
    }
    if body.folder is not None:
        changes["folder"] = body.folder
    try:
        note = note_update(
            public_id=id, revision=body.revision, actor=caller_actor(request), **changes
        )
    except NoteConflict as exc:
        return Status(
            409,
            NoteConflictOut(
                error="Conflict",
                detail=str(exc),
                revision=exc.edited,
                current_revision=exc.current_revision,
                current_title=exc.current_title,
                current_body=exc.current_body,
                title=exc.title,
                body=exc.body,
            ),
        )
    return note_out(note)


@router.delete(
    "/notes/{id}",
    response=answers(None, 204),
    summary="Delete a note",
    **scope("notes.write", responses={204: GONE}),
)
@requires("notes.write")
def notes_delete(request: HttpRequest, id: str = note_id()) -> Status:
    """The note goes with its revisions and the links it makes; links to it from
    elsewhere stay, unresolved. The feed and webhooks say note.deleted with its id."""
    note_delete(public_id=id, actor=caller_actor(request))
    return Status(204, None)


@router.get(
    "/notes/{id}/revisions",
    response=answers(RevisionsOut),
    summary="A note's revisions, the newest first",
    **scope("notes.read"),
)
@requires("notes.read")
def notes_revisions(
    request: HttpRequest,
    id: str = note_id(),
    before: int | None = Query(
        None, ge=1, le=ID_MAX, description="the revisions before this number (`next_before`)"
    ),
    limit: int = limit_query(20, REVISIONS_MAX),
) -> RevisionsOut:
    """Every save whole: its number, title, body, folder and who saved it."""
    note = note_get(id)
    found = NoteRevision.objects.filter(note=note).order_by("-number")
    if before is not None:
        found = found.filter(number__lt=before)
    rows = list(found[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    return RevisionsOut(
        note=note.public_id,
        revisions=[
            RevisionOut(
                number=r.number,
                title=r.title,
                body=r.body,
                folder_path=r.folder_path,
                author=r.author,
                created_at=r.created_at,
            )
            for r in rows
        ],
        next_before=rows[-1].number if more and rows else None,
    )


# --- links ----------------------------------------------------------------------------------


@router.post(
    "/links",
    response=answers(LinkOut, 201),
    summary="Link two typed references",
    **scope("notes.write", responses={201: THE_LINK}),
)
@requires("notes.write")
def links_create(request: HttpRequest, body: LinkIn) -> Status:
    """201 with the link, its target described: one the archive does not hold is kept,
    unresolved (`exists` false), never refused. A `source` that does not exist is 404, as
    is a `kind` the vocabulary lacks. The same link again (source, target, kind) is the
    same link, its `context` changed."""
    _kinds_known([body.kind])
    source = str(ref_parse(body.source, field="source"))
    link = link_add(
        source=source,
        target=body.target,
        kind=body.kind,
        context=body.context,
        actor=caller_actor(request),
    )
    return Status(201, _link_out(link, link_targets([link])[link.pk], source))


@router.delete(
    "/links/{id}",
    response=answers(None, 204),
    summary="Remove a link",
    **scope("notes.write"),
)
@requires("notes.write")
def links_delete(request: HttpRequest, id: str = public_id("lnk", "link")) -> Status:
    """A link written in a note's text (`origin` body) goes when the text no longer holds
    it: removing it here is 409, naming the note to edit."""
    try:
        link_remove(public_id=id, actor=caller_actor(request))
    except Invalid as exc:  # the link is well named; the note's text holds it
        raise Conflict(str(exc)) from exc
    return Status(204, None)


@router.get(
    "/backlinks",
    response=answers(BacklinksOut),
    summary="The notes that link to anything",
    **scope("notes.read"),
)
@requires("notes.read")
def backlinks_list(
    request: HttpRequest,
    ref: AnyRef = REF_QUERY,
    limit: int = limit_query(BACKLINKS_MAX, BACKLINKS_LIST_MAX),
) -> BacklinksOut:
    """One row per link (a note that names it in two sentences shows both), with the
    sentence; the newest note first. A reference to something the archive does not hold
    is 404; a URL's backlinks are the links to that URL."""
    parsed = ref_parse(ref, field="ref")
    return BacklinksOut(
        ref=str(parsed), backlinks=[_backlink_out(b) for b in backlinks(parsed, limit=limit)]
    )


@router.get(
    "/link-kinds",
    response=answers(list[LinkKindOut]),
    summary="The kinds a link may have",
    **scope("notes.read"),
)
@requires("notes.read")
def link_kinds_list(request: HttpRequest) -> list[LinkKindOut]:
    """The fixed kinds first, then the owner's, by name."""
    added = LinkKind.objects.exclude(name__in=list(BUILTIN_KINDS)).order_by("name")
    return [
        *(LinkKindOut(name=n, builtin=True, description=d) for n, d in BUILTIN_KINDS.items()),
        *(LinkKindOut(name=k.name, builtin=False, description=k.description) for k in added),
    ]


@router.post(
    "/link-kinds",
    response=answers(LinkKindOut, 201),
    summary="Add a kind of link",
    **scope("notes.write"),
)
@requires("notes.write")
def link_kinds_create(request: HttpRequest, body: LinkKindIn) -> Status:
    """Kept in lowercase; a kind that exists is answered as it is (nothing changes)."""
    kind = link_kind_add(name=body.name, description=body.description.strip())
    builtin = kind.name in BUILTIN_KINDS
    described = BUILTIN_KINDS.get(kind.name, kind.description)
    return Status(201, LinkKindOut(name=kind.name, builtin=builtin, description=described))


# --- search ---------------------------------------------------------------------------------


@router.get(
    "/search/notes",
    response=answers(NoteSearchOut),
    summary="Search notes by their titles and bodies",
    **scope("notes.read"),
)
@requires("notes.read")
def search_notes(
    request: HttpRequest,
    q: Annotated[str, Format("wirecat-query", most=MAX_QUERY_CHARS)] = Query(
        "", description="a query in the query language (docs/search.md, Notes)"
    ),
    cursor: Annotated[str, Format("wirecat-search-cursor")] | None = Query(
        None, description="the `next_cursor` of the same search (same `q`)"
    ),
    limit: int = limit_query(20, MAX_LIMIT),
) -> NoteSearchOut:
    """`q` in the query language (`format: wirecat-query`), meaning what it means for
    messages: words (and their other forms), "phrases", prefix*, *infix*, -not, OR,
    parentheses, exact:, tag: (a tag on the note), in: (a folder, with its folders),
    before:, after:, on: (the note's last change). Best first (bm25, a title above the
    body), each with a snippet. from:, has:, is:, source: and filename: are for messages:
    422 with a sentence, as is a syntax error (with its `position`)."""
    page = note_search(query=q, cursor=cursor, limit=limit)
    return NoteSearchOut(
        query=page.query,
        parsed=page.parsed,
        hits=[
            NoteHitOut(
                note=hit.note.public_id,
                reference=hit.note.ref,
                title=hit.note.title,
                folder=hit.folder,
                author=hit.note.author,
                revision=hit.note.revision,
                updated_at=hit.note.updated_at,
                snippet=[SnippetPart(text=part.text, hit=part.hit) for part in hit.snippet],
                score=hit.score,
            )
            for hit in page.hits
        ],
        next_cursor=page.next_cursor,
        stems_behind=page.stems_behind,
        suggestion=page.suggestion,
    )
