"""Typed references and the `[[links]]` of a note's Markdown: pure text, no store.

A reference names one thing in the archive by kind and key:

    note:note_01J…   message:msg_01J…   chat:12   person:7   meeting:mtg_01J…
    task:HOME-12     attachment:att_01J…   conversation:cnv_01J…   url:https://example.org/x

A `[[link]]` in a body is one of those (`[[meeting:mtg_…]]`), a bare public id
(`[[msg_…]]`, `[[cnv_…]]`), a task key (`[[HOME-12]]`), a URL, or a name
(`[[Alice Walker]]`, a note's title or alias); `[[target|shown text]]` shows other words,
`[[Title#heading]]` links the note. A line starting `kind:: ` (Logseq's property syntax,
e.g. `decision:: [[HOME-12]]`) gives its links that kind. Links inside code (`` `…` ``,
fenced blocks) are text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from wirecat.errors import Invalid

KINDS = (
    "note",
    "message",
    "chat",
    "person",
    "meeting",
    "task",
    "attachment",
    "conversation",
    "url",
)
# Kinds whose key is a public id with this prefix. A conversation's is its first message's
# ULID after `cnv_` (archive.conversations.domain).
PREFIXES = {
    "note": "note_",
    "message": "msg_",
    "meeting": "mtg_",
    "attachment": "att_",
    "conversation": "cnv_",
}
KEY_MAX = 2000
NAME_MAX = 300

_PUBLIC_ID = re.compile(r"^(note|msg|mtg|att|cnv)_[0-9A-HJKMNP-TV-Z]{26}$")
_PK = re.compile(r"^[1-9][0-9]{0,17}$")
_TASK_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9]{0,9})-([1-9][0-9]{0,8})$")
_URL = re.compile(r"^https?://[^\s<>\"'\x00-\x1f]+$", re.IGNORECASE)
_SPACES = re.compile(r"\s+")


def fold(text: str) -> str:
    """A name as links compare it: case and diacritics folded, spaces collapsed."""
    decomposed = unicodedata.normalize("NFKD", str(text))
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return _SPACES.sub(" ", bare.casefold()).strip()[:NAME_MAX]


@dataclass(frozen=True, order=True)
class Ref:
    """A typed reference. `key` is canonical: a public id, a primary key as digits, a task
    key in capitals, a URL."""

    kind: str
    key: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.key}"

    @property
    def pk(self) -> int | None:
        """The primary key of a chat or a person reference."""
        return int(self.key) if self.kind in ("chat", "person") else None


def _key_clean(kind: str, key: str) -> str | None:
    """The canonical key, or None when `key` cannot name a `kind`."""
    key = key.strip()
    if kind in PREFIXES:
        return key if _PUBLIC_ID.match(key) and key.startswith(PREFIXES[kind]) else None
    if kind in ("chat", "person"):
        return key if _PK.match(key) else None
    if kind == "task":
        found = _TASK_KEY.match(key)
        return f"{found.group(1).upper()}-{found.group(2)}" if found else None
    if kind == "url":
        return key if len(key) <= KEY_MAX and _URL.match(key) else None
    return None


def ref_parse(text: str, *, field: str = "ref") -> Ref:
    """`kind:key` as a Ref; Invalid naming the field and what is wrong."""
    text = str(text or "").strip()
    kind, sep, key = text.partition(":")
    if not sep or kind not in KINDS:
        raise Invalid(
            f"{field}: a typed reference such as person:12 or message:msg_…"
            f" (one of {', '.join(k + ':' for k in KINDS)}), not {text[:80]!r}"
        )
    canonical = _key_clean(kind, key)
    if canonical is None:
        raise Invalid(f"{field}: {key.strip()[:80]!r} is not a {kind} key")
    return Ref(kind, canonical)


def ref_guess(written: str) -> Ref | None:
    """What a `[[link]]`'s target names by its form alone: a typed reference, a bare public
    id, a URL, a task key. None for a name (a person's or a note's, resolved by the store)."""
    text = written.strip()
    kind, sep, key = text.partition(":")
    if sep and kind in KINDS:
        canonical = _key_clean(kind, key)
        if canonical is not None:
            return Ref(kind, canonical)
    if _PUBLIC_ID.match(text):
        prefix = text.split("_", 1)[0] + "_"
        return Ref(next(k for k, p in PREFIXES.items() if p == prefix), text)
    if _URL.match(text) and len(text) <= KEY_MAX:
        return Ref("url", text)
    if _TASK_KEY.match(text):
        return Ref("task", _key_clean("task", text) or text)
    return None


@dataclass(frozen=True)
class WikiLink:
    """One `[[…]]` of a body: its target as written (without `|shown` and `#heading`), the
    words it shows, the kind its line gives it (None: the default), the sentence around
    it, and where it stands in the body."""

    target: str
    label: str
    kind: str | None
    context: str
    start: int
    end: int


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_WIKI = re.compile(r"!?\[\[([^\[\]\n]{1," + str(NAME_MAX + 40) + r"})\]\]")
_PROPERTY = re.compile(r"^\s*(?:[-*+]\s+)?([a-z][a-z0-9-]{0,39})::\s")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
CONTEXT_MAX = 500


def _shown(text: str) -> str:
    """A line as a reader sees it: `[[a|b]]` as b, `[[a]]` as a."""

    def shown(found: re.Match[str]) -> str:
        inner = found.group(1)
        target, _, label = inner.partition("|")
        return (label or target.split("#", 1)[0]).strip()

    return _WIKI.sub(shown, text)


def _context(line: str, start: int, end: int) -> str:
    """The sentence of `line` holding [start, end), as read, at most CONTEXT_MAX characters."""
    sentence_start, sentence_end = 0, len(line)
    for boundary in _SENTENCE_END.finditer(line):
        if boundary.end() <= start:
            sentence_start = boundary.end()
        elif boundary.start() >= end:
            sentence_end = boundary.start()
            break
    text = _shown(line[sentence_start:sentence_end])
    text = _PROPERTY.sub("", text, count=1)
    text = _SPACES.sub(" ", text.strip().lstrip("#>-*+ ").strip())
    return text if len(text) <= CONTEXT_MAX else text[: CONTEXT_MAX - 1] + "…"


def prose_lines(body: str) -> Iterator[tuple[int, str]]:
    """(where it starts, the line with its end) of each line of a Markdown body outside code
    blocks, fenced or indented (a list's indented continuation is not code)."""
    offset = 0
    fence: str | None = None
    for line in body.splitlines(keepends=True):
        line_start = offset
        offset += len(line)
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
        yield line_start, line


def code_spans_blanked(line: str) -> str:
    """The line with its `code spans` blanked (links and tags there are text)."""
    return _CODE_SPAN.sub(" ", line)


def wiki_links(body: str, *, kinds: frozenset[str] | set[str] = frozenset()) -> list[WikiLink]:
    """Every `[[link]]` of a Markdown body outside code, in order. A line `kind:: …` whose
    kind is in `kinds` gives its links that kind."""
    found: list[WikiLink] = []
    for line_start, line in prose_lines(body):
        code = [(m.start(), m.end()) for m in _CODE_SPAN.finditer(line)]
        prop = _PROPERTY.match(line)
        line_kind = prop.group(1) if prop and prop.group(1) in kinds else None
        for match in _WIKI.finditer(line):
            if any(a <= match.start() < b for a, b in code):
                continue
            inner = match.group(1)
            target, _, label = inner.partition("|")
            target = target.split("#", 1)[0].strip() if "://" not in target else target.strip()
            if not target:
                continue
            found.append(
                WikiLink(
                    target=target[:KEY_MAX],
                    label=label.strip()[:NAME_MAX],
                    kind=line_kind,
                    context=_context(line.rstrip("\r\n"), match.start(), match.end()),
                    start=line_start + match.start(),
                    end=line_start + match.end(),
                )
            )
    return found
