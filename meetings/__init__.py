"""Meetings: calendars, events with their recurrence, meetings (occurrences), their
participants linked to people through identities, and transcripts (issue 17)."""
