"""The WireCat export's layout, shared by the writer (services.py) and the reader
(reader.py): the format's name and version, its files in the order a re-import reads
them, and how times and the objects' keys are written."""

from __future__ import annotations

from datetime import datetime
from importlib import metadata

from django.utils.dateparse import parse_datetime

FORMAT = "wirecat-export"
VERSION = 1
MANIFEST = "manifest.json"
ATTACHMENTS = "attachments"  # attachments/<sha256>, one file per distinct content

# Every JSON Lines file of an export, in the order a re-import reads them: what a line
# names (an account, a person, a message) is always in an earlier file or earlier line.
FILES = (
    "accounts",
    "chats",
    "identities",
    "messages",
    "people",
    "projects",
    "tasks",
    "folders",
    "link_kinds",
    "notes",
    "calendars",
    "events",
    "transcripts",
    "tags",
    "links",
)


def file_name(kind: str) -> str:
    return f"{kind}.jsonl"


def wirecat_version() -> str:
    try:
        return metadata.version("wirecat")
    except metadata.PackageNotFoundError:  # run from a checkout never installed
        return "unknown"


def time_text(value: datetime | None) -> str | None:
    """A time as the export writes it: ISO 8601 in UTC, or null."""
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def time_parsed(text: object) -> datetime | None:
    """A time the export wrote (ISO 8601 with an offset), or None when `text` is not one."""
    if not isinstance(text, str):
        return None
    found = parse_datetime(text.replace("Z", "+00:00"))
    if found is None or found.tzinfo is None:
        return None
    return found
