"""`calendar_store`: what a calendar read holds (a file, a CalDAV collection, an
invitation in mail), written into calendars, events, meetings and participants.

Idempotent: the same read again writes nothing. SEQUENCE decides between versions of an
event: a read whose SEQUENCE (its event's or any occurrence's, the highest) is lower than
the stored one is an older version arriving late and is ignored; an equal or higher one
is written where it differs. Meetings are never deleted (one may carry a transcript,
links, tasks): an occurrence no longer read, inside the window the read covered, is
marked cancelled. METHOD:CANCEL cancels the named occurrences (or the event);
METHOD:REPLY sets only the replying attendees' responses."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from meetings.domain import CalendarRead, EventRecord, OccurrenceRecord, ParticipantRecord
from meetings.models import Calendar, Event, Meeting, Participant, Status
from meetings.services.common import BATCH, chunks
from meetings.services.participants import (
    Wanted,
    email_clean,
    identities_for,
    participants_write,
    wanted_participants,
)
from wirecat.errors import Invalid

EVENT_BATCH = 200  # events whose occurrences and participants are written together
KEY_MAX = 500
STATUSES = {Status.CONFIRMED, Status.TENTATIVE, Status.CANCELLED}

EVENT_FIELDS = (
    "title",
    "description",
    "location",
    "join_url",
    "time_zone",
    "sequence",
    "status",
    "rrule",
    "organizer_name",
    "organizer_email",
)
MEETING_FIELDS = (
    "recurrence_id",
    "start",
    "end",
    "all_day",
    "time_zone",
    "status",
    "moved",
    "title",
    "description",
    "location",
    "join_url",
)


@dataclass
class CalendarStored:
    """What one `calendar_store` did."""

    calendar: Calendar
    events_added: int = 0
    events_updated: int = 0
    events_unchanged: int = 0
    events_ignored: int = 0  # an older SEQUENCE than the stored one, or unknown (CANCEL, REPLY)
    meetings_added: int = 0
    meetings_updated: int = 0
    meetings_cancelled: int = 0
    responses_updated: int = 0  # METHOD:REPLY
    problems: tuple[str, ...] = ()


def _cut(value: str, limit: int) -> str:
    return str(value or "")[:limit]


def _status(value: str) -> str:
    value = str(value or "").lower()
    return value if value in STATUSES else Status.CONFIRMED


def _sequence(record: EventRecord) -> int:
    """The version of what the record says: the highest SEQUENCE of the event and its
    occurrences (an override is re-sent with its own, higher SEQUENCE)."""
    return max([record.sequence, *(occ.sequence for occ in record.occurrences)])


def calendar_store(*, kind: str, key: str, read: CalendarRead, name: str = "") -> CalendarStored:
    """Write `read` into the calendar (`kind`, `key`), created if new. One transaction;
    events in bounded batches, set-wise (a query count that does not grow with the number
    of occurrences or attendees beyond one statement per BATCH rows)."""
    if kind not in Calendar.Kind.values:
        raise Invalid(f"calendar kind: one of {', '.join(Calendar.Kind.values)}, not {kind!r}")
    key = str(key or "").strip()
    if not key:
        raise Invalid("A calendar needs a source (a file's name or a collection's address).")
    if len(key) > KEY_MAX:
        raise Invalid(f"A calendar's source is at most {KEY_MAX} characters.")
    method = (read.method or "").strip().upper()
    with transaction.atomic():
        calendar = _calendar_upsert(kind, key, name or read.name, read.time_zone)
        stored = CalendarStored(calendar=calendar, problems=tuple(read.problems))
        if method == "REPLY":
            _replies_store(read, stored)
        elif method == "CANCEL":
            _cancels_store(read, stored)
        else:
            records = _latest(read.events)
            for group in chunks(records, EVENT_BATCH):
                _events_store(calendar, group, read, stored, partial_ok=method == "REQUEST")
    return stored


def _calendar_upsert(kind: str, key: str, name: str, time_zone: str) -> Calendar:
    calendar, created = Calendar.objects.get_or_create(
        kind=kind, key=key, defaults={"name": _cut(name, 300), "time_zone": _cut(time_zone, 64)}
    )
    if created:
        return calendar
    changed = []
    if name and calendar.name != _cut(name, 300):
        calendar.name = _cut(name, 300)
        changed.append("name")
    if time_zone and calendar.time_zone != _cut(time_zone, 64):
        calendar.time_zone = _cut(time_zone, 64)
        changed.append("time_zone")
    if changed:
        calendar.save(update_fields=[*changed, "updated_at"])
    return calendar


def _latest(records: Sequence[EventRecord]) -> list[EventRecord]:
    """Each UID once: the highest version (the later one on a tie)."""
    out: dict[str, EventRecord] = {}
    for record in records:
        if not record.uid:
            continue
        held = out.get(record.uid)
        if held is None or _sequence(record) >= _sequence(held):
            out[record.uid] = record
    return list(out.values())


def _event_values(record: EventRecord) -> dict[str, Any]:
    organizer = record.organizer
    return {
        "title": _cut(record.title, 1000),
        "description": record.description or "",
        "location": _cut(record.location, 1000),
        "join_url": _cut(record.join_url, 2000),
        "time_zone": _cut(record.time_zone, 64),
        "sequence": _sequence(record),
        "status": _status(record.status),
        "rrule": _cut(record.rrule, 1000),
        "organizer_name": _cut(organizer.name, 300) if organizer else "",
        "organizer_email": _cut(organizer.email.lower(), 320) if organizer else "",
    }


def _meeting_values(event: Event, occ: OccurrenceRecord, calendar_tz: str) -> dict[str, Any]:
    """An occurrence's own values where it has them, else its event's."""
    end = occ.end if occ.end >= occ.start else occ.start
    return {
        "recurrence_id": occ.recurrence_id,
        "start": occ.start,
        "end": end,
        "all_day": occ.all_day,
        "time_zone": event.time_zone or _cut(calendar_tz, 64),
        "status": Status.CANCELLED if event.status == Status.CANCELLED else _status(occ.status),
        "moved": occ.moved,
        "title": _cut(occ.title, 1000) or event.title,
        "description": occ.description or event.description,
        "location": _cut(occ.location, 1000) or event.location,
        "join_url": _cut(occ.join_url, 2000) or event.join_url,
    }


def _events_store(
    calendar: Calendar,
    records: Sequence[EventRecord],
    read: CalendarRead,
    stored: CalendarStored,
    *,
    partial_ok: bool,
) -> None:
    """One batch of events: the events, then their meetings, then the participants."""
    now = timezone.now()
    existing = {
        event.uid: event
        for event in Event.objects.filter(calendar=calendar, uid__in=[r.uid for r in records])
    }
    fresh: list[Event] = []
    changed: list[Event] = []
    live: list[tuple[Event, EventRecord, bool]] = []  # (event, record, partial)
    for record in records:
        values = _event_values(record)
        event = existing.get(record.uid)
        if event is None:
            event = Event(calendar=calendar, uid=_cut(record.uid, 1000), **values)
            fresh.append(event)
            live.append((event, record, False))
            stored.events_added += 1
            continue
        if values["sequence"] < event.sequence:
            stored.events_ignored += 1
            continue
        # An invitation for one occurrence of a series (RECURRENCE-ID without the RRULE)
        # changes that occurrence, not the series.
        partial = partial_ok and bool(event.rrule) and not record.rrule
        if partial:
            values = {"sequence": values["sequence"]}
        diff = [field for field, value in values.items() if getattr(event, field) != value]
        if diff:
            for field in diff:
                setattr(event, field, values[field])
            event.updated_at = now
            changed.append(event)
            stored.events_updated += 1
        else:
            stored.events_unchanged += 1
        live.append((event, record, partial))
    if fresh:
        Event.objects.bulk_create(fresh, batch_size=BATCH)
    if changed:
        Event.objects.bulk_update(changed, [*EVENT_FIELDS, "updated_at"], batch_size=BATCH)
    if live:
        _meetings_store(calendar, live, read, stored, now)


def _window(read: CalendarRead, keys: list[datetime]) -> tuple[datetime, datetime] | None:
    if read.window_start is not None and read.window_end is not None:
        return read.window_start, read.window_end
    if not keys:
        return None
    return min(keys), max(keys)


def _meetings_store(
    calendar: Calendar,
    live: list[tuple[Event, EventRecord, bool]],
    read: CalendarRead,
    stored: CalendarStored,
    now: datetime,
) -> None:
    event_ids = [event.pk for event, _record, _partial in live]
    by_event: dict[int, dict[datetime | None, Meeting]] = defaultdict(dict)
    for meeting in Meeting.objects.filter(event_id__in=event_ids):
        by_event[meeting.event_id or 0][meeting.recurrence_id] = meeting
    fresh: list[Meeting] = []
    changed: list[Meeting] = []
    people: list[tuple[Meeting, list[Wanted]]] = []
    for event, record, partial in live:
        meetings = by_event[event.pk]
        incoming: dict[datetime, OccurrenceRecord] = {}
        for occ in record.occurrences:
            incoming[occ.recurrence_id] = occ
        if not record.rrule and not partial and len(incoming) == 1 and len(meetings) == 1:
            # A single event moved: its one meeting moves with it (keyed by its start).
            (old_key, single), (new_key,) = next(iter(meetings.items())), incoming.keys()
            if old_key != new_key:
                meetings = {new_key: single}
        for key, occ in incoming.items():
            values = _meeting_values(event, occ, calendar.time_zone)
            found = meetings.get(key)
            if found is None:
                meeting = Meeting(calendar=calendar, event=event, **values)
                fresh.append(meeting)
                stored.meetings_added += 1
            else:
                meeting = found
                diff = [f for f, value in values.items() if getattr(meeting, f) != value]
                if diff:
                    cancelling = "status" in diff and values["status"] == Status.CANCELLED
                    for field in diff:
                        setattr(meeting, field, values[field])
                    meeting.updated_at = now
                    changed.append(meeting)
                    if cancelling:
                        stored.meetings_cancelled += 1
                    else:
                        stored.meetings_updated += 1
            records = occ.participants if occ.participants is not None else record.participants
            people.append((meeting, wanted_participants(records, record.organizer)))
        window = None if partial else _window(read, list(incoming))
        if window is not None:
            start, end = window
            for rid, held in meetings.items():
                if rid is None or rid in incoming or held.status == Status.CANCELLED:
                    continue
                if start <= rid <= end:
                    held.status = Status.CANCELLED
                    held.updated_at = now
                    changed.append(held)
                    stored.meetings_cancelled += 1
    if fresh:
        Meeting.objects.bulk_create(fresh, batch_size=BATCH)
    if changed:
        Meeting.objects.bulk_update(changed, [*MEETING_FIELDS, "updated_at"], batch_size=BATCH)
    _participants_store(event_ids, people)


def _participants_store(event_ids: list[int], people: list[tuple[Meeting, list[Wanted]]]) -> None:
    addresses: dict[str, str] = {}
    for _meeting, wanted in people:
        for person in wanted:
            if person.email and not addresses.get(person.email):
                addresses[person.email] = person.name
    identities = identities_for(addresses)
    participants_write(
        wanted={meeting.pk: wanted for meeting, wanted in people},
        stored=Participant.objects.filter(meeting__event_id__in=event_ids),
        identities=identities,
    )


# --- invitations answered or withdrawn ------------------------------------------------------


def _replies_store(read: CalendarRead, stored: CalendarStored) -> None:
    """METHOD:REPLY: only the replying attendees' responses, on the event of that UID in
    any calendar (a reply reaches the mail while the event may come from a feed). A reply
    naming a series (its RRULE) or a single event answers all its meetings; one naming an
    occurrence of a series (RECURRENCE-ID) answers that one."""
    for record in read.events:
        events = list(Event.objects.filter(uid=record.uid))
        if not events:
            stored.events_ignored += 1
            continue
        for event in events:
            meetings = Meeting.objects.filter(event=event)
            if event.rrule and not record.rrule and record.occurrences:
                named = [occ.recurrence_id for occ in record.occurrences]
                meetings = meetings.filter(recurrence_id__in=named)
            stored.responses_updated += _responses_set(meetings, record.participants)
            for occ in record.occurrences:
                if occ.participants:
                    stored.responses_updated += _responses_set(
                        Meeting.objects.filter(event=event, recurrence_id=occ.recurrence_id),
                        occ.participants,
                    )


def _responses_set(meetings: Any, records: Sequence[ParticipantRecord]) -> int:
    count = 0
    for record in records:
        email = email_clean(record.email)
        response = _cut(record.response, 16).lower()
        if not email or not response:
            continue
        count += (
            Participant.objects.filter(meeting__in=meetings, email=email)
            .exclude(response=response)
            .update(response=response)
        )
    return count


def _cancels_store(read: CalendarRead, stored: CalendarStored) -> None:
    """METHOD:CANCEL: the named occurrences of a series (RECURRENCE-ID), or the whole
    event (a single event, or a series named by its RRULE), of that UID in any calendar.
    A cancellation older than the stored SEQUENCE is ignored."""
    now = timezone.now()
    for record in read.events:
        events = list(Event.objects.filter(uid=record.uid))
        if not events:
            stored.events_ignored += 1
            continue
        for event in events:
            sequence = _sequence(record)
            if sequence < event.sequence:
                stored.events_ignored += 1
                continue
            meetings = Meeting.objects.filter(event=event).exclude(status=Status.CANCELLED)
            if event.rrule and not record.rrule and record.occurrences:
                named = [occ.recurrence_id for occ in record.occurrences]
                meetings = meetings.filter(recurrence_id__in=named)
                fields: dict[str, Any] = {"sequence": sequence}
            else:
                fields = {"sequence": sequence, "status": Status.CANCELLED}
            diff = {f: v for f, v in fields.items() if getattr(event, f) != v}
            if diff:
                Event.objects.filter(pk=event.pk).update(**diff, updated_at=now)
                stored.events_updated += 1
            else:
                stored.events_unchanged += 1
            stored.meetings_cancelled += meetings.update(status=Status.CANCELLED, updated_at=now)
