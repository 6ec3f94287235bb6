"""Forgetting what a removed message was in: when a message is tombstoned or purged, the
vectors of its conversation's chunks are deleted in the same write, so its words cannot be
found by meaning while the chat waits for its rebuild (which cuts the chunks again)."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.dispatch import receiver

from archive.meaning.models import ChunkKind
from archive.meaning.services.vectors import vectors_forget
from archive.store.signals import messages_written

# The chunks of the conversations (current build) the messages are in.
_CHUNKS_OF = (
    "SELECT c.kind, c.sha FROM archive_conversationlink AS l"
    " JOIN archive_conversationstate AS s ON s.current_id = l.build_id"
    " JOIN archive_chunk AS c ON c.kind = %s AND c.source_id = l.conversation_id"
    " WHERE l.message_id IN ({})"
)


def message_vectors_forget(message_ids: list[int]) -> int:
    keys: list[tuple[int, bytes]] = []
    for start in range(0, len(message_ids), 500):
        part = message_ids[start : start + 500]
        with connection.cursor() as cursor:
            cursor.execute(
                _CHUNKS_OF.format(",".join("%s" for _ in part)), [ChunkKind.CONVERSATION, *part]
            )
            keys.extend((int(kind), bytes(sha)) for kind, sha in cursor.fetchall())
    return vectors_forget(keys)


@receiver(messages_written, dispatch_uid="meaning.messages_written")
def _messages_written(*, removed: list[int] = (), **_: Any) -> None:  # type: ignore[assignment]
    if removed:
        message_vectors_forget(list(removed))
