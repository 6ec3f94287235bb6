"""Every export reader WireCat has, named in one table and imported when needed."""

from __future__ import annotations

import dataclasses
import importlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from django.conf import settings

from archive.connectors.base import ExportReader
from meetings.domain import CalendarRead, TranscriptRead
from wirecat.errors import Invalid

# Every export format WireCat reads: name -> (what the owner calls it, the module whose
# READER reads it). A module is imported only when its reader is needed, so an import's
# process never loads a live connector's library (Telethon: 41 MB).
EXPORT_FORMATS: dict[str, tuple[str, str]] = {
    "discord": ("DiscordChatExporter JSON export", "archive.connectors.discord.export"),
    "imessage": (
        "Apple Messages chat.db (macOS or iOS backup sms.db)",
        "archive.connectors.imessage.export",
    ),
    "mail": ("Mail (mbox, Maildir, .eml)", "archive.connectors.mail.export"),
    "slack": ("Slack workspace export (folder or zip)", "archive.connectors.slack.export"),
    "telegram": (
        "Telegram Desktop export (result.json or its folder)",
        "archive.connectors.telegram.export",
    ),
    "whatsapp": ("WhatsApp chat export (.txt or .zip)", "archive.connectors.whatsapp.export"),
}

# How each provider's stored message text marks its formatting, for the pages that draw it
# (archive/web/formatting.py knows each kind by this name; only this table knows providers).
TEXT_MARKUP: dict[str, str] = {
    "discord": "markdown",
    "slack": "mrkdwn",
    "telegram": "entities",
    "whatsapp": "mrkdwn",
}


def text_markup(provider: str) -> str:
    """The markup of `provider`'s message text ("plain" when it marks none)."""
    return TEXT_MARKUP.get(provider, "plain")


# The providers whose messages are mail: search all lists them as a kind of their own
# ("mail"), apart from the messengers' messages (only this table knows providers).
MAIL_PROVIDERS: frozenset[str] = frozenset({"mail"})


def reader(name: str) -> ExportReader:
    """The reader of format `name` (its module imported now)."""
    _label, module = EXPORT_FORMATS[name]
    found: ExportReader = importlib.import_module(module).READER
    return found


def readers() -> list[ExportReader]:
    return [reader(name) for name in EXPORT_FORMATS]


def formats() -> dict[str, str]:
    """Format name → what the owner calls it: the message exports, then the meeting files."""
    found = {name: label for name, (label, _module) in EXPORT_FORMATS.items()}
    found.update({name: label for name, (label, _kind) in MEETING_FORMATS.items()})
    return found


def accepted() -> str:
    return "; ".join(f"{name} ({label})" for name, label in formats().items())


def reader_for(path: Path, format_name: str | None = None) -> ExportReader:
    """The reader named by `format_name`, or the one whose format `path`'s content is."""
    if not path.exists():
        raise Invalid(f"{path}: no such file or folder")
    if format_name:
        if format_name in EXPORT_FORMATS:
            return reader(format_name)
        if format_name in MEETING_FORMATS:
            raise Invalid(f"{format_name} is a meeting file, not a message export")
        raise Invalid(f"unknown format {format_name!r}; accepted: {', '.join(formats())}")
    for candidate in readers():
        if candidate.detect(path):
            return candidate
    raise Invalid(f"{path.name}: not an export WireCat can read. Accepted: {accepted()}")


# --- meeting files ----------------------------------------------------------------------------

# Calendars and transcripts: name -> (what the owner calls it, what it holds). They are not
# message exports: their reads (meetings.domain records) are written by meetings' services,
# not the message sink. Detected from the content after the message exports (whose
# detectors refuse them), so a WhatsApp .txt stays WhatsApp and a Zoom chat .txt, whose
# every line starts with a time alone, is a transcript (each detector refuses the other).
MEETING_FORMATS: dict[str, tuple[str, str]] = {
    "ical": ("iCalendar file (.ics)", "calendar"),
    "vtt": ("WebVTT transcript (.vtt)", "transcript"),
    "srt": ("SubRip transcript (.srt)", "transcript"),
    "zoom_chat": ("Zoom in-meeting chat (.txt)", "transcript"),
}
_MEETING_HEAD = 8192  # what detection reads of a file
# Zoom names a cloud recording's files after the moment it began, in UTC:
# GMT20240105-150012_Recording.transcript.vtt
_ZOOM_STARTED = re.compile(r"GMT(\d{8})-(\d{6})")


@dataclass(frozen=True)
class MeetingReader:
    """Reads one meeting file: `read(path, source=…)` gives its CalendarRead (kind
    "calendar") or TranscriptRead (kind "transcript"); raises FormatError when it is not
    one after all."""

    format: str
    label: str
    kind: str

    def read(self, path: Path, *, source: str) -> CalendarRead | TranscriptRead:
        if self.kind == "calendar":
            return _calendar_read(path, source)
        from archive.connectors.transcripts import read_transcript_file

        read = read_transcript_file(path, source=source)
        if read.started_at is None:
            read = dataclasses.replace(read, started_at=recording_start(source))
        return read


def recording_start(name: str) -> datetime | None:
    """When a recording began, from its file's name when the name says it (Zoom's cloud
    recordings: `GMT20240105-150012_…`), else None."""
    found = _ZOOM_STARTED.search(name)
    if found is None:
        return None
    try:
        return datetime.strptime("".join(found.groups()), "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None


def _calendar_read(path: Path, source: str) -> CalendarRead:
    with path.open("rb") as handle:
        return calendar_from_stream(handle, source=source)


def meeting_format_of(path: Path) -> str | None:
    """The meeting format `path`'s content is ("ical", "vtt", "srt", "zoom_chat"), or None
    (a folder, an unreadable file, anything else)."""
    if not path.is_file():
        return None
    try:
        with path.open("rb") as handle:
            head = handle.read(_MEETING_HEAD)
    except OSError:
        return None
    from archive.connectors.ical import looks_like_calendar
    from archive.connectors.transcripts import transcript_kind

    if looks_like_calendar(head):
        return "ical"
    return transcript_kind(head, path.name)


def meeting_reader_for(path: Path, format_name: str | None = None) -> MeetingReader | None:
    """The reader of the meeting file at `path` (of `format_name` when given, else the
    one its content is), or None when it is no meeting file (or a message format is named)."""
    name = format_name if format_name in MEETING_FORMATS else None
    if format_name and name is None:
        return None
    name = name or meeting_format_of(path)
    if name is None:
        return None
    label, kind = MEETING_FORMATS[name]
    return MeetingReader(format=name, label=label, kind=kind)


def import_reader_for(path: Path, format_name: str | None = None) -> ExportReader | MeetingReader:
    """What reads `path` for an import: the reader named by `format_name`, else the first
    whose format `path`'s content is — the message exports first, then the meeting files.
    Invalid, naming every accepted format, when none is."""
    if format_name in MEETING_FORMATS:
        if not path.is_file():
            raise Invalid(f"{path}: no such file (a {format_name} file is one file)")
        found = meeting_reader_for(path, format_name)
        assert found is not None
        return found
    try:
        return reader_for(path, format_name)
    except Invalid:
        meeting = None if format_name else meeting_reader_for(path)
        if meeting is None:
            raise
        return meeting


def calendar_from_stream(
    stream: BinaryIO, *, source: str, window: tuple[datetime, datetime] | None = None
) -> CalendarRead:
    """The iCalendar file `stream` holds (an invitation stored with a mail), read like a
    calendar file (to one byte past the size cap), its occurrences expanded inside `window`
    (UTC-aware; default the settings' window around now). Raises FormatError."""
    from archive.connectors.ical import read_calendar
    from archive.connectors.ical.reader import DEFAULT_MAX_BYTES

    most = getattr(settings, "MEETINGS_MAX_ICS_BYTES", DEFAULT_MAX_BYTES)
    data = stream.read((most if isinstance(most, int) else DEFAULT_MAX_BYTES) + 1)
    return read_calendar(data, source=source, window=window)


def calendar_text(data: bytes) -> str:
    """The words of the iCalendar file `data` (an attachment's text): each event's summary,
    location and description. Raises FormatError when it is not iCalendar."""
    from archive.connectors.ical.text import ics_text

    return ics_text(data)
