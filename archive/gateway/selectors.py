"""Reads for agents: their unread messages (per agent, oldest first) and the changes feed."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from django.db import connection

from archive.gateway.models import Agent
from archive.store.models import Change, Message
from wirecat.db.values import db_time
from wirecat.errors import Invalid

_UNREAD = (
    "SELECT m.id FROM archive_message AS m WHERE m.id > %s AND m.direction = 'in'"
    " AND m.deleted_at IS NULL AND m.sent_at >= %s"
    " AND NOT EXISTS (SELECT 1 FROM archive_agentread AS r"
    " WHERE r.agent_id = %s AND r.message_id = m.id)"
    " AND NOT EXISTS (SELECT 1 FROM archive_agentchatread AS c"
    " WHERE c.agent_id = %s AND c.chat_id = m.chat_id AND c.through_id >= m.id)"
    " ORDER BY m.id LIMIT %s"
)


def _token(prefix: str, value: int) -> str:
    return base64.urlsafe_b64encode(f"{prefix}{value}".encode()).decode().rstrip("=")


def _value(prefix: str, cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii") + b"==").decode("ascii")
        value = int(raw.removeprefix(prefix))
    except (ValueError, binascii.Error, UnicodeError) as exc:
        raise Invalid("cursor: not a cursor this endpoint gave out") from exc
    if not raw.startswith(prefix) or not 0 <= value < 2**62:
        raise Invalid("cursor: not a cursor this endpoint gave out")
    return value


def _unread_ids(agent: Agent, after: int, limit: int) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            _UNREAD,
            [max(after, agent.read_through), db_time(agent.since), agent.pk, agent.pk, limit],
        )
        return [int(row[0]) for row in cursor.fetchall()]


def first_unread_id(agent: Agent) -> int | None:
    found = _unread_ids(agent, 0, 1)
    return found[0] if found else None


@dataclass(frozen=True)
class UnreadPage:
    messages: list[Message]
    next_cursor: str | None


def unread_page(*, agent: Agent, cursor: str | None = None, limit: int = 50) -> UnreadPage:
    """Inbound messages this agent has not marked read, oldest first."""
    if not 1 <= limit <= 200:
        raise Invalid("limit: between 1 and 200")
    ids = _unread_ids(agent, _value("u", cursor), limit + 1)
    more = len(ids) > limit
    ids = ids[:limit]
    by_id = Message.objects.select_related("chat", "chat__account", "sender").in_bulk(ids)
    messages = [by_id[i] for i in ids if i in by_id]
    return UnreadPage(messages, _token("u", ids[-1]) if more and ids else None)


@dataclass(frozen=True)
class ChangesPage:
    changes: list[Change]
    public_ids: dict[int, str]  # message pk -> msg_… (absent when purged)
    cursor: str  # always given: poll again with it


def changes_page(*, cursor: str | None = None, limit: int = 100) -> ChangesPage:
    """What changed after `cursor`, in order. The cursor returned resumes exactly after
    the last change returned (or stays put when there is nothing new)."""
    if not 1 <= limit <= 1000:
        raise Invalid("limit: between 1 and 1000")
    after = _value("c", cursor)
    changes = list(Change.objects.filter(pk__gt=after).order_by("pk")[:limit])
    ids = {c.message_pk for c in changes if c.message_pk}
    public = dict(Message.objects.filter(pk__in=ids).values_list("pk", "public_id"))
    last = changes[-1].pk if changes else after
    return ChangesPage(changes, public, _token("c", last))
