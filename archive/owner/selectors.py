"""What the dashboard shows of the store and the workers: counts and heartbeats."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from archive.owner.models import WorkerHeartbeat
from archive.store.models import Account, Attachment, Chat, Message


@dataclass(frozen=True)
class StoreCounts:
    accounts: int
    chats: int
    messages: int
    attachments: int


def store_counts() -> StoreCounts:
    return StoreCounts(
        accounts=Account.objects.count(),
        chats=Chat.objects.count(),
        messages=Message.objects.count(),
        attachments=Attachment.objects.count(),
    )


@dataclass(frozen=True)
class WorkerStatus:
    hostname: str
    seen_at: datetime
    age_seconds: int
    alive: bool


def worker_status() -> WorkerStatus | None:
    """The most recent worker heartbeat; "alive" while it is younger than a few beats."""
    beat = WorkerHeartbeat.objects.order_by("-seen_at").first()
    if beat is None:
        return None
    stale_after = timedelta(seconds=max(90, 4 * settings.HEARTBEAT_SECONDS))
    age = timezone.now() - beat.seen_at
    return WorkerStatus(
        hostname=beat.hostname,
        seen_at=beat.seen_at,
        age_seconds=max(0, int(age.total_seconds())),
        alive=age <= stale_after,
    )
