"""`invitation_store`: a calendar read that came with a message (an invitation: METHOD
REQUEST, CANCEL or REPLY) written like any calendar read, and the message linked to every
meeting it touched.

It knows nothing of how the message arrived: the caller (meetings' jobs) read the file
and names the calendar's source (`key`) and the message's primary key. The calendar is
of kind "mail"; a CANCEL or a REPLY acts on the event of that UID wherever it came from
(`calendar_store`), and the message is linked to those meetings too. Idempotent: the
same invitation again writes nothing and links nothing new."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction

from meetings.domain import CalendarRead
from meetings.models import Calendar, Event, Meeting, MeetingLink
from meetings.services.calendars import CalendarStored, calendar_store
from meetings.services.links import meeting_link

# A series' invitation links the message to this many of its meetings at most: the first
# ones from a day before the message was sent (else the last ones), not five years of them.
LINKS_MAX = 50
_BEFORE_SENT = timedelta(days=1)


@dataclass(frozen=True)
class InvitationStored:
    """What one `invitation_store` did: the calendar's counts and the meetings linked."""

    stored: CalendarStored
    meetings: tuple[Meeting, ...] = ()
    links_added: int = 0


def _touched(calendar: Calendar, read: CalendarRead, sent_at: datetime | None) -> list[Meeting]:
    """The meetings the read names: of its events' UIDs (in this calendar for a REQUEST or
    a PUBLISH; anywhere for an answer or a withdrawal), the named occurrences of a series
    when the read names occurrences only."""
    method = (read.method or "").strip().upper()
    found: dict[int, Meeting] = {}
    for record in read.events:
        events = Event.objects.filter(uid=record.uid)
        if method not in ("CANCEL", "REPLY"):
            events = events.filter(calendar=calendar)
        for event in events:
            meetings = Meeting.objects.filter(event=event)
            named = [occ.recurrence_id for occ in record.occurrences]
            if event.rrule and not record.rrule and named:
                meetings = meetings.filter(recurrence_id__in=named)
            chosen = list(meetings.order_by("start", "id")[: LINKS_MAX + 1])
            if len(chosen) > LINKS_MAX and sent_at is not None:
                since = sent_at - _BEFORE_SENT
                chosen = list(meetings.filter(start__gte=since).order_by("start", "id")[:LINKS_MAX])
                if not chosen:
                    chosen = list(meetings.order_by("-start", "-id")[:LINKS_MAX])
            for meeting in chosen[:LINKS_MAX]:
                found.setdefault(meeting.pk, meeting)
    return sorted(found.values(), key=lambda m: (m.start, m.pk))


def invitation_store(
    *,
    key: str,
    read: CalendarRead,
    message_id: int,
    sent_at: datetime | None = None,
    name: str = "",
) -> InvitationStored:
    """Write `read` into the mail calendar `key` (`calendar_store`: created, updated by
    SEQUENCE, cancelled, or the responses of a REPLY set) and link message `message_id` to
    each meeting it touched (by "system"). One transaction. `sent_at` (when the message was
    sent) picks which meetings of a long series are linked; `name` names the calendar.
    Raises Invalid (a bad key) and NotFound (the message is gone)."""
    with transaction.atomic():
        stored = calendar_store(kind=Calendar.Kind.MAIL, key=key, read=read, name=name)
        meetings = _touched(stored.calendar, read, sent_at)
        before = MeetingLink.objects.filter(
            kind=MeetingLink.Kind.MESSAGE, target_id=message_id, meeting__in=meetings
        ).count()
        for meeting in meetings:
            meeting_link(
                meeting=meeting, kind=MeetingLink.Kind.MESSAGE, target_id=message_id, actor="system"
            )
    return InvitationStored(
        stored=stored, meetings=tuple(meetings), links_added=len(meetings) - before
    )
