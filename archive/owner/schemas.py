"""The API shape of the store's overview."""

from __future__ import annotations

from datetime import datetime

from ninja import Schema


class StatsOut(Schema):
    """Counts of what the archive holds, and when a worker was last seen."""

    accounts: int
    chats: int
    messages: int
    attachments: int
    worker_seen_at: datetime | None
    worker_alive: bool
