"""What a message shows, read from what the store holds: pure functions, no HTML, no queries.

The pages draw a message from these (archive/templatetags/wirecat_messages.py), so the
rules live once and are tested without a page:

- `mail_split`: an e-mail's new text and the quoted history under it ("On … wrote:",
  Outlook's "-----Original Message-----" or "From: … Sent: …" header block, a trailing run
  of "> " lines), so the page can fold the history away.
- `word_diff` and `revision_steps`: what changed between a message's versions, word by
  word, newest change first.
- `stickers`, `embeds`, `mail_header`, `poll`, `forwarded_from`, `media_note`: the parts
  of `provider_metadata` a page shows, read by the shape the connectors write (named in
  their docstrings), never by a provider's name. Provider data is untrusted: every value
  is checked for its type, cut to a length a page can show, and links keep only http(s).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from urllib.parse import urlsplit

# --- provider data, read defensively ----------------------------------------------------

SHORT = 300  # names, titles, subjects
LONG = 2_000  # an embed's description, a field's value


def text_of(value: Any, limit: int = SHORT) -> str:
    """`value` as a stripped string of at most `limit` characters ("" unless a string or
    a number)."""
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, int | float):
        value = str(value)
    if not isinstance(value, str):
        return ""
    value = value.strip()
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"


def web_url(value: Any) -> str:
    """`value` when it is an http(s) URL with a host, else "" (never javascript:, data:…)."""
    text = text_of(value, 2_000)
    if not text or any(c.isspace() or ord(c) < 32 for c in text):
        return ""
    try:
        parts = urlsplit(text)
    except ValueError:
        return ""
    return text if parts.scheme.lower() in ("http", "https") and parts.hostname else ""


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any, limit: int = 50) -> list[Any]:
    return list(value[:limit]) if isinstance(value, list) else []


# --- e-mail -----------------------------------------------------------------------------


@dataclass(frozen=True)
class MailText:
    """An e-mail's text: what the sender wrote, and the quoted history below it."""

    new: str
    quoted: str = ""


_ATTRIBUTION = re.compile(
    r"^\s*(?:"
    r"On\s.{1,400}\swrote:"  # English (Gmail, Apple Mail, Thunderbird)
    r"|Am\s.{1,400}\sschrieb\s.{0,400}:"  # German
    r"|Le\s.{1,400}\sa\sécrit\s?:"  # French
    r"|El\s.{1,400}\sescribió:"  # Spanish
    r"|Op\s.{1,400}\sschreef\s.{0,400}:"  # Dutch
    r"|Il\sgiorno\s.{1,400}\sha\sscritto:"  # Italian
    r"|.{1,200}\s(?:wrote|schrieb|a écrit|escribió|schreef|ha scritto)\s?:"  # "X wrote:"
    r")\s*$",
    re.IGNORECASE,
)
_ORIGINAL = re.compile(
    r"^\s*-{2,}\s*(?:Original Message|Ursprüngliche Nachricht|Message d'origine"
    r"|Mensaje original|Oorspronkelijk bericht|Messaggio originale)\s*-{2,}\s*$",
    re.IGNORECASE,
)
_RULE = re.compile(r"^\s*_{20,}\s*$")  # Outlook's line above its header block
_HEADER = re.compile(
    r"^\s*\**(From|Von|De|Van|Da|Sent|Gesendet|Envoyé|Enviado(?: el)?|Verzonden|Inviato|Date"
    r"|Datum|Data|Fecha|To|An|À|Para|Aan|A|Cc|Subject|Betreff|Objet|Asunto|Onderwerp|Oggetto)"
    r"\s*:\**\s",
    re.IGNORECASE,
)
_FROM = {"from", "von", "de", "van", "da"}
_SENT = {
    "sent", "gesendet", "envoyé", "enviado", "enviado el", "verzonden", "inviato", "date",
    "datum", "data", "fecha",
}  # fmt: skip


def _quote_header(lines: Sequence[str], at: int) -> int:
    """How many lines from `at` make a quote's header (0 when none starts there)."""
    line = lines[at]
    if _ORIGINAL.match(line):
        return 1
    # "On Mon, 1 Jan 2024 at 10:00, Ann Example <\nann@example.com> wrote:" may be
    # folded over up to three lines by the sender's mail program.
    joined = line
    for extra in range(3):
        if extra:
            if at + extra >= len(lines) or not lines[at + extra].strip():
                break
            joined = f"{joined} {lines[at + extra].strip()}"
        if len(joined) <= 600 and _ATTRIBUTION.match(joined):
            return extra + 1
    # Outlook: "From: …" then, within the next few lines, "Sent: …"/"Date: …".
    start = at + 1 if _RULE.match(line) and at + 1 < len(lines) else at
    first = _HEADER.match(lines[start])
    if first and first.group(1).lower() in _FROM:
        for below in lines[start + 1 : start + 5]:
            named = _HEADER.match(below)
            if named and named.group(1).lower() in _SENT:
                return start - at + 1
    return 0


def mail_split(text: str) -> MailText:
    """`text` cut where the quoted history starts: an attribution line ("On … wrote:"),
    an "-----Original Message-----" line, an Outlook "From: … Sent: …" block, or else a
    trailing run of lines starting with ">". Quotes inside the text (a reply written
    between quoted lines) stay where they are. A message that is all quote stays whole."""
    if not text:
        return MailText("")
    lines = text.splitlines()
    for at, line in enumerate(lines):
        if not line.strip():
            continue
        if _quote_header(lines, at):
            new = "\n".join(lines[:at]).rstrip()
            if not new.strip():
                return MailText(text)
            return MailText(new, "\n".join(lines[at:]).strip("\n"))
    # No header: a run of "> " lines (and blank lines) at the end.
    at = len(lines)
    quoted_lines = 0
    while at > 0 and (not lines[at - 1].strip() or lines[at - 1].lstrip().startswith(">")):
        at -= 1
        quoted_lines += bool(lines[at].strip())
    new = "\n".join(lines[:at]).rstrip()
    if not quoted_lines or not new.strip():
        return MailText(text)
    return MailText(new, "\n".join(lines[at:]).strip("\n"))


@dataclass(frozen=True)
class MailPerson:
    name: str
    email: str

    def __str__(self) -> str:
        if self.name and self.email:
            return f"{self.name} <{self.email}>"
        return self.name or self.email


@dataclass(frozen=True)
class MailHeader:
    subject: str
    sender: MailPerson | None
    to: list[MailPerson] = field(default_factory=list)
    cc: list[MailPerson] = field(default_factory=list)


def _person(value: Any) -> MailPerson | None:
    value = _dict(value)
    person = MailPerson(text_of(value.get("name")), text_of(value.get("email")))
    return person if person.name or person.email else None


def _people(value: Any) -> list[MailPerson]:
    return [p for p in (_person(v) for v in _list(value, 100)) if p is not None]


def mail_header(metadata: Any) -> MailHeader | None:
    """Subject, From, To and Cc of an e-mail (None when `metadata` holds no mail header:
    a mail connector writes "subject" and "from" as {"name", "email"})."""
    metadata = _dict(metadata)
    if "subject" not in metadata or not isinstance(metadata.get("from"), Mapping):
        return None
    return MailHeader(
        subject=text_of(metadata.get("subject"), 500),
        sender=_person(metadata.get("from")),
        to=_people(metadata.get("to")),
        cc=_people(metadata.get("cc")),
    )


# --- stickers, embeds, polls --------------------------------------------------------------


@dataclass(frozen=True)
class Sticker:
    emoji: str
    name: str


def stickers(metadata: Any) -> list[Sticker]:
    """A message's stickers: Telegram's `sticker_emoji`, Discord's `stickers` (export)
    or `sticker_items` (bot), each with its emoji or name."""
    metadata = _dict(metadata)
    found: list[Sticker] = []
    emoji = text_of(metadata.get("sticker_emoji"), 16)
    if emoji or metadata.get("media_type") == "sticker":
        found.append(Sticker(emoji, ""))
    sticker = metadata.get("sticker")
    if isinstance(sticker, Mapping):  # a bot's message: {"emoji", "set_name", …}
        found.append(Sticker(text_of(sticker.get("emoji"), 16), text_of(sticker.get("set_name"))))
    for item in _list(metadata.get("stickers"), 5) + _list(metadata.get("sticker_items"), 5):
        item = _dict(item)
        name = text_of(item.get("name"), 80)
        if name:
            found.append(Sticker("", name))
    return found


@dataclass(frozen=True)
class EmbedField:
    name: str
    value: str


@dataclass(frozen=True)
class Embed:
    title: str
    description: str
    url: str
    provider: str
    author: str
    fields: list[EmbedField]
    footer: str

    @property
    def host(self) -> str:
        return (urlsplit(self.url).hostname or "") if self.url else ""


def embeds(metadata: Any) -> list[Embed]:
    """Link previews and bot cards: Discord's `embeds`, Slack's legacy `attachments`
    (fallback, title, title_link, text). Empty ones are left out."""
    metadata = _dict(metadata)
    found: list[Embed] = []
    for raw in _list(metadata.get("embeds"), 10):
        raw = _dict(raw)
        embed = Embed(
            title=text_of(raw.get("title")),
            description=text_of(raw.get("description"), LONG),
            url=web_url(raw.get("url")),
            provider=text_of(_dict(raw.get("provider")).get("name")),
            author=text_of(_dict(raw.get("author")).get("name")),
            fields=[
                EmbedField(text_of(f.get("name")), text_of(f.get("value"), LONG))
                for f in map(_dict, _list(raw.get("fields"), 25))
                if text_of(f.get("name")) or text_of(f.get("value"))
            ],
            footer=text_of(_dict(raw.get("footer")).get("text")),
        )
        if embed.title or embed.description or embed.url or embed.fields or embed.author:
            found.append(embed)
    for raw in _list(metadata.get("attachments"), 10):
        raw = _dict(raw)
        if "title" not in raw and "fallback" not in raw and "text" not in raw:
            continue  # not a Slack card (another connector's attachment list)
        embed = Embed(
            title=text_of(raw.get("title")),
            description=text_of(raw.get("text") or raw.get("fallback"), LONG),
            url=web_url(raw.get("title_link")),
            provider="",
            author="",
            fields=[],
            footer="",
        )
        if embed.title or embed.description:
            found.append(embed)
    return found


@dataclass(frozen=True)
class PollAnswer:
    text: str
    votes: int | None
    chosen: bool


@dataclass(frozen=True)
class Poll:
    question: str
    answers: list[PollAnswer]
    closed: bool


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def poll(metadata: Any) -> Poll | None:
    """A poll (Telegram's `poll`: question, answers with voters; a bot's: options with
    voter_count; Discord's: question.text, answers with poll_media.text)."""
    raw = _dict(_dict(metadata).get("poll"))
    if not raw:
        return None
    question = raw.get("question")
    text = text_of(_dict(question).get("text") if isinstance(question, Mapping) else question)
    answers: list[PollAnswer] = []
    for answer in map(_dict, _list(raw.get("answers") or raw.get("options"), 20)):
        label = text_of(answer.get("text") or _dict(answer.get("poll_media")).get("text"))
        if label:
            votes = _count(answer.get("voters"))
            votes = votes if votes is not None else _count(answer.get("voter_count"))
            answers.append(PollAnswer(label, votes, answer.get("chosen") is True))
    if not text and not answers:
        return None
    return Poll(text, answers, raw.get("closed") is True or raw.get("is_closed") is True)


def forwarded_from(metadata: Any) -> str:
    """Whom a forwarded message came from ("" when it was not forwarded)."""
    metadata = _dict(metadata)
    name = text_of(metadata.get("forwarded_from"))
    if name:
        return name
    origin = _dict(metadata.get("forward_origin"))
    for key in ("sender_user", "sender_chat", "chat"):
        who = _dict(origin.get(key))
        name = " ".join(
            text_of(who.get(part)) for part in ("first_name", "last_name", "title") if who
        ).strip()
        if name:
            return name
    return text_of(origin.get("sender_user_name"))


# --- media and files --------------------------------------------------------------------

MediaKind = Literal["image", "audio", "video", "sticker", "file"]
_AUDIO_NAMES = ("voice_message", "audio_file", "audio", "voice")
_VIDEO_NAMES = ("video_file", "video_message", "animation", "video", "gif")
# Types a browser plays from a <audio>/<video> element without a plugin.
_PLAYABLE = {
    "audio/mpeg",
    "audio/mp3",
    "audio/ogg",
    "audio/opus",
    "audio/wav",
    "audio/x-wav",
    "audio/wave",
    "audio/webm",
    "audio/flac",
    "audio/x-flac",
    "audio/aac",
    "audio/mp4",
    "audio/x-m4a",
    "video/mp4",
    "video/webm",
    "video/ogg",
}


def media_kind(mime_type: str, metadata: Any) -> MediaKind:
    """How a page shows an attachment: a picture, a player, a sticker, or a file chip."""
    metadata = _dict(metadata)
    mime = (mime_type or "").split(";")[0].strip().lower()
    named = text_of(metadata.get("media_type"), 40).lower()
    if named == "sticker":
        return "sticker"
    if mime.startswith("image/") and not mime.startswith("image/svg"):
        return "image"
    if mime in _PLAYABLE:
        return "audio" if mime.startswith("audio/") else "video"
    if named in _AUDIO_NAMES and not mime:
        return "audio"
    if named in _VIDEO_NAMES and not mime:
        return "video"
    if named in ("image", "photo") and not mime:
        return "image"
    return "file"


def file_badge(file_name: str, mime_type: str) -> str:
    """A short type label for a file chip: its extension ("PDF", "ZIP"), else its MIME
    family ("AUDIO"), else "FILE"."""
    base = (file_name or "").replace("\\", "/").rsplit("/", 1)[-1]
    if "." in base.strip("."):
        extension = base.rsplit(".", 1)[1]
        if 0 < len(extension) <= 5 and extension.isalnum():
            return extension.upper()
    family = (mime_type or "").split("/", 1)[0].lower()
    if family in ("image", "audio", "video", "text"):
        return family.upper()
    return "FILE"


def media_note(metadata: Any) -> str:
    """Why an attachment's bytes are not in the archive, in a few words."""
    metadata = _dict(metadata)
    if metadata.get("unsafe_path") or metadata.get("path_refused") or metadata.get("refused"):
        return "refused: its path pointed outside the export"
    if metadata.get("omitted") or metadata.get("not_included"):
        return "not included in the export"
    if metadata.get("missing") or metadata.get("file_missing"):
        return "missing from the export"
    if web_url(metadata.get("url")) or metadata.get("url_private"):
        return "only its link was exported"
    return "the export held only its name"


def duration(metadata: Any) -> str:
    """A duration like "1:05" from `duration_seconds`/`duration` ("" when unknown)."""
    metadata = _dict(metadata)
    seconds = _count(metadata.get("duration_seconds"))
    if seconds is None:
        seconds = _count(metadata.get("duration"))
    if seconds is None or seconds < 0:
        return ""
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02}:{rest % 60:02}" if hours else f"{rest // 60}:{rest % 60:02}"


# --- revisions as a diff --------------------------------------------------------------------

DiffOp = Literal["same", "del", "ins"]
_TOKEN = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)
MAX_DIFF_TOKENS = 4_000  # beyond this, a version is shown replaced whole (difflib is O(n·m))


@dataclass(frozen=True)
class DiffPart:
    op: DiffOp
    text: str


def word_diff(before: str, after: str) -> list[DiffPart]:
    """`before` → `after` word by word: the parts both share ("same"), what was taken out
    ("del") and what was put in ("ins"), in reading order. Whitespace counts as a word, so
    joining the "same" and "del" parts gives `before`, the "same" and "ins" ones `after`."""
    a = _TOKEN.findall(before or "")
    b = _TOKEN.findall(after or "")
    if len(a) > MAX_DIFF_TOKENS or len(b) > MAX_DIFF_TOKENS:
        parts = [DiffPart("del", before or ""), DiffPart("ins", after or "")]
        return [part for part in parts if part.text]
    out: list[DiffPart] = []

    def add(op: DiffOp, tokens: list[str]) -> None:
        text = "".join(tokens)
        if not text:
            return
        if out and out[-1].op == op:
            out[-1] = DiffPart(op, out[-1].text + text)
        else:
            out.append(DiffPart(op, text))

    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            # A lone space between two changes reads better as part of both.
            if (
                out
                and out[-1].op != "same"
                and all(t.isspace() for t in a[i1:i2])
                and (i2 < len(a) or j2 < len(b))
            ):
                add("del", a[i1:i2])
                add("ins", b[j1:j2])
                continue
            add("same", a[i1:i2])
        else:
            add("del", a[i1:i2])
            add("ins", b[j1:j2])
    return _ordered(out)


def _ordered(parts: list[DiffPart]) -> list[DiffPart]:
    """Within each run of changes, what was removed before what was added."""
    out: list[DiffPart] = []
    run: list[DiffPart] = []
    for part in [*parts, DiffPart("same", "")]:
        if part.op != "same":
            run.append(part)
            continue
        for op in ("del", "ins"):
            text = "".join(p.text for p in run if p.op == op)
            if text:
                out.append(DiffPart(op, text))
        run = []
        if part.text:
            out.append(part)
    return out


@dataclass(frozen=True)
class RevisionStep:
    """One edit: the version before it, the one after, and when it was made."""

    parts: list[DiffPart]
    before: str
    after: str
    edited_at: datetime | None  # when the older version stopped being current
    recorded_at: datetime | None  # when the archive noticed (when the time is unknown)
    is_current: bool  # `after` is the message's text now

    @property
    def unchanged(self) -> bool:
        return self.before == self.after


def revision_steps(
    *, revisions: Sequence[Any], current: str, edited_at: datetime | None = None
) -> list[RevisionStep]:
    """Each edit of a message as a word diff, newest first. `revisions` are its earlier
    versions oldest first (objects with `text`, `edited_at`, `recorded_at`); `current`
    is its text now, which the newest revision was edited into (at `edited_at` when the
    revision itself does not say)."""
    versions = [str(r.text or "") for r in revisions] + [current or ""]
    steps: list[RevisionStep] = []
    for index, revision in enumerate(revisions):
        before, after = versions[index], versions[index + 1]
        last = index == len(revisions) - 1
        when = revision.edited_at or (edited_at if last else None)
        steps.append(
            RevisionStep(
                parts=word_diff(before, after),
                before=before,
                after=after,
                edited_at=when,
                recorded_at=revision.recorded_at,
                is_current=last,
            )
        )
    steps.reverse()
    return steps


# --- places and contacts --------------------------------------------------------------------


@dataclass(frozen=True)
class Place:
    latitude: float
    longitude: float
    name: str

    @property
    def map_url(self) -> str:
        return (
            "https://www.openstreetmap.org/"
            f"?mlat={self.latitude:.6f}&mlon={self.longitude:.6f}#map=16/"
            f"{self.latitude:.6f}/{self.longitude:.6f}"
        )


def place(metadata: Any) -> Place | None:
    """A shared location (Telegram's `location_information`, a bot's `location`/`venue`)."""
    metadata = _dict(metadata)
    raw = _dict(metadata.get("location_information") or metadata.get("location"))
    venue = _dict(metadata.get("venue"))
    if not raw and venue:
        raw = _dict(venue.get("location"))
    latitude, longitude = raw.get("latitude"), raw.get("longitude")
    if not isinstance(latitude, int | float) or not isinstance(longitude, int | float):
        return None
    if isinstance(latitude, bool) or isinstance(longitude, bool):
        return None
    lat, lon = float(latitude), float(longitude)
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        return None
    name = text_of(metadata.get("place_name") or venue.get("title"))
    address = text_of(metadata.get("address") or venue.get("address"))
    return Place(lat, lon, ", ".join(part for part in (name, address) if part))


def contact(metadata: Any) -> str:
    """A shared contact as "Name, +phone" ("" when none was shared)."""
    raw = _dict(_dict(metadata).get("contact_information") or _dict(metadata).get("contact"))
    name = " ".join(
        text_of(raw.get(key), 80) for key in ("first_name", "last_name") if text_of(raw.get(key))
    )
    phone = text_of(raw.get("phone_number"), 40)
    return ", ".join(part for part in (name, phone) if part)
