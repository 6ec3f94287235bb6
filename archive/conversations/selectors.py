"""Reading conversations: always through the chat's current build, so a build being written
is never seen."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from archive.conversations.domain import conversation_public_id, root_public_id
from archive.conversations.models import (
    Conversation,
    ConversationBuild,
    ConversationState,
    Need,
)
from archive.store.models import Chat, Message
from wirecat.errors import Conflict


@dataclass(frozen=True)
class ConversationView:
    """One conversation as pages and the API show it."""

    id: int  # the row's id in its build (never leaves the process)
    public_id: str  # cnv_…, stable while its first message stays first
    chat_id: int
    root_public_id: str
    title: str
    first_at: datetime
    last_at: datetime
    message_count: int
    participants: list[int]
    participant_count: int


def _view(row: Conversation, root_public: str) -> ConversationView:
    return ConversationView(
        id=row.pk,
        public_id=conversation_public_id(root_public),
        chat_id=row.chat_id,
        root_public_id=root_public,
        title=row.title,
        first_at=row.first_at,
        last_at=row.last_at,
        message_count=row.message_count,
        participants=[int(pk) for pk in row.participants],
        participant_count=row.participant_count,
    )


def _views(rows: list[Conversation]) -> list[ConversationView]:
    roots = dict(
        Message.objects.filter(pk__in=[r.root_id for r in rows]).values_list("pk", "public_id")
    )
    return [_view(row, roots.get(row.root_id, "")) for row in rows]


def current_build_id(chat_id: int) -> int | None:
    return (
        ConversationState.objects.filter(chat_id=chat_id)
        .values_list("current_id", flat=True)
        .first()
    )


def chat_conversations(
    *, chat_id: int, limit: int = 50, offset: int = 0
) -> tuple[list[ConversationView], int]:
    """The chat's conversations, the most recently active first, and how many there are."""
    build = current_build_id(chat_id)
    if build is None:
        return [], 0
    rows = Conversation.objects.filter(build_id=build).order_by("-last_at", "-id")
    total = rows.count()
    return _views(list(rows[offset : offset + limit])), total


def conversation_of(*, message_id: int) -> ConversationView | None:
    """The conversation a message is in (the current build of its chat), if built."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT l.conversation_id FROM archive_message AS m"
            " JOIN archive_conversationstate AS s ON s.chat_id = m.chat_id"
            " JOIN archive_conversationlink AS l"
            "   ON l.message_id = m.id AND l.build_id = s.current_id"
            " WHERE m.id = %s",
            [message_id],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    found = Conversation.objects.filter(pk=row[0]).first()
    return None if found is None else _views([found])[0]


def conversations_of(message_ids: list[int]) -> dict[int, ConversationView]:
    """Message id -> its conversation, for many messages at once (search hits)."""
    if not message_ids:
        return {}
    marks = ",".join(["%s"] * len(message_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id, l.conversation_id FROM archive_message AS m"
            " JOIN archive_conversationstate AS s ON s.chat_id = m.chat_id"
            " JOIN archive_conversationlink AS l"
            "   ON l.message_id = m.id AND l.build_id = s.current_id"
            f" WHERE m.id IN ({marks})",
            list(message_ids),
        )
        pairs = cursor.fetchall()
    rows = {r.pk: r for r in Conversation.objects.filter(pk__in={c for _, c in pairs})}
    views = {v.id: v for v in _views(list(rows.values()))}
    return {int(m): views[c] for m, c in pairs if c in views}


def conversations_by_ids(conversation_ids: Collection[int]) -> dict[int, ConversationView]:
    """Conversation row id -> its view, for the rows that exist (the meaning index's
    chunks name their conversation by row)."""
    rows = list(Conversation.objects.filter(pk__in=set(conversation_ids)))
    return {view.id: view for view in _views(rows)}


def conversation_by_public_id(public_id: str) -> ConversationView | None:
    """The conversation `cnv_…` names: the one its first message is in now (a rebuild that
    moved that message into another conversation finds that one)."""
    root = root_public_id(public_id)
    if root is None:
        return None
    message_id = Message.objects.filter(public_id=root).values_list("pk", flat=True).first()
    return None if message_id is None else conversation_of(message_id=message_id)


def conversation_message_ids(conversation_id: int) -> list[int]:
    """The ids of a conversation's live messages, in the chat's order."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id FROM archive_conversationlink AS l"
            " JOIN archive_message AS m ON m.id = l.message_id"
            " WHERE l.conversation_id = %s AND m.deleted_at IS NULL"
            " ORDER BY m.sent_at, m.id",
            [conversation_id],
        )
        return [int(row[0]) for row in cursor.fetchall()]


def chat_links(chat_id: int) -> Iterator[tuple[str, str]]:
    """(message external id, parent external id) for every message of the chat's current
    build, in the chat's order; a message that starts a conversation names itself."""
    build = current_build_id(chat_id)
    if build is None:
        return
    # Read in pages, each its own short read (a snapshot of the whole chat would hold the
    # store's write lock here). A build replaced and dropped under the reader is named,
    # never passed off as a shorter answer.
    expected = ConversationBuild.objects.filter(pk=build).values_list("message_count", flat=True)
    wanted = expected.first()
    given = 0
    for pair in _chat_links(chat_id, build):
        given += 1
        yield pair
    if (
        wanted is not None
        and given < wanted
        and not ConversationBuild.objects.filter(pk=build).exists()
    ):
        raise Conflict(
            "the chat's conversations were rebuilt while they were being read; read them again"
        )


def _chat_links(chat_id: int, build: int) -> Iterator[tuple[str, str]]:
    last_sent, last_id = "", 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT m.external_id, COALESCE(p.external_id, m.external_id), m.sent_at, m.id"
                " FROM archive_conversationlink AS l"
                " JOIN archive_message AS m ON m.id = l.message_id"
                " LEFT JOIN archive_message AS p ON p.id = l.parent_id"
                " WHERE l.build_id = %s AND m.chat_id = %s"
                " AND (m.sent_at > %s OR (m.sent_at = %s AND m.id > %s))"
                " ORDER BY m.sent_at, m.id LIMIT 5000",
                [build, chat_id, last_sent, last_sent, last_id],
            )
            rows = cursor.fetchall()
        for external, parent, _, _ in rows:
            yield external, parent
        if len(rows) < 5000:
            return
        last_sent, last_id = rows[-1][2], rows[-1][3]


@dataclass(frozen=True)
class Readiness:
    chats: int  # chats with messages
    built: int  # of them, with a current build that needs nothing
    waiting: int  # never built, or marked since
    failed: int  # whose last build failed (the reason is on the state)
    conversations: int  # in the current builds


def readiness() -> Readiness:
    """How far the conversations are built, in one query."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*),"
            " sum(s.current_id IS NOT NULL AND s.need = %s),"
            " sum(s.chat_id IS NULL OR s.need > %s),"
            " sum(s.error != ''), sum(b.conversation_count)"
            " FROM archive_chat AS c LEFT JOIN archive_conversationstate AS s"
            "   ON s.chat_id = c.id"
            " LEFT JOIN archive_conversationbuild AS b ON b.id = s.current_id"
            " WHERE c.message_count > 0",
            [int(Need.NOTHING), int(Need.NOTHING)],
        )
        chats, built, waiting, failed, conversations = cursor.fetchone()
    return Readiness(
        int(chats or 0),
        int(built or 0),
        int(waiting or 0),
        int(failed or 0),
        int(conversations or 0),
    )


def chat_find(text: str) -> Chat | None:
    """A chat by its id or its exact title (the newest of that title)."""
    if text.isdigit():
        found = Chat.objects.filter(pk=int(text)).first()
        if found is not None:
            return found
    return Chat.objects.filter(title=text).order_by("-last_message_at", "-id").first()
