"""An iCalendar file (.ics, an invitation): each event's summary, location and description.
Only connectors know the iCalendar format (an import-linter contract), so the words are
read by archive/connectors/ical/text.py, reached through the connectors' registry."""

from __future__ import annotations

from pathlib import Path

from archive.connectors.registry import calendar_text
from archive.files.domain import Extracted, Limits
from archive.files.readers.base import finish, library

LIBRARY = "icalendar"


def read_ics(path: Path, limits: Limits) -> Extracted:
    return finish(calendar_text(path.read_bytes()), limits=limits, extractor=library(LIBRARY))
