"""The notes as a folder of Markdown files (an Obsidian-style vault): export and import.

A note is `<folder path>/<title>.md`: YAML front matter, then the body exactly as stored
(its `[[links]]` and `#tags` as written). The front matter holds `id` (the note's public id),
`title` (only when the file name cannot say it: a character no file system allows, a second
note of one title), `aliases`, `tags`, `created` and `updated` (ISO 8601, UTC, to the
second), `author` (when an agent wrote it) and `links` (the links made by hand: a typed
reference, a kind, a sentence). Exporting, then importing, changes nothing.

Export writes into an empty folder or one an earlier export made (the marker file says so
and lists what it wrote, with each file's digest): every file atomically (a temporary file,
then a rename), a file unchanged left as it is, a file of a note since deleted or renamed
removed. A file changed on disk since it was written, or one WireCat never wrote, in the
way of the export refuses it whole, naming the files: nothing written over is lost.

Import:

1. Read and check every file first: the front matter (YAML: a mapping), sizes, UTF-8, the
   `id` (a note id, one file each), folders (names a folder can have), tags, links, and
   whether the note changed in WireCat after the file was exported (its `updated`). Any
   problem refuses the whole vault, naming each file and what is wrong: a refused vault
   writes nothing.
2. Then write the changes, BATCH files to a transaction (quiet: in the changes feed, told
   to no webhook), so that a large vault never holds the store's write lock for long (one
   transaction for 5,000 notes would hold it for a minute, failing the pages' and the
   worker's writes). Each note is written whole. What checking cannot foresee (a file
   changed during the import, a save the services refuse) stops the import, naming the
   file, with its batch rolled back and the batches before it kept: the same import again
   finishes the rest (the notes written already are unchanged then).

Which note a file is: the note of its `id` (made with that id when the store has none), or,
for a file without one (a vault Obsidian made), the note of the same title, in any case, in
the same folder, when exactly one note is; otherwise a new note. Source files are never
written to, so re-importing a vault without ids changes nothing either; a note renamed on
one side becomes a new note on the next import unless its file carries the `id` an export
writes. A file's folder is its directory; its title its name without `.md`, unless the
front matter gives `title`. Tags are the front matter's and the `#tags` of the body outside
code (Obsidian's), less a tag taken off the note in WireCat while its text still says it;
the file's tags and links are all of the note's (one removed from the file is removed from
the note). Symbolic links are never followed, dot files and folders (`.obsidian/`,
`.trash/`) are skipped.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import tempfile
import unicodedata
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path, PurePosixPath
from typing import NamedTuple

import yaml
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from archive.store.changes import quiet_changes
from archive.tags.models import Tagging, TagTargetKind
from archive.tags.services import TagTarget, tag_add, tag_name_clean, tag_remove
from notes.models import CONTEXT_MAX, DEFAULT_KIND, Folder, Link, LinkKind, Note
from notes.references import Ref, ref_guess, ref_parse
from notes.services.folders import (
    DEPTH_MAX,
    folder_ensure,
    folder_name_clean,
    folder_path,
    folder_paths,
)
from notes.services.links import LinkSpec, link_add, link_kind_add, link_kinds, link_remove
from notes.services.notes import (
    BODY_MAX,
    aliases_clean,
    author_clean,
    body_clean,
    note_create,
    note_update,
    title_clean,
)
from notes.services.targets import Resolver
from wirecat.errors import Conflict, Invalid, NotFound, WireCatError

MARKER = ".wirecat-vault.json"
MARKER_VERSION = 1
FILES_MAX = 100_000  # Markdown files in one vault
ENTRIES_MAX = 1_000_000  # files and folders walked, whatever they are
FRONT_MATTER_MAX = 64 * 1024  # bytes
# A file's bytes at most: the front matter and a body of BODY_MAX characters of 4 bytes.
FILE_BYTES_MAX = FRONT_MATTER_MAX + 4 * BODY_MAX + 16
TAGS_MAX = 200
LINKS_MAX = 1_000
NAME_CHARS_MAX = 120  # a file or folder name, before `.md`
NAME_BYTES_MAX = 200  # and in UTF-8 (file systems allow 255; room for " (2)" and a temp name)
ERRORS_SHOWN = 200
BATCH = 100  # files written in one transaction

# Progress: (stage, done, total); stages "read" and "write".
Progress = Callable[[str, int, int], None]

_UNSAFE = re.compile(r'[/\\:*?"<>|\x00-\x1f\x7f]')
_RESERVED = {"CON", "PRN", "AUX", "NUL"} | {f"{p}{n}" for p in ("COM", "LPT") for n in range(10)}
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_WIKI = re.compile(r"\[\[[^\[\]\n]*\]\]")
_TAG = re.compile(r"(?<!\S)#([\w/-]+)")


class VaultFileError(Exception):
    """A file of a vault that cannot be imported; the message says why (the command and the
    result put the file's path in front)."""


@dataclass
class ImportResult:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    folders: int = 0  # folders made
    errors: list[str] = field(default_factory=list)  # "path: what is wrong"
    skipped: dict[str, int] = field(default_factory=dict)  # reason → how many
    # Errors found while checking: nothing was written. Stopped while writing (a file
    # changed meanwhile): the batches before it were; the same import again finishes.
    stopped: bool = False


@dataclass
class ExportResult:
    notes: int = 0
    folders: int = 0
    written: int = 0  # files new or changed
    unchanged: int = 0  # files already as they would be written
    removed: int = 0  # files of notes since deleted or renamed


# --- names on disk ------------------------------------------------------------------------


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def safe_name(name: str) -> str:
    """A file or folder name every OS accepts: no `/ \\ : * ? " < > |` or control
    characters, no leading dot, no trailing dot or space, not a Windows device name (CON,
    NUL, COM1…), at most NAME_CHARS_MAX characters and NAME_BYTES_MAX bytes."""
    text = _UNSAFE.sub("-", _nfc(name))
    text = " ".join(text.split())[:NAME_CHARS_MAX]
    while len(text.encode()) > NAME_BYTES_MAX:
        text = text[:-1]
    text = text.lstrip(". ").rstrip(". ")
    if not text:
        return "Untitled"
    if text.split(".", 1)[0].rstrip(" ").upper() in _RESERVED:
        text = "_" + text
    return text


def _unique(name: str, taken: set[str], suffix: str = "") -> str:
    """`name`, or `name (2)`, `name (3)`… : the first one not in `taken` (compared as
    case-insensitive file systems do), which it joins."""
    candidate, n = name, 1
    while (candidate + suffix).casefold() in taken:
        n += 1
        candidate = f"{name} ({n})"
    taken.add((candidate + suffix).casefold())
    return candidate


def _moment(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _second(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(microsecond=0)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the marker ---------------------------------------------------------------------------


@dataclass
class _Marker:
    """What an export left in its folder: the files it wrote (with their digests; None for
    one being written when the export stopped), the folders it made (directory → the
    folder's path, which a directory name cannot always spell), the owner's link kinds."""

    files: dict[str, str | None] = field(default_factory=dict)
    dirs: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)


def _marker_read(root: Path) -> _Marker | None:
    path = root / MARKER
    if not path.exists() and not path.is_symlink():
        return None
    problem = f"{path} is not a WireCat vault marker; remove it if this is not an export"
    try:
        data = _read_bytes(path, 64 * 1024 * 1024)
        raw = json.loads(data.decode("utf-8"))
    except (OSError, ValueError, VaultFileError) as exc:
        raise Invalid(f"{problem} ({exc})") from exc
    if not isinstance(raw, dict) or raw.get("wirecat_vault") != MARKER_VERSION:
        raise Invalid(problem)
    files, dirs, kinds = raw.get("files", {}), raw.get("dirs", {}), raw.get("link_kinds", {})
    if not all(isinstance(x, dict) for x in (files, dirs, kinds)):
        raise Invalid(problem)
    return _Marker(
        files={str(k): (str(v) if v else None) for k, v in files.items()},
        dirs={str(k): str(v) for k, v in dirs.items()},
        kinds={str(k): str(v) for k, v in kinds.items()},
    )


def _marker_write(root: Path, marker: _Marker) -> None:
    data = {
        "wirecat_vault": MARKER_VERSION,
        "about": "Written by `wirecat notes export`: the files it wrote. Import with"
        " `wirecat notes import`.",
        "link_kinds": dict(sorted(marker.kinds.items())),
        "dirs": dict(sorted(marker.dirs.items())),
        "files": dict(sorted(marker.files.items())),
    }
    text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    _write_atomic(root / MARKER, text.encode())


# --- files --------------------------------------------------------------------------------


def _read_bytes(path: Path, limit: int) -> bytes:
    """A regular file's bytes, never through a symbolic link, refused above `limit` before
    it is read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise VaultFileError(f"cannot be read ({exc.strerror or exc})") from exc
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise VaultFileError("is not a regular file")
        if info.st_size > limit:
            raise VaultFileError(
                f"is {info.st_size:,} bytes; a note's file holds at most {limit:,}"
            )
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise VaultFileError(f"grew past {limit:,} bytes while it was read")
    return data


def _write_atomic(path: Path, data: bytes) -> None:
    """Write `path` whole or not at all: a temporary file beside it, then a rename."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".wirecat-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


# --- reading one file ---------------------------------------------------------------------


@dataclass
class _Parsed:
    """One file, read and checked: what its note should be."""

    rel: str
    digest: str
    id: str | None
    title: str
    folder: str
    body: str
    aliases: list[str]
    front_tags: list[str]
    inline_tags: list[str]
    links: list[LinkSpec]
    created: datetime | None
    updated: datetime | None
    author: str


def _split(text: str) -> tuple[str | None, str]:
    """(front matter, body) of a file's text; None when it has no front matter."""
    first, newline, _ = text.partition("\n")
    if first.rstrip("\r ") != "---":
        return None, text
    offset = len(first) + len(newline)
    while offset <= len(text):
        end = text.find("\n", offset)
        line = text[offset:] if end < 0 else text[offset:end]
        if offset > FRONT_MATTER_MAX:
            break
        if line.rstrip("\r ") in ("---", "..."):
            front = text[len(first) + len(newline) : offset]
            if len(front.encode()) > FRONT_MATTER_MAX:
                break
            return front, "" if end < 0 else text[end + 1 :]
        if end < 0:
            raise VaultFileError(
                "the front matter opened on line 1 is never closed (no line `---` after it)"
            )
        offset = end + 1
    raise VaultFileError(
        f"the front matter is larger than {FRONT_MATTER_MAX // 1024} KB (or never closed)"
    )


def _strings(value: object, what: str, *, split: bool = False) -> list[str]:
    """A list of strings from a YAML value: a list, one string (split on commas and spaces
    when `split`: Obsidian's `tags: a, b`), or nothing."""
    if value is None:
        return []
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        text = str(value)
        return [part for part in re.split(r"[,\s]+", text) if part] if split else [text]
    if isinstance(value, list):
        if len(value) > max(TAGS_MAX, LINKS_MAX):
            raise VaultFileError(f"{what}: at most {max(TAGS_MAX, LINKS_MAX)}, not {len(value)}")
        out: list[str] = []
        for item in value:
            if item is None:
                continue
            if not isinstance(item, str | int | float) or isinstance(item, bool):
                raise VaultFileError(f"{what}: a list of words, not a {type(item).__name__}")
            out.append(str(item))
        return out
    raise VaultFileError(f"{what}: a list or a word, not a {type(value).__name__}")


def _text(value: object, what: str) -> str:
    """A scalar of the front matter as text ("" for nothing); a list or a mapping is an
    error (never turned into text: one built from YAML aliases can be enormous)."""
    if value is None:
        return ""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value)
    raise VaultFileError(f"{what}: a line of text, not a {type(value).__name__}")


def _when(value: object, what: str) -> datetime | None:
    if value is None or value == "":
        return None
    found: datetime | None = None
    if isinstance(value, datetime):
        found = value
    elif isinstance(value, date):
        found = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        with contextlib.suppress(ValueError):
            found = parse_datetime(text)
            if found is None and len(text) == 10:
                day = parse_date(text)
                found = datetime(day.year, day.month, day.day) if day else None
    if found is None:
        raise VaultFileError(f"{what}: not a date and time (write 2024-05-01T14:00:00Z)")
    if timezone.is_naive(found):
        found = found.replace(tzinfo=UTC)
    return found.astimezone(UTC)


def inline_tags(body: str) -> list[str]:
    """The `#tags` of a Markdown body as Obsidian reads them: `#` after a space or at the
    start of a line, then letters, digits, `_`, `-`, `/` with at least one letter; never in
    code (fenced, indented or `spans`), in a `[[link]]`, or a heading's `#`."""
    found: list[str] = []
    fence: str | None = None
    for line in body.splitlines():
        opening = _FENCE.match(line)
        if fence is not None:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
            continue
        if opening:
            fence = opening.group(1)
            continue
        if line.startswith(("    ", "\t")) and not line.strip().startswith(("-", "*", "+")):
            continue
        line = _WIKI.sub(" ", _CODE_SPAN.sub(" ", line))
        for match in _TAG.finditer(line):
            name = match.group(1).strip("/")
            if any(ch.isalpha() for ch in name):
                found.append(name)
    return found


def _tag_names(names: list[str], *, strict: bool = True) -> list[str]:
    """Tag names as stored, once each (a tag's name is the same in any case). A name that
    cannot be a tag is an error, or (not `strict`: a `#word` of the text) not a tag."""
    out: dict[str, str] = {}
    for name in names:
        try:
            cleaned = tag_name_clean(name.lstrip("#"))
        except Invalid as exc:
            if not strict:
                continue
            why = str(exc).removeprefix("tag name: ")
            raise VaultFileError(f"tag {name[:70]!r}: {why}") from exc
        out.setdefault(cleaned.casefold(), cleaned)
    if len(out) > TAGS_MAX:
        raise VaultFileError(f"tags: at most {TAGS_MAX}, not {len(out)}")
    return list(out.values())


def _wanted_tags(parsed: _Parsed, stored_body: str | None, stored: list[str]) -> list[str]:
    """The note's tags after the import: the front matter's, and the `#tags` of the text,
    except those the note had in its text and lost in WireCat (a tag taken off a note is
    not put back by the same text coming home). A new note takes all of them."""
    dropped: set[str] = set()
    if stored_body is not None:
        have = {name.casefold() for name in stored}
        dropped = {
            name.casefold()
            for name in _tag_names(inline_tags(stored_body), strict=False)
            if name.casefold() not in have
        }
    inline = [name for name in parsed.inline_tags if name.casefold() not in dropped]
    return _tag_names(parsed.front_tags + inline)


def _same_tags(one: list[str], other: list[str]) -> bool:
    return {name.casefold() for name in one} == {name.casefold() for name in other}


def _target(text: str) -> Ref:
    """A typed reference (`message:msg_…`), or a bare id, task key or URL."""
    try:
        return ref_parse(text, field="links: target")
    except Invalid:
        guessed = ref_guess(text)
        if guessed is None:
            raise
        return guessed


def _links(value: object, kinds: set[str]) -> list[LinkSpec]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise VaultFileError(f"links: a list, not a {type(value).__name__}")
    if len(value) > LINKS_MAX:
        raise VaultFileError(f"links: at most {LINKS_MAX}, not {len(value)}")
    out: dict[tuple[str, str], LinkSpec] = {}
    for item in value:
        entry = {"target": item} if isinstance(item, str) else item
        if not isinstance(entry, dict) or not isinstance(entry.get("target"), str):
            raise VaultFileError(
                "links: each a mapping such as {target: message:msg_…, kind: about, context: …}"
            )
        try:
            target = str(_target(entry["target"]))
        except Invalid as exc:
            raise VaultFileError(str(exc)) from exc
        kind = (_text(entry.get("kind"), "links: kind") or DEFAULT_KIND).strip().lower()
        if kind not in kinds:
            raise VaultFileError(
                f"links: kind {kind[:40]!r} is not one of {', '.join(sorted(kinds))}"
            )
        context = " ".join(_text(entry.get("context"), "links: context").split())
        if len(context) > CONTEXT_MAX:
            raise VaultFileError(f"links: a context of at most {CONTEXT_MAX} characters")
        out.setdefault((target, kind), LinkSpec(target=target, kind=kind, context=context))
    return list(out.values())


def _parse(path: Path, rel: str, folder: str, kinds: set[str]) -> _Parsed:
    """One file read and checked (VaultFileError or a WireCatError says what is wrong)."""
    data = _read_bytes(path, FILE_BYTES_MAX)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise VaultFileError(
            f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start:,})"
        ) from exc
    text = text.removeprefix("\ufeff")
    front_text, body = _split(text)
    front: object = {}
    if front_text is not None:
        try:
            front = yaml.safe_load(front_text) or {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 2}: " if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise VaultFileError(f"the front matter is not valid YAML ({where}{problem})") from exc
        except RecursionError as exc:
            raise VaultFileError("the front matter is nested too deeply to read") from exc
    if not isinstance(front, dict):
        raise VaultFileError(
            f"the front matter is a {type(front).__name__}, not a mapping of keys (id:, tags:, …)"
        )
    public_id = front.get("id")
    if public_id is not None:
        if not isinstance(public_id, str):
            raise VaultFileError(f"id: a note id (note_…), not a {type(public_id).__name__}")
        try:
            public_id = ref_parse(f"note:{public_id}").key
        except Invalid as exc:
            raise VaultFileError(f"id: {public_id[:60]!r} is not a note id (note_…)") from exc
    title = _text(front.get("title"), "title") or _nfc(PurePosixPath(rel).stem)
    body = body_clean(body)
    return _Parsed(
        rel=rel,
        digest=_digest(data),
        id=public_id,
        title=title_clean(title),
        folder=folder,
        body=body,
        aliases=aliases_clean(_strings(front.get("aliases"), "aliases")),
        front_tags=_tag_names(_strings(front.get("tags"), "tags", split=True)),
        inline_tags=_tag_names(inline_tags(body), strict=False),
        links=_links(front.get("links"), kinds),
        created=_when(front.get("created"), "created"),
        updated=_when(front.get("updated"), "updated"),
        author=author_clean(_text(front.get("author"), "author") or "owner"),
    )


# --- walking a vault ----------------------------------------------------------------------


@dataclass
class _Walk:
    files: list[tuple[Path, str, str]] = field(default_factory=list)  # path, rel, folder
    folders: list[str] = field(default_factory=list)  # folders of empty directories
    errors: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def _walk(root: Path, marker: _Marker | None) -> _Walk:
    """The Markdown files under `root` and the folders they are in, in a stable order;
    symbolic links never followed, dot files and folders skipped."""
    walk = _Walk()
    names = marker.dirs if marker else {}
    seen = 0

    def folder_of(rel_dir: str, parent_folder: str) -> str:
        name = PurePosixPath(rel_dir).name
        if rel_dir in names:
            name = names[rel_dir].rsplit("/", 1)[-1]
        name = folder_name_clean(name)
        return f"{parent_folder}/{name}" if parent_folder else name

    def visit(directory: Path, rel_dir: str, folder: str, depth: int) -> bool:
        """True when the directory holds no file that is not hidden (it is kept as an
        empty folder)."""
        nonlocal seen
        try:
            with os.scandir(directory) as found:
                entries = sorted(found, key=lambda e: e.name)
        except OSError as exc:
            walk.errors.append(f"{rel_dir or '.'}/: cannot be read ({exc.strerror or exc})")
            return False
        empty = True
        for entry in entries:
            seen += 1
            if seen > ENTRIES_MAX:
                raise Invalid(
                    f"{root}: more than {ENTRIES_MAX:,} files and folders; is this a vault?"
                )
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.name.startswith("."):
                if rel != MARKER:
                    walk.skipped["hidden files and folders (.obsidian, .trash, …)"] += 1
                continue
            if entry.is_symlink():
                walk.skipped["symbolic links (never followed)"] += 1
                empty = False
                continue
            if entry.is_dir(follow_symlinks=False):
                try:
                    inner = folder_of(rel, folder)
                except Invalid as exc:
                    walk.errors.append(f"{rel}/: {exc}")
                    empty = False
                    continue
                if depth + 1 > DEPTH_MAX:
                    walk.errors.append(f"{rel}/: at most {DEPTH_MAX} levels of folders")
                    empty = False
                    continue
                # A directory holding nothing (hidden files aside) is an empty folder; one
                # holding notes is their folder; one holding only other files (attachments)
                # is not a folder of notes.
                if visit(Path(entry.path), rel, inner, depth + 1):
                    walk.folders.append(inner)
                else:
                    empty = False
                continue
            empty = False
            if not entry.is_file(follow_symlinks=False):
                walk.skipped["special files (not regular files)"] += 1
            elif entry.name.lower().endswith(".md"):
                walk.files.append((Path(entry.path), rel, folder))
                if len(walk.files) > FILES_MAX:
                    raise Invalid(
                        f"{root}: more than {FILES_MAX:,} Markdown files (the last read: {rel})"
                    )
            else:
                walk.skipped["files that are not Markdown (.md)"] += 1
        return empty

    visit(root, "", "", 0)
    walk.skipped = dict(walk.skipped)
    return walk


# --- import -------------------------------------------------------------------------------


@dataclass
class _Known:
    """A note of the store, as an import compares files with it."""

    pk: int
    public_id: str
    revision: int
    title: str
    folder: str
    updated_at: datetime


@dataclass
class _Plan:
    rel: str
    path: Path
    folder: str
    digest: str
    action: str  # "create", "update", "unchanged"
    note: _Known | None


@dataclass
class _Store:
    """What the store holds that a vault's files are compared with, read once."""

    by_id: dict[str, _Known]
    by_place: dict[tuple[str, str], list[_Known]]  # (folder, title), casefolded
    tags: dict[int, list[str]]
    links: dict[int, list[_Explicit]]


def _store() -> _Store:
    paths = folder_paths()
    by_id: dict[str, _Known] = {}
    by_place: dict[tuple[str, str], list[_Known]] = defaultdict(list)
    for pk, public_id, revision, title, folder_id, updated_at in Note.objects.values_list(
        "pk", "public_id", "revision", "title", "folder_id", "updated_at"
    ).order_by("pk"):
        known = _Known(pk, public_id, revision, title, paths.get(folder_id or 0, ""), updated_at)
        by_id[public_id] = known
        by_place[(known.folder.casefold(), _nfc(title).casefold())].append(known)
    return _Store(by_id, by_place, _note_tags(), _explicit())


def _note_tags(pks: list[int] | None = None) -> dict[int, list[str]]:
    """The tags on notes (these, or all), by note."""
    rows = Tagging.objects.filter(target_kind=TagTargetKind.NOTE)
    if pks is not None:
        rows = rows.filter(target_id__in=pks)
    found: dict[int, list[str]] = defaultdict(list)
    for target_id, name in rows.order_by("tag__name").values_list("target_id", "tag__name"):
        found[int(target_id)].append(name)
    return found


class _Explicit(NamedTuple):
    """A link made by hand from a note: its target as a typed reference, kind, context."""

    public_id: str
    target: str
    kind: str
    context: str


def _explicit(pks: list[int] | None = None) -> dict[int, list[_Explicit]]:
    """The links made by hand from notes (these, or all), by note, oldest first."""
    rows = Link.objects.filter(source_kind="note", origin=Link.Origin.EXPLICIT)
    if pks is not None:
        rows = rows.filter(source_id__in=pks)
    found: dict[int, list[_Explicit]] = defaultdict(list)
    for source, public_id, kind_, key, kind, context in rows.order_by("id").values_list(
        "source_id", "public_id", "target_kind", "target_key", "kind", "context"
    ):
        found[source].append(_Explicit(public_id, f"{kind_}:{key}", kind, context))
    return found


def _link_key(link: _Explicit) -> tuple[str, str]:
    return link.target, link.kind


def _same(parsed: _Parsed, note: _Known, store: _Store) -> bool:
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
    if not _same_tags(_wanted_tags(parsed, body, tags), tags):
        return False
    links = {_link_key(link): link.context for link in store.links.get(note.pk, [])}
    wanted = {(spec.target, spec.kind): spec.context for spec in parsed.links}
    # A link without a context in the file keeps the one it has (as `link_add` does).
    return links.keys() == wanted.keys() and all(
        not context or links[key] == context for key, context in wanted.items()
    )


def _plans(
    walk: _Walk, kinds: set[str], *, overwrite: bool, progress: Progress | None
) -> tuple[list[_Plan], list[str]]:
    """Every file read and checked against the store (nothing written): what to do with
    each, and every problem."""
    store = _store()
    errors = list(walk.errors)
    plans: list[_Plan] = []
    claimed: dict[str, str] = {}  # a note (its id, or "new:" folder/title) → the file that is it
    for done, (path, rel, folder) in enumerate(walk.files, 1):
        if progress:
            progress("read", done, len(walk.files))
        try:
            parsed = _parse(path, rel, folder, kinds)
        except (VaultFileError, WireCatError) as exc:
            errors.append(f"{rel}: {exc}")
            continue
        place = f"{parsed.title!r} in {folder!r}" if folder else f"{parsed.title!r} at the top"
        if parsed.id is not None:
            note = store.by_id.get(parsed.id)
            claim, what = parsed.id, f"two files with the id {parsed.id}"
        else:
            found = store.by_place.get((folder.casefold(), _nfc(parsed.title).casefold()), [])
            if len(found) > 1:
                ids = ", ".join(n.public_id for n in found[:3])
                errors.append(
                    f"{rel}: {len(found)} notes are {place}; give the file the `id:` of one ({ids})"
                )
                continue
            note = found[0] if found else None
            claim = (
                note.public_id
                if note
                else f"new:{folder.casefold()}/{_nfc(parsed.title).casefold()}"
            )
            what = f"two files for one note ({place})"
        if claim in claimed:
            errors.append(f"{claimed[claim]} and {rel}: {what}; keep one")
            continue
        claimed[claim] = rel
        action = "create"
        if note is not None:
            action = "unchanged" if _same(parsed, note, store) else "update"
            if (
                action == "update"
                and not overwrite
                and parsed.updated is not None
                and _second(note.updated_at) > parsed.updated
            ):
                errors.append(
                    f"{rel}: note {note.public_id} was changed in WireCat"
                    f" ({_moment(note.updated_at)}) after this file was exported"
                    f" ({_moment(parsed.updated)}); import with --overwrite to take the"
                    " file's text (WireCat's stays in the note's revisions)"
                )
                continue
        plans.append(_Plan(rel, path, folder, parsed.digest, action, note))
    return plans, errors


def _tags_sync(note: Note, wanted: list[str], have: list[str]) -> None:
    target = TagTarget(TagTargetKind.NOTE, note.pk)
    keep = {name.casefold() for name in wanted}
    for name in have:
        if name.casefold() not in keep:
            tag_remove(target=target, name=name)
    for name in wanted:
        tag_add(target=target, name=name)


def _links_sync(note: Note, wanted: list[LinkSpec]) -> None:
    keys = {(spec.target, spec.kind) for spec in wanted}
    for link in _explicit([note.pk]).get(note.pk, []):
        if _link_key(link) not in keys:
            link_remove(public_id=link.public_id)
    for spec in wanted:
        link_add(source=note.ref, target=spec.target, kind=spec.kind, context=spec.context)


class _Abort(Exception):
    """The import stops; the batch it was writing rolls back. The message names the file."""


def _write(plan: _Plan, kinds: set[str], resolver: Resolver, now: datetime) -> Note:
    """One file's note written (in the caller's transaction)."""
    parsed = _parse(plan.path, plan.rel, plan.folder, kinds)
    if parsed.digest != plan.digest:
        raise VaultFileError("changed while it was imported; import again")
    if plan.note is None:
        note = note_create(
            title=parsed.title,
            body=parsed.body,
            folder=parsed.folder,
            aliases=parsed.aliases,
            author=parsed.author,
            links=parsed.links,
            public_id=parsed.id,
            created_at=parsed.created,
            updated_at=parsed.updated or parsed.created,
            resolver=resolver,
        )
        _tags_sync(note, _wanted_tags(parsed, None, []), [])
        return note
    known = plan.note
    stored_body = Note.objects.filter(pk=known.pk).values_list("body", flat=True).first()
    have = _note_tags([known.pk]).get(known.pk, [])
    wanted = _wanted_tags(parsed, stored_body, have)
    # A file exported later than the note's last save keeps its time; an edit made to the
    # file is dated now (the front matter's `updated` is rarely touched by an editor).
    later = parsed.updated is not None and parsed.updated > _second(known.updated_at)
    note = note_update(
        public_id=known.public_id,
        revision=known.revision,
        title=parsed.title,
        body=parsed.body,
        folder=parsed.folder,
        aliases=parsed.aliases,
        updated_at=parsed.updated if later else now,
        resolver=resolver,
    )
    _links_sync(note, parsed.links)
    _tags_sync(note, wanted, have)
    return note


def _apply(
    plans: list[_Plan],
    folders: list[str],
    marker: _Marker | None,
    kinds: set[str],
    progress: Progress | None,
    result: ImportResult,
) -> None:
    """Write what the plans say, BATCH files to a transaction (the store's write lock is
    never held for long: pages and the worker keep writing meanwhile); `result` counts what
    is committed. _Abort names the file that stopped it, its batch rolled back."""
    before = Folder.objects.count()
    with transaction.atomic():
        for name, description in (marker.kinds if marker else {}).items():
            try:
                link_kind_add(name=name, description=description)
            except Invalid as exc:
                raise _Abort(f"{MARKER}: link kind {name[:40]!r}: {exc}") from exc
        for path in folders:
            folder_ensure(path)
    result.folders = Folder.objects.count() - before
    work = [plan for plan in plans if plan.action != "unchanged"]
    result.unchanged = len(plans) - len(work)
    now = timezone.now()
    for start in range(0, len(work), BATCH):
        batch = work[start : start + BATCH]
        # One resolver a batch: it remembers what it did not find, and a note made in an
        # earlier batch is there now.
        resolver = Resolver()
        made: list[str] = []
        with transaction.atomic():
            for done, plan in enumerate(batch, start + 1):
                if progress:
                    progress("write", done, len(work))
                try:
                    note = _write(plan, kinds, resolver, now)
                except (VaultFileError, WireCatError) as exc:
                    raise _Abort(f"{plan.rel}: {exc}") from exc
                if plan.note is None:
                    made.append(note.public_id)
        result.created += len(made)
        result.updated += len(batch) - len(made)
        result.folders = Folder.objects.count() - before


def vault_import(
    src: Path, *, overwrite: bool = False, progress: Progress | None = None
) -> ImportResult:
    """Import the vault at `src` (see the module's docstring): every file checked first, a
    vault with any problem writing nothing (its result lists the problems); then the
    changes, in batches. `overwrite`: a file wins over its note changed in WireCat after
    the file was exported. NotFound or Invalid for a `src` that is not a folder."""
    root = Path(src).expanduser()
    if not root.exists():
        raise NotFound(f"{root}: no such folder")
    root = root.resolve()
    if not root.is_dir():
        raise Invalid(f"{root}: not a folder (give the vault's folder)")
    result = ImportResult()
    try:
        marker = _marker_read(root)
        walk = _walk(root, marker)
    except Invalid as exc:
        result.errors = [str(exc)]
        return result
    result.skipped = walk.skipped
    kinds = set(link_kinds()) | set(marker.kinds if marker else ())
    plans, errors = _plans(walk, kinds, overwrite=overwrite, progress=progress)
    if errors:
        result.errors = errors[:ERRORS_SHOWN]
        if len(errors) > ERRORS_SHOWN:
            result.errors.append(f"… and {len(errors) - ERRORS_SHOWN:,} more problems")
        return result
    try:
        with quiet_changes():
            _apply(plans, walk.folders, marker, kinds, progress, result)
    except _Abort as exc:
        result.errors = [str(exc)]
        result.stopped = True
    return result


# --- export -------------------------------------------------------------------------------


def _render(note: Note, *, title: bool, tags: list[str], links: list[_Explicit]) -> bytes:
    front: dict[str, object] = {"id": note.public_id}
    if title:
        front["title"] = note.title
    if note.aliases:
        front["aliases"] = list(note.aliases)
    if tags:
        front["tags"] = sorted(tags, key=lambda name: (name.casefold(), name))
    front["created"] = _moment(note.created_at)
    front["updated"] = _moment(note.updated_at)
    if note.author != "owner":
        front["author"] = note.author
    if links:
        front["links"] = [
            {"target": link.target, "kind": link.kind}
            | ({"context": link.context} if link.context else {})
            for link in links
        ]
    text = yaml.safe_dump(
        front, sort_keys=False, allow_unicode=True, default_flow_style=False, width=2**31 - 1
    )
    return f"---\n{text}---\n{note.body}".encode()


@dataclass
class _Layout:
    dirs: dict[int, str]  # folder pk → its directory ("" none: the top)
    files: dict[int, tuple[str, bool]]  # note pk → (file, whether the title is in the front matter)
    folder_paths: dict[str, str]  # directory → the folder's path


def _layout() -> _Layout:
    """Where each folder and note goes: names made safe and unique per directory, in an order
    that does not depend on the store (names; a note's creation, then its id)."""
    children: dict[int | None, list[tuple[str, int]]] = defaultdict(list)
    for folder_id, folder_name, parent_id in Folder.objects.values_list("pk", "name", "parent_id"):
        children[parent_id].append((folder_name, folder_id))
    paths = folder_paths()
    taken: dict[str, set[str]] = defaultdict(set)
    dirs: dict[int, str] = {}
    frontier: list[tuple[int | None, str]] = [(None, "")]
    while frontier:
        parent, where = frontier.pop()
        for name, pk in sorted(children.get(parent, []), key=lambda c: (c[0].casefold(), c[0])):
            if pk in dirs:
                continue  # a loop made outside the services
            safe = _unique(safe_name(name), taken[where])
            dirs[pk] = f"{where}/{safe}" if where else safe
            frontier.append((pk, dirs[pk]))
    notes = sorted(
        Note.objects.values_list("pk", "public_id", "title", "folder_id", "created_at"),
        key=lambda n: (_second(n[4]), n[1]),
    )
    files: dict[int, tuple[str, bool]] = {}
    for pk, _public_id, title, folder_id, _created in notes:
        where = dirs.get(folder_id or 0, "")
        stem = _unique(safe_name(title), taken[where], ".md")
        files[pk] = (f"{where}/{stem}.md" if where else f"{stem}.md", stem != title)
    return _Layout(dirs, files, {d: paths.get(pk, "") for pk, d in dirs.items()})


def _on_disk(root: Path, rel: str) -> Path:
    """`root/rel`, refused when a symbolic link stands anywhere on the way."""
    path = root
    for part in PurePosixPath(rel).parts:
        path = path / part
        if path.is_symlink():
            raise Conflict(
                f"{path} is a symbolic link; an export never writes through one (remove it)"
            )
    return path


def _disk_digest(path: Path) -> str | None:
    try:
        return _digest(_read_bytes(path, FILE_BYTES_MAX))
    except VaultFileError:
        return None if not path.exists() else "unreadable"


def _render_pk(pk: int, layout: _Layout) -> bytes:
    note = Note.objects.get(pk=pk)
    return _render(
        note,
        title=layout.files[pk][1],
        tags=_note_tags([pk]).get(pk, []),
        links=_explicit([pk]).get(pk, []),
    )


def _imported(path: Path, rel: str, pk: int) -> bool:
    """Whether importing the file would change nothing of note `pk` (an edit made to an
    exported file and imported since: writing over it loses nothing)."""
    note = Note.objects.select_related("folder").get(pk=pk)
    known = _Known(
        pk, note.public_id, note.revision, note.title, folder_path(note.folder), note.updated_at
    )
    try:
        parsed = _parse(path, rel, known.folder, set(link_kinds()))
    except (VaultFileError, WireCatError):
        return False
    store = _Store({}, {}, _note_tags([pk]), _explicit([pk]))
    return parsed.id in (None, note.public_id) and _same(parsed, known, store)


def vault_export(dest: Path, *, progress: Progress | None = None) -> ExportResult:
    """Write every note and folder into `dest` (see the module's docstring). Invalid for a
    `dest` that is not empty and not an earlier export; Conflict, naming the files, when
    files changed there since the last export would be written over (nothing written)."""
    root = Path(dest).expanduser()
    if root.exists() and not root.is_dir():
        raise Invalid(f"{root}: a file, not a folder; give an empty folder or an earlier export")
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    marker = _marker_read(root)
    if marker is None and any(root.iterdir()):
        raise Invalid(
            f"{root} is not empty and is not a WireCat export (it has no {MARKER});"
            " give an empty folder, or one an earlier `wirecat notes export` wrote"
        )
    old = marker or _Marker()
    layout = _layout()
    planned = {rel: pk for pk, (rel, _) in layout.files.items()}
    problems: list[str] = []
    on_disk: dict[str, str | None] = {}
    for rel in sorted(set(planned) | set(old.files)):
        path = _on_disk(root, rel)
        if path.is_dir():
            problems.append(f"{rel}: a folder where the export writes a file")
            continue
        found = _disk_digest(path)
        on_disk[rel] = found
        if (
            found is None
            or found == old.files.get(rel)
            or (rel in old.files and not old.files[rel])
        ):
            continue  # absent, as written, or being written when an export stopped
        if rel in planned and (
            _digest(_render_pk(planned[rel], layout)) == found
            or _imported(root / rel, rel, planned[rel])
        ):
            continue  # what it says is its note's already (an edit imported since)
        why = "changed since the last export" if rel in old.files else "not written by WireCat"
        problems.append(f"{rel}: {why}")
    for rel in sorted(layout.folder_paths):
        path = _on_disk(root, rel)
        if path.exists() and not path.is_dir():
            problems.append(f"{rel}: a file where the export makes a folder")
    if problems:
        shown = "; ".join(problems[:5])
        if len(problems) > 5:
            shown += f"; and {len(problems) - 5} more"
        raise Conflict(
            f"{root}: nothing exported, it would write over files changed there — {shown}."
            " Import them first (`wirecat notes import`) or move them away."
        )
    # Claim the files first (a new one without a digest: "being written"), so that an
    # export stopped half-way is finished by the next one, not refused by it.
    kinds = dict(LinkKind.objects.filter(builtin=False).values_list("name", "description"))
    claimed = {**old.files, **{rel: old.files.get(rel) for rel in planned}}
    dirs = {**old.dirs, **layout.folder_paths}
    _marker_write(root, _Marker(files=claimed, dirs=dirs, kinds=kinds))
    for rel in sorted(layout.folder_paths):
        (root / rel).mkdir(parents=True, exist_ok=True)
    result = ExportResult(notes=len(planned), folders=len(layout.dirs))
    tags = _note_tags()
    links = _explicit()
    written: dict[str, str | None] = {}
    pks = sorted(layout.files)
    for start in range(0, len(pks), 500):
        for note in Note.objects.filter(pk__in=pks[start : start + 500]).order_by("pk"):
            rel, title = layout.files[note.pk]
            data = _render(
                note, title=title, tags=tags.get(note.pk, []), links=links.get(note.pk, [])
            )
            digest = _digest(data)
            if on_disk.get(rel) == digest:
                result.unchanged += 1
            else:
                path = root / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                _write_atomic(path, data)
                result.written += 1
            written[rel] = digest
            if progress:
                progress("write", len(written), len(pks))
    kept = {rel.casefold() for rel in written}
    for rel in sorted(set(old.files) - set(written)):
        # (on a file system that ignores case, `Ideas.md` just written is `ideas.md`)
        if on_disk.get(rel) is not None and rel.casefold() not in kept:
            (root / rel).unlink(missing_ok=True)
            result.removed += 1
    for rel in sorted(set(old.dirs) - set(layout.folder_paths), key=lambda d: -d.count("/")):
        with contextlib.suppress(OSError):
            (root / rel).rmdir()  # only when empty: what else is there is the owner's
    _marker_write(root, _Marker(files=written, dirs=layout.folder_paths, kinds=kinds))
    return result
