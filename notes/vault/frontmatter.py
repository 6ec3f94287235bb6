"""A note's file as an import reads it: YAML front matter (its bounds, what each key may
hold), then the body, whose `#tags` count as Obsidian's do. VaultFileError says what is
wrong with a file. Times are UTC, to the second, as an export writes them."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path, PurePosixPath

import yaml
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from archive.tags.services import tag_name_clean
from notes.models import CONTEXT_MAX, DEFAULT_KIND
from notes.references import Ref, code_spans_blanked, prose_lines, ref_guess, ref_parse
from notes.services.links import LinkSpec
from notes.services.notes import BODY_MAX, aliases_clean, author_clean, body_clean, title_clean
from notes.vault.disk import VaultFileError, file_digest, read_bytes
from notes.vault.names import nfc
from wirecat.errors import Invalid

FRONT_MATTER_MAX = 64 * 1024  # bytes
# A file's bytes at most: the front matter and a body of BODY_MAX characters of 4 bytes.
FILE_BYTES_MAX = FRONT_MATTER_MAX + 4 * BODY_MAX + 16
TAGS_MAX = 200
LINKS_MAX = 1_000

_WIKI = re.compile(r"\[\[[^\[\]\n]*\]\]")
_TAG = re.compile(r"(?<!\S)#([\w/-]+)")


def moment(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def second(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(microsecond=0)


@dataclass
class Parsed:
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
    for _, text in prose_lines(body):
        line = _WIKI.sub(" ", code_spans_blanked(text.rstrip("\r\n")))
        for match in _TAG.finditer(line):
            name = match.group(1).strip("/")
            if any(ch.isalpha() for ch in name):
                found.append(name)
    return found


def tag_names(names: list[str], *, strict: bool = True) -> list[str]:
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


def parse(path: Path, rel: str, folder: str, kinds: set[str]) -> Parsed:
    """One file read and checked (VaultFileError or a WireCatError says what is wrong)."""
    data = read_bytes(path, FILE_BYTES_MAX)
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
    title = _text(front.get("title"), "title") or nfc(PurePosixPath(rel).stem)
    body = body_clean(body)
    return Parsed(
        rel=rel,
        digest=file_digest(data),
        id=public_id,
        title=title_clean(title),
        folder=folder,
        body=body,
        aliases=aliases_clean(_strings(front.get("aliases"), "aliases")),
        front_tags=tag_names(_strings(front.get("tags"), "tags", split=True)),
        inline_tags=tag_names(inline_tags(body), strict=False),
        links=_links(front.get("links"), kinds),
        created=_when(front.get("created"), "created"),
        updated=_when(front.get("updated"), "updated"),
        author=author_clean(_text(front.get("author"), "author") or "owner"),
    )
