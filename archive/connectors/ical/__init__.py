"""The iCalendar reader: an .ics file's bytes in, `meetings.domain.CalendarRead` out.

A pure reader (no models, no database): `looks_like_calendar` tells an .ics from its first
bytes, `read_calendar` parses it with `icalendar` and expands each series with
`recurring-ical-events` for a bounded window (reader.py says how a broken event is kept).
"""

from __future__ import annotations

from archive.connectors.ical.reader import looks_like_calendar, read_calendar

__all__ = ["looks_like_calendar", "read_calendar"]
