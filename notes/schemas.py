"""The API shapes of notes, their revisions, links and backlinks, link kinds, and note
search hits. Every string says its bounds and form as the services check them: a typed
reference by its pattern (`notes.references`), a folder path by its names' rules
(`notes.services.folders`), a title and an alias by their lengths."""

from __future__ import annotations

from typing import Annotated, Any

from ninja import Schema
from pydantic import AfterValidator, Field

from archive.search.schemas import SnippetPart
from archive.web.schemas import SPACE, At, BodyIn, Id, Matching, Text
from notes.models import CONTEXT_MAX, TITLE_MAX
from notes.references import KEY_MAX, NAME_MAX
from notes.services.links import KIND_MAX
from notes.services.notes import ALIASES_MAX, BODY_MAX

FOLDER_PATH_MAX = 1000  # characters of a folder path (a revision keeps it in 1,000)
FOLDER_DEPTH_MAX = 32  # notes.services.folders.DEPTH_MAX
FOLDER_NAME_MAX = 120  # notes.models.FOLDER_NAME_MAX
LINKS_MAX = 500  # explicit links made with a new note
KIND_DESCRIPTION_MAX = 200

# --- ids and typed references ---------------------------------------------------------------

# A public id of the store's form: its prefix and a ULID (Crockford's base 32, capitals).
_ULID = "[0-9A-HJKMNP-TV-Z]{26}"
_PK = "[1-9][0-9]{0,17}"
_TASK = "[A-Za-z][A-Za-z0-9]{0,9}-[1-9][0-9]{0,8}"
# A URL as `notes.references` takes it: http(s), then no space, quote, angle bracket or
# control character; the whole key at most KEY_MAX characters.
_URL_REST = f"[^<>\"'\\u0000-\\u001f{SPACE}]{{1,{KEY_MAX - len('https://')}}}"
_URL = f"[Hh][Tt][Tt][Pp][Ss]?://{_URL_REST}"
# What a link may start from: something the archive holds (not a URL).
HELD_REF = (
    f"note:note_{_ULID}|message:msg_{_ULID}|meeting:mtg_{_ULID}|attachment:att_{_ULID}"
    f"|chat:{_PK}|person:{_PK}|task:{_TASK}"
)
# A conversation is linked to (by its first message), never linked from.
REF = f"{HELD_REF}|conversation:cnv_{_ULID}|url:{_URL}"
REF_MAX = len("url:") + KEY_MAX
_REF_WORDS = (
    "a typed reference: note:note_…, message:msg_…, meeting:mtg_…, attachment:att_…,"
    " chat:12, person:7, task:HOME-12, conversation:cnv_… or url:https://…"
)


# A typed reference (`person:12`, `message:msg_…`, `url:https://…`): a link's target, and
# what backlinks are asked of.
Ref = Annotated[str, Field(max_length=REF_MAX), Matching("target", REF, _REF_WORDS)]
AnyRef = Annotated[str, Field(max_length=REF_MAX), Matching("ref", REF, _REF_WORDS)]
SourceRef = Annotated[
    str,
    Field(max_length=REF_MAX),
    Matching(
        "source",
        HELD_REF,
        "a typed reference to something the archive holds (note:, message:, meeting:,"
        " attachment:, chat:, person:, task:), not a URL",
    ),
]

# A link kind as the API names it: letters, digits and dashes (the services lowercase it).
KIND = f"[A-Za-z0-9-]{{1,{KIND_MAX}}}"
KindName = Annotated[
    str, Matching("kind", KIND, f"letters, digits and dashes, 1 to {KIND_MAX} characters")
]

# --- folder paths ---------------------------------------------------------------------------

# One folder's name: no control character, none of / \ : * ? " < > |, not starting with a
# dot, no space at either end (inside, one space or more: kept as one), 1 to 120 characters.
_NAME_CHAR = f'[^\\u0000-\\u001f/\\\\:*?"<>|{SPACE}]'
_NAME_FIRST = f'[^\\u0000-\\u001f/\\\\:*?"<>|.{SPACE}]'
_NAME = f"{_NAME_FIRST}(?:(?:{_NAME_CHAR}| ){{0,{FOLDER_NAME_MAX - 2}}}{_NAME_CHAR})?"
FOLDER_PATH = f"(?:{_NAME}(?:/{_NAME}){{0,{FOLDER_DEPTH_MAX - 1}}})?"
FolderPath = Annotated[
    str,
    Field(max_length=FOLDER_PATH_MAX),
    Matching(
        "folder",
        FOLDER_PATH,
        f"a folder path such as Work/Clients: at most {FOLDER_DEPTH_MAX} names of 1 to"
        f' {FOLDER_NAME_MAX} characters, none starting with a dot or holding / \\ : * ? " < > |',
    ),
]

# --- texts ----------------------------------------------------------------------------------


def _unicode(value: str) -> str:
    """JSON can write half of a surrogate pair (`"\\ud800"`), which no text encoding
    holds: refused here, before the store could not write it."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("not valid Unicode (half of a surrogate pair)") from exc
    return value


Unicode = AfterValidator(_unicode)
Title = Annotated[str, Text("title", most=TITLE_MAX), Unicode]
Alias = Annotated[str, Text("alias", most=NAME_MAX, blank=True), Unicode]
Context = Annotated[str, Text("context", most=CONTEXT_MAX, blank=True), Unicode]
# The body's limit is the service's: over it, 413 with a sentence (too large, not malformed).
Body = Annotated[str, Field(json_schema_extra={"maxLength": BODY_MAX}), Unicode]
Aliases = Annotated[list[Alias], Field(max_length=ALIASES_MAX)]


# --- requests -------------------------------------------------------------------------------


class LinkSpecIn(BodyIn):
    """A link a new note makes: to `target` (a typed reference; one the archive does not
    hold is kept, unresolved), of `kind`, with the sentence that makes it (`context`)."""

    target: Ref
    kind: KindName = "mentions"
    context: Context = ""


class NoteIn(BodyIn):
    """A new note: its `title`, Markdown `body` (its `[[links]]` are read), `folder` (a path
    such as Work/Clients, made where missing; "" for the top), other names `[[links]]` may
    use for it (`aliases`), and links to make with it (`links`)."""

    title: Title
    body: Body = ""
    folder: FolderPath = ""
    aliases: Aliases = []
    links: Annotated[list[LinkSpecIn], Field(max_length=LINKS_MAX)] = []

    model_config = {
        "json_schema_extra": {
            "examples": [
                {
                    "title": "Plumber",
                    "body": "[[Alice Walker]] knows one. Call on Friday.",
                    "folder": "Home",
                    "aliases": [],
                    "links": [
                        {
                            "target": "message:msg_01JD8ZV3Q0V6Y1T9B2C4D5E6F7",
                            "kind": "source",
                            "context": "",
                        }
                    ],
                }
            ]
        }
    }


class NotePatch(BodyIn):
    """An edit made from `revision` (the note's `revision` when it was read): what is given
    changes, what is left out stays (`folder` "" moves the note to the top)."""

    revision: Id
    title: Title | None = None
    body: Body | None = None
    folder: FolderPath | None = None
    aliases: Aliases | None = None

    model_config = {"json_schema_extra": {"examples": [{"revision": 1, "body": "Call on Monday."}]}}


class LinkIn(BodyIn):
    """A link from `source` (something the archive holds) to `target` (anything, a URL
    too; one the archive does not hold is kept, unresolved), of `kind`, with `context`.
    The same link again changes its context only."""

    source: SourceRef
    target: Ref
    kind: KindName = "mentions"
    context: Context = ""

    model_config = {
        "json_schema_extra": {
            "examples": [
                {
                    "source": "note:note_01JD8ZV3Q0V6Y1T9B2C4D5E6F7",
                    "target": "person:12",
                    "kind": "about",
                    "context": "",
                }
            ]
        }
    }


class LinkKindIn(BodyIn):
    """A kind of link to add to the vocabulary (kept in lowercase; adding one that exists
    changes nothing)."""

    name: KindName
    description: Annotated[
        str, Text("description", most=KIND_DESCRIPTION_MAX, blank=True), Unicode
    ] = ""


# --- answers --------------------------------------------------------------------------------


class TargetOut(Schema):
    """What a link points at: its `kind` ("" for a name that names no one yet), its typed
    reference (`ref`, null for such a name), the words shown for it, the page that shows
    it (`url`: a path of this site, or the URL itself), whether the archive holds it
    (`exists`), and a detail (a message's chat and time, a task's status, why it waits)."""

    kind: str
    ref: str | None
    label: str
    url: str | None
    exists: bool
    detail: str


class LinkOut(Schema):
    """A link: from `source`, of `kind`, with the sentence that makes it. `origin` body:
    written in the note's text as `[[…]]` (it goes when the text no longer holds it);
    explicit: made on a page or through the API (it stays until removed). `label` is the
    shown text of `[[target|label]]`, "" for none."""

    id: str  # lnk_…
    source: str  # a typed reference
    target: TargetOut
    kind: str
    context: str
    label: str
    origin: str  # body | explicit
    actor: str  # owner | agent:<name>
    created_at: At


class BacklinkOut(Schema):
    """A note linking to something, with the sentence that links it."""

    note: str  # note_…
    title: str
    folder: str
    updated_at: At
    kind: str
    context: str
    link: str  # lnk_…
    origin: str  # body | explicit


class NoteSummaryOut(Schema):
    """A note without its body: `author` who made it (owner or agent:<name>), `revision`
    how many saves it has had, `size` its body's length in characters."""

    id: str  # note_…
    reference: str  # note:note_…, what links and search hits carry
    title: str
    aliases: list[str]
    folder: str  # its folder's path, "" at the top
    author: str
    revision: int
    tags: list[str]
    size: int
    created_at: At
    updated_at: At


class NoteOut(NoteSummaryOut):
    """A note with its Markdown body, its links in order (written in the text first, then
    explicit ones), each target described, and the notes that link to it (the newest
    first, at most 200: `GET /api/backlinks?ref=note:…` for more)."""

    body: str
    links: list[LinkOut]
    backlinks: list[BacklinkOut]


class NotesOut(Schema):
    """A page of notes, the most recently changed first; `next_cursor` the `cursor` of the
    next page, null on the last."""

    notes: list[NoteSummaryOut]
    next_cursor: str | None


class NoteConflictOut(Schema):
    """An edit made from a revision that is no longer the note's: nothing was saved. Both
    texts, to merge and save again from `current_revision`: the note's now (`current_…`)
    and the edit's (`title`, `body`, made from `revision`)."""

    error: str  # Conflict
    detail: str
    revision: int
    current_revision: int
    current_title: str
    current_body: str
    title: str
    body: str


class RevisionOut(Schema):
    """One save of a note, whole: what it said then, in which folder, who saved it."""

    number: int
    title: str
    body: str
    folder_path: str
    author: str
    created_at: At


class RevisionsOut(Schema):
    """A note's revisions, the newest first; `next_before` the `before` of the next page,
    null on the last."""

    note: str  # note_…
    revisions: list[RevisionOut]
    next_before: int | None


class BacklinksOut(Schema):
    """The notes that link to `ref`, the newest note first, one row per link."""

    ref: str
    backlinks: list[BacklinkOut]


class LinkKindOut(Schema):
    """A kind of link: a built-in one, or one the owner added."""

    name: str
    builtin: bool
    description: str


class NoteHitOut(Schema):
    """A note that matched, with a snippet around the match in its body (its title when
    the body is empty)."""

    note: str  # note_…
    reference: str  # note:note_…
    title: str
    folder: str
    author: str
    revision: int
    updated_at: At
    snippet: list[SnippetPart]
    score: float | None  # bm25 (lower is better) when ranked by words


class NoteSearchOut(Schema):
    """A page of note search hits, best first, the query as parsed, and the next page's
    cursor (null on the last)."""

    query: str
    parsed: dict[str, Any] | None
    hits: list[NoteHitOut]
    next_cursor: str | None
    # Notes wait for their stems: a word's other forms are found only in what the stems
    # index holds, the words as written everywhere.
    stems_behind: bool = False
    # "Did you mean": the query with known words, when its first page found little.
    suggestion: str | None = None
