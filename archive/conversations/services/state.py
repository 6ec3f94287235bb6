"""What each chat's conversations need: marked in the write that changed the chat (the
store's `messages_written` signal, an agent's answer), read by the build job."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.dispatch import receiver
from django.utils import timezone

from archive.conversations.models import Need
from archive.store.effects import on_commit_effect
from archive.store.signals import messages_written
from wirecat.db.values import db_time

# Chats wait for a build (their messages grew or changed, an agent answered): once the
# write commits, the build job is asked to run.
CONVERSATIONS_DUE = "conversations.due"
# A chat's build became current: what is made of conversations (the meaning index's
# chunks) is due.
CONVERSATIONS_BUILT = "conversations.built"

_MARK_SQL = (
    "INSERT INTO archive_conversationstate (chat_id, current_id, need, marked_at, built_at, error)"
    " SELECT CAST(value AS INTEGER), NULL, %s, %s, NULL, '' FROM json_each(%s) WHERE true"
    " ON CONFLICT (chat_id) DO UPDATE SET need = max(need, excluded.need),"
    " marked_at = excluded.marked_at"
)


def chats_mark(*, chat_ids: Iterable[int], need: Need) -> None:
    """Mark chats as needing `need` (a chat marked for a rebuild stays so when it also
    grew), in the caller's transaction; the build job is asked once it commits."""
    ids = sorted({int(pk) for pk in chat_ids})
    if not ids:
        return
    with connection.cursor() as cursor:
        cursor.execute(_MARK_SQL, [int(need), db_time(timezone.now()), json.dumps(ids)])
    on_commit_effect(CONVERSATIONS_DUE)


@receiver(messages_written, dispatch_uid="conversations.messages_written")
def _messages_written(*, grown: list[int], rewritten: list[int], **_: Any) -> None:
    chats_mark(chat_ids=grown, need=Need.GROWN)
    chats_mark(chat_ids=rewritten, need=Need.REBUILD)
