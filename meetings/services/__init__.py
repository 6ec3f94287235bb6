"""Meetings' use cases: the only writers of the meetings tables.

- `calendar_store` (calendars.py): a calendar read (a file, a feed, an invitation in mail)
  upserted into calendars, events, meetings and participants, idempotently, by SEQUENCE;
- participants.py: participants written set-wise, linked to archive identities by e-mail;
- `transcript_store` (transcripts.py): a transcript attached to its meeting (given, found
  by overlap, or a meeting of its own), its segments' speakers matched to participants;
- `meeting_link` / `meeting_unlink` (links.py): a meeting's links to chats, messages,
  tasks and people.
"""

from meetings.services.calendars import CalendarStored, calendar_store
from meetings.services.forget import events_forget
from meetings.services.links import meeting_link, meeting_unlink
from meetings.services.transcripts import TRANSCRIPTS_KEY, transcript_store

__all__ = [
    "TRANSCRIPTS_KEY",
    "CalendarStored",
    "calendar_store",
    "events_forget",
    "meeting_link",
    "meeting_unlink",
    "transcript_store",
]
