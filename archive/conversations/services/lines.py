"""A chat's live messages as the rules read them, in the chat's order, a page at a time
(each page a short read of its own): what builds and the agent's batches read."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection

from archive.conversations import rules
from archive.conversations.domain import Line
from archive.conversations.models import ConversationBuild
from wirecat.db.values import db_time

READ_ROWS = 5_000  # messages read from the store at a time

# Outbound messages that never went out (a draft awaiting the owner, refused, failed) were
# never part of the chat.
_UNSENT = ("awaiting", "refused", "failed")

_LINES_SQL = (
    "SELECT m.id, COALESCE(m.sender_id, 0), COALESCE(NULLIF(i.display_name, ''), i.handle, ''),"
    " m.sent_at, m.text, m.kind, m.reply_to_id"
    " FROM archive_message AS m LEFT JOIN archive_identity AS i ON i.id = m.sender_id"
    " WHERE m.chat_id = %s AND m.deleted_at IS NULL"
    " AND m.delivery_status NOT IN ('awaiting', 'refused', 'failed')"
    # A row value, so that SQLite reads the index from `after` on (an OR of the two
    # comparisons reads the chat's messages from its first).
    " AND (m.sent_at, m.id) > (%s, %s)"
    " ORDER BY m.sent_at, m.id LIMIT %s"
)


def parse_time(value: object) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value)).replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Row:
    line: Line
    sent_at: datetime
    kind: str


def rows_read(chat_id: int, after: tuple[datetime, int] | None, limit: int) -> list[Row]:
    """Up to `limit` of the chat's live messages after `after` (sent_at, id), in order."""
    sent = db_time(after[0]) if after else ""
    last = after[1] if after else 0
    with connection.cursor() as cursor:
        cursor.execute(_LINES_SQL, [chat_id, sent, last, limit])
        fetched = cursor.fetchall()
    page = []
    for pk, sender, name, sent_at, text, kind, reply_to in fetched:
        when = parse_time(sent_at)
        page.append(
            Row(
                Line(
                    pk=pk,
                    sender=sender,
                    name=name or "",
                    at=when.timestamp(),
                    text=text or "",
                    service=kind == "service",
                    reply_to=reply_to,
                ),
                when,
                kind,
            )
        )
    return page


def lines_after(
    chat_id: int, after: tuple[datetime, int] | None, limit: int
) -> list[tuple[Line, datetime]]:
    """Up to `limit` of the chat's live messages after `after` (sent_at, id), in order, as
    the rules read them, each with its time: what the agent's batches show."""
    return [(row.line, row.sent_at) for row in rows_read(chat_id, after, limit)]


def rows_after(chat_id: int, after: tuple[datetime, int] | None) -> Iterator[list[Row]]:
    """The chat's live messages after `after` (sent_at, id), in order, READ_ROWS at a time
    (each page a short read of its own)."""
    while True:
        page = rows_read(chat_id, after, READ_ROWS)
        if not page:
            return
        yield page
        after = (page[-1].sent_at, page[-1].line.pk)
        if len(page) < READ_ROWS:
            return


def context_rows(build: ConversationBuild) -> list[tuple[Row, int]]:
    """The last `rules.CONTEXT` messages of a build, with their conversations (what the
    rules read before the new messages)."""
    if build.last_sent_at is None:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id, COALESCE(m.sender_id, 0),"
            " COALESCE(NULLIF(i.display_name, ''), i.handle, ''), m.sent_at, m.text, m.kind,"
            " m.reply_to_id, l.conversation_id"
            " FROM archive_conversationlink AS l"
            " JOIN archive_message AS m ON m.id = l.message_id"
            " LEFT JOIN archive_identity AS i ON i.id = m.sender_id"
            " WHERE m.chat_id = %s AND l.build_id = %s AND m.deleted_at IS NULL"
            " ORDER BY m.sent_at DESC, m.id DESC LIMIT %s",
            [build.chat_id, build.pk, rules.CONTEXT],
        )
        fetched = cursor.fetchall()
    out = []
    for pk, sender, name, sent_at, text, kind, reply_to, conversation_id in reversed(fetched):
        when = parse_time(sent_at)
        line = Line(
            pk=pk,
            sender=sender,
            name=name or "",
            at=when.timestamp(),
            text=text or "",
            service=kind == "service",
            reply_to=reply_to,
        )
        out.append((Row(line, when, kind), int(conversation_id)))
    return out
