"""Reads of the meetings: the calendar (calendar.py), a meeting's page (meeting.py), a rule
in plain words (rules.py), participants with their people (participants.py), and the
search (meetings/search.py), re-exported here as the capability's public face."""

from meetings.search import MeetingHit, MeetingSearchPage, meeting_search
from meetings.selectors.calendar import VIEWS, CalendarPage, calendar_page, parse_day
from meetings.selectors.meeting import (
    LINES_BEFORE,
    SEGMENT_LIMIT,
    MeetingPage,
    meeting_page,
    meeting_transcript,
    segment_line,
    segment_reference,
    short_when,
    timestamp,
    when_text,
)
from meetings.selectors.participants import ParticipantPerson, meeting_participants
from meetings.selectors.rules import rrule_text

__all__ = [
    "LINES_BEFORE",
    "SEGMENT_LIMIT",
    "VIEWS",
    "CalendarPage",
    "MeetingHit",
    "MeetingPage",
    "MeetingSearchPage",
    "ParticipantPerson",
    "calendar_page",
    "meeting_page",
    "meeting_participants",
    "meeting_search",
    "meeting_transcript",
    "parse_day",
    "rrule_text",
    "segment_line",
    "segment_reference",
    "short_when",
    "timestamp",
    "when_text",
]
