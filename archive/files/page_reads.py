"""What the text page reads: an attachment's text as pages (the words a search asked for
marked), and whether OCR can run here. Reads only; the only HTML made here is the marked
text, every piece of it escaped."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString

from archive.files.domain import TextOrigin
from archive.files.models import AttachmentText
from archive.files.selectors import ocr_enabled
from archive.search.selectors import Filter, Group, Node, Term, parse
from archive.store.models import Attachment
from wirecat.errors import Invalid, NotFound

QUERY_MAX = 500  # characters of `?q=` read for marking
WORDS_MAX = 10  # words of it marked at most
# The operators whose value is words of a file's text (the rest say where, not what).
_TEXT_FILTERS = frozenset({"content", "transcript"})


@dataclass(frozen=True)
class TextPageOfFile:
    number: int
    html: SafeString
    marks: int


@dataclass(frozen=True)
class FileText:
    """An attachment's text as its page shows it: None for `row` when it was never read."""

    attachment: Attachment
    row: AttachmentText | None
    pages: list[TextPageOfFile]
    words: list[str]  # what `?q=` asked to mark
    marks: int  # how many times they were marked

    @property
    def made_by(self) -> str:
        row = self.row
        if row is None:
            return ""
        if row.origin == TextOrigin.AGENT:
            agent = row.extractor.removeprefix("agent:") or "an agent"
            return f"{agent}, model {row.model}" if row.model else agent
        return row.extractor


def ocr_available() -> bool:
    """OCR is on (`WIRECAT_OCR=tesseract`) and Debian's tesseract is installed."""
    return ocr_enabled()


def query_words(q: str) -> list[str]:
    """The words of a search (`?q=` from a hit) to mark in a file's text: its plain terms and
    the values of `content:` and `transcript:`; what a query the parser refuses holds, word
    by word."""
    q = " ".join(q.split())[:QUERY_MAX]
    if not q:
        return []
    try:
        tree = parse(q)
    except Invalid:
        words = [w.strip("\"'()") for w in q.split(" ") if ":" not in w and not w.startswith("-")]
    else:
        words = _positive(tree) if tree is not None else []
    unique = list(dict.fromkeys(w.rstrip("*") for w in words if w.strip("*")))
    return unique[:WORDS_MAX]


def _positive(node: Node) -> list[str]:
    if isinstance(node, Group):
        return [] if node.negated else [w for item in node.items for w in _positive(item)]
    if isinstance(node, Filter):
        return [node.value] if node.name in _TEXT_FILTERS and not node.negated else []
    if isinstance(node, Term) and not node.negated:
        return [node.text]
    return []


def _marked(text: str, pattern: re.Pattern[str] | None) -> tuple[SafeString, int]:
    if pattern is None:
        return SafeString(escape(text)), 0
    parts = pattern.split(text)
    # split() with one group: the odd items are the matches.
    html = "".join(
        f"<mark>{escape(part)}</mark>" if n % 2 else str(escape(part))
        for n, part in enumerate(parts)
    )
    return SafeString(html), len(parts) // 2


def file_text(*, public_id: str, q: str = "") -> FileText:
    """The text of attachment `public_id`, split into its pages at form feeds, the words of
    `q` marked. NotFound for an unknown attachment or one whose message was deleted."""
    attachment = (
        Attachment.objects.select_related("message", "message__chat", "text_row")
        .filter(public_id=public_id[:40], message__deleted_at__isnull=True)
        .first()
    )
    if attachment is None:
        raise NotFound(f"attachment {public_id[:40]!r} does not exist")
    row: AttachmentText | None = getattr(attachment, "text_row", None)
    words = query_words(q)
    pattern = (
        re.compile("(" + "|".join(re.escape(w) for w in words) + ")", re.IGNORECASE)
        if words
        else None
    )
    pages: list[TextPageOfFile] = []
    if row is not None and row.text:
        for number, text in enumerate(row.text.split("\f"), start=1):
            html, marks = _marked(text.strip("\n"), pattern)
            pages.append(TextPageOfFile(number=number, html=html, marks=marks))
    return FileText(
        attachment=attachment,
        row=row,
        pages=pages,
        words=words,
        marks=sum(p.marks for p in pages),
    )
