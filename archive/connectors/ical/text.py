"""The words of an iCalendar file, for the text of an attachment (archive/files/readers/
ics.py, through the registry): each event's summary, location and description, an event to
a paragraph. Read as reader.py reads a calendar (the same decoding, the same lines kept),
without expanding anything."""

from __future__ import annotations

from archive.connectors.ical.reader import _clean_lines, _decode, _parse, _text

_FIELDS = ("SUMMARY", "LOCATION", "DESCRIPTION")


def ics_text(data: bytes) -> str:
    """Each VEVENT's summary, location and description (an event repeated by its overrides
    said once). Raises FormatError when `data` is not iCalendar."""
    lines = _clean_lines(_decode(data), "the file")
    seen: dict[str, None] = {}
    for calendar in _parse(lines.text, "the file"):
        for event in calendar.walk("VEVENT"):
            words = "\n".join(value for name in _FIELDS if (value := _text(event, name)))
            if words:
                seen.setdefault(words, None)
    return "\n\n".join(seen)
