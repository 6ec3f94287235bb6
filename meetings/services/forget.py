"""`events_forget`: events deleted from their calendar at the source (a CalDAV object gone).

A meeting is never deleted (it may carry a transcript, links, tasks): the deleted events'
occurrences from now on are marked cancelled, and what already happened stays as it was.
Idempotent: cancelled meetings are left alone."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from meetings.models import Calendar, Meeting, Status
from meetings.services.common import chunks


def events_forget(*, kind: str, key: str, uids: Iterable[str], now: datetime | None = None) -> int:
    """Cancel the occurrences from `now` on of the events `uids` of the calendar (`kind`,
    `key`); how many meetings were cancelled (0 when the calendar or the UIDs are unknown)."""
    wanted = sorted({str(uid) for uid in uids if uid})
    calendar = Calendar.objects.filter(kind=kind, key=key).first()
    if calendar is None or not wanted:
        return 0
    now = now or timezone.now()
    cancelled = 0
    with transaction.atomic():
        for group in chunks(wanted, 500):
            cancelled += (
                Meeting.objects.filter(calendar=calendar, event__uid__in=group, start__gte=now)
                .exclude(status=Status.CANCELLED)
                .update(status=Status.CANCELLED, updated_at=now)
            )
    return cancelled
