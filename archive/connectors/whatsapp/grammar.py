"""The grammar of a WhatsApp chat text: the line that starts a message, in every layout and
locale read, the author or system line it holds, the phrases of media, deletions and edits,
and the dates with their day/month order.

What the file looks like
    Android  `12/31/21, 9:05 PM - Name: text`, `31.12.21, 21:05 - Name: text`,
             `2021-12-31 21:05 - Name: text`
    iOS      `[12/31/21, 9:05:01 PM] Name: text`, `[31.12.21, 21:05:01] Name: text`,
             `[31-12-21 21:05:01] Name: text`, `[01/20/19 11:25] Name: text`
Dates are D/M/Y or M/D/Y (two- or four-digit years, separated by `/`, `.` or `-`) or Y-M-D;
AM/PM is written `AM`, `am`, `a. m.`, `p.m.`, …, after a space, a narrow or non-breaking
space, nothing, or `_` (a mangled narrow space seen in a real export). Direction marks
(U+200E, U+200F and the other bidi controls) can stand anywhere and are removed; a UTF-8
BOM, CRLF line ends and lines without a timestamp (the rest of a multi-line message) are
read. Not read: layouts whose AM/PM word is not Latin (午後, 오후, م) or that put it before
the time, and two-digit-year-first dates (`21-12-31`, read as 21 December 2031).

Day/month order is inferred from the whole file in a first pass over its dates (`Survey`):
a first field above 12 votes day-first, a second field above 12 votes month-first. When
nothing votes, the default is month-first when every date uses `/` and the clock is 12-hour
(the US layout), else day-first (the layout of most other locales). Votes both ways (a file
pieced together from two phones) make each unambiguous date decide for itself and the
majority the rest.

System lines (no `Name:`, or a `Name:` that is really a sentence such as `X changed the
subject from "a: b"`, or iOS's `<chat name>: \u200e<system text>`) have no author. Their
phrases are recognised in English only (a German system line is still a system line, but
does not mark the chat a group).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, datetime

_MARKS = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff"
_MARK_RE = re.compile(f"[{_MARKS}]")
_M = f"[{_MARKS}]*"  # marks tolerated between the parts of a timestamp

_HEADER = re.compile(
    rf"^{_M}\s*(?P<open>\[)?{_M}\s*"
    r"(?P<a>\d{1,4})(?P<sep>[./-])(?P<b>\d{1,2})(?P=sep)(?P<c>\d{2,4})"
    rf"{_M}(?:,\s*|\s+){_M}"
    r"(?P<hour>\d{1,2})[:.](?P<minute>\d{2})(?:[:.](?P<second>\d{2}))?"
    rf"(?:[\s_]*{_M}(?P<ampm>[aApP]\.?\s?[mM]\.?))?{_M}"
    r"(?(open)\s*\]\s?|\s*[-\u2013](?:\s|$))"
)

_QUOTES = set('"“”«»„')
# Words in the part before a colon that make a line a system line, not "Name: text".
_SYSTEM_IN_AUTHOR = re.compile(
    r"\b(?:changed (?:the|this|their|his|her|your)|created|added|removed|joined using|deleted"
    r"|pinned|turned (?:on|off)|reset this group)\b",
    re.IGNORECASE,
)
# iOS writes system lines as "<chat name>: \u200e<text>"; these phrases tell them apart
# from the other marked lines (attachments, omitted media, deletions).
_SYSTEM_TEXT = re.compile(
    r"end-to-end encrypted|created group|\badded\b|\bremoved\b|\bleft$|joined using"
    r"|changed the subject|changed this group|changed the group|changed their phone number"
    r"|security code|disappearing messages|now an admin|no longer an admin"
    r"|deleted this group|business account",
    re.IGNORECASE,
)
_GROUP_TEXT = re.compile(
    r"\bgroup\b|\badded\b|\bremoved\b|\bleft\b|\bjoined\b|\badmin\b|\bsubject\b",
    re.IGNORECASE,
)
_NOTICE = re.compile(r"end-to-end|Ende-zu-Ende|extremo a extremo|ponta a ponta|bout en bout")

EDITED = re.compile(r"\s*<This message was edited>\s*$", re.IGNORECASE)
DELETED = re.compile(
    r"^(?:This message was deleted|You deleted this message|Diese Nachricht wurde gelöscht"
    r"|Du hast diese Nachricht gelöscht|Se eliminó este mensaje|Eliminaste este mensaje)\.?$",
    re.IGNORECASE,
)
MEDIA_OMITTED = re.compile(
    r"^<(?:media omitted|medien ausgeschlossen|multimedia omitido|mídia oculta|médias omis"
    r"|media weggelaten|media omessi)>$",
    re.IGNORECASE,
)
IOS_OMITTED = re.compile(
    r"^(?P<before>.*?)\s*(?P<kind>image|video|audio|sticker|GIF|document|Contact card)"
    r" omitted$",
    re.IGNORECASE,
)
ATTACHED = re.compile(
    r"^<(?:attached|anhang|adjunto|anexo|pièce jointe|allegato):\s*(?P<name>[^<>]+?)\s*>"
    r"\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
FILE_ATTACHED = re.compile(
    r"^(?P<name>\S.*?)\s+\((?:file attached|datei angehängt|archivo adjunto"
    r"|arquivo anexado|fichier joint|file allegato|bestand bijgevoegd)\)\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_PHONE = re.compile(r"^\+?\d[\d\s\-().]{4,}\d$")


def strip_marks(text: str) -> str:
    return _MARK_RE.sub("", text)


def clean_name(text: str) -> str:
    return unicodedata.normalize("NFC", " ".join(strip_marks(text).split()))


def identity_key(name: str) -> tuple[str, str]:
    """(external id, phone) of an author as written: phone numbers without spaces."""
    if _PHONE.match(name) and sum(ch.isdigit() for ch in name) >= 6:
        phone = re.sub(r"[\s\-().]", "", name)
        return phone, phone
    return name, ""


# ---------------------------------------------------------------------------------------
# One line


@dataclass(frozen=True)
class Head:
    """A line that starts a message: its timestamp fields, author and first line of text."""

    a: int  # year for Y-M-D dates, else the day or month
    b: int  # month for Y-M-D dates, else the month or day
    c: int  # day for Y-M-D dates, else the year
    iso: bool
    sep: str
    twelve_hour: bool
    hour: int
    minute: int
    second: int
    author: str | None  # None: a system line
    text: str
    marked: bool  # the text began with U+200E (iOS marks attachments and system lines)

    @property
    def service(self) -> bool:
        return self.author is None or (
            self.marked
            and _SYSTEM_TEXT.search(self.text) is not None
            and not _media_line(self.text)
        )


def _media_line(text: str) -> bool:
    """An attachment, omitted-media or deletion line (iOS marks those as it marks system lines)."""
    first = text.strip()
    return bool(
        ATTACHED.match(first)
        or FILE_ATTACHED.match(first)
        or MEDIA_OMITTED.match(first)
        or IOS_OMITTED.match(first.strip("<>"))
        or DELETED.match(first)
    )


def _plausible_author(name: str) -> bool:
    return (
        0 < len(name) <= 100
        and not _QUOTES.intersection(name)
        and _SYSTEM_IN_AUTHOR.search(name) is None
    )


def parse_line(line: str) -> Head | None:
    """The message a line starts, or None for a continuation line."""
    match = _HEADER.match(line)
    if match is None:
        return None
    a, b, c = int(match["a"]), int(match["b"]), int(match["c"])
    iso = len(match["a"]) == 4
    if iso:
        if not (1 <= b <= 12 and 1 <= c <= 31):
            return None
    elif (
        len(match["a"]) > 2
        or len(match["c"]) == 3
        or not (1 <= a <= 31 and 1 <= b <= 31 and min(a, b) <= 12)
    ):
        return None
    hour, minute = int(match["hour"]), int(match["minute"])
    second = int(match["second"] or 0)
    ampm = match["ampm"]
    if ampm:
        if hour > 12:
            return None
        hour = hour % 12 + (12 if ampm[0] in "pP" else 0)
    if hour > 23 or minute > 59 or second > 59:
        return None

    body = line[match.end() :]
    author: str | None = None
    text = body
    colon = body.find(":")
    if colon > 0:
        candidate = clean_name(body[:colon])
        if _plausible_author(candidate):
            author = candidate
            text = body[colon + 1 :]
            text = text.removeprefix(" ")
    marked = text.lstrip(" ").startswith("\u200e")
    text = strip_marks(text)
    if author is None:
        text = text.strip()
    return Head(
        a=a,
        b=b,
        c=c,
        iso=iso,
        sep=match["sep"],
        twelve_hour=bool(ampm),
        hour=hour,
        minute=minute,
        second=second,
        author=author,
        text=text,
        marked=marked,
    )


def looks_like_chat(head: bytes) -> bool:
    text = head.decode("utf-8", errors="replace").removeprefix("\ufeff")
    for line in text.split("\n"):
        if strip_marks(line).strip():
            return parse_line(line.rstrip("\r")) is not None
    return False


# ---------------------------------------------------------------------------------------
# The first pass: what only the whole file tells


@dataclass
class Survey:
    messages: int = 0
    day_first_votes: int = 0
    month_first_votes: int = 0
    slashes_only: bool = True
    twelve_hour: bool = False
    authors: dict[str, str] = field(default_factory=dict)  # identity id -> name as written
    group_lines: bool = False
    notice_author: str | None = None

    def add(self, head: Head) -> None:
        self.messages += 1
        if not head.iso:
            self.day_first_votes += head.a > 12
            self.month_first_votes += head.b > 12
            self.slashes_only = self.slashes_only and head.sep == "/"
        self.twelve_hour = self.twelve_hour or head.twelve_hour
        if head.service:
            self.group_lines = self.group_lines or _GROUP_TEXT.search(head.text) is not None
            if self.notice_author is None and head.author and _NOTICE.search(head.text):
                self.notice_author = head.author
        elif head.author is not None:
            self.authors.setdefault(identity_key(head.author)[0], head.author)

    @property
    def day_first(self) -> bool:
        if self.day_first_votes or self.month_first_votes:
            return self.day_first_votes >= self.month_first_votes
        return not (self.slashes_only and self.twelve_hour)

    @property
    def guessed(self) -> bool:
        return not (self.day_first_votes or self.month_first_votes)

    @property
    def conflict(self) -> bool:
        return bool(self.day_first_votes and self.month_first_votes)


def timestamp(head: Head, day_first: bool) -> datetime:
    """The line's time, as UTC. `day_first` (the file's order) decides only dates whose
    day and month are both 12 or less, and those are valid in either order: so a first
    pass with any order finds every impossible date. Raises ValueError."""
    if head.iso:
        year, month, day = head.a, head.b, head.c
    else:
        year = head.c + 2000 if head.c < 100 else head.c
        if head.a > 12:
            day_first = True
        elif head.b > 12:
            day_first = False
        day, month = (head.a, head.b) if day_first else (head.b, head.a)
    return datetime(year, month, day, head.hour, head.minute, head.second, tzinfo=UTC)
