"""The API shape of the store's overview."""

from __future__ import annotations

from ninja import Schema

from archive.web.schemas import At


class StatsOut(Schema):
    """Counts of what the archive holds, and when a worker was last seen."""

    accounts: int
    chats: int
    messages: int
    attachments: int
    worker_seen_at: At | None
    worker_alive: bool
