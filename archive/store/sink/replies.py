"""Replies: a reply points at its parent message (`reply_to`) once the parent is stored,
whichever comes first — a parent in the same batch, one stored before, or a reply stored
before its parent (a later export, another batch), which the parent adopts on arrival."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.db import connection

from archive.store.domain import MessageRecord
from archive.store.models import Message
from archive.store.sink.upserts import Context

_CHUNK = 5_000


def _chunks(values: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


def _ids_of(account_id: int, chat_id: int, external_ids: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    with connection.cursor() as cursor:
        for chunk in _chunks(external_ids):
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(
                "SELECT external_id, id FROM archive_message WHERE account_id = %s AND chat_id = %s"
                f" AND external_id IN ({marks})",
                [account_id, chat_id, *chunk],
            )
            found.update(cursor.fetchall())
    return found


def parent_ids(
    ctx: Context, records: dict[tuple[str, str], MessageRecord], ids: dict[tuple[str, str], int]
) -> dict[tuple[str, str], int]:
    """The stored or same-batch parent of every new reply whose parent is known."""
    wanted: dict[str, set[str]] = {}
    for (chat_ext, _), record in records.items():
        parent = record.reply_to_external_id
        if parent and (chat_ext, parent) not in ids:
            wanted.setdefault(chat_ext, set()).add(parent)
    known: dict[tuple[str, str], int] = dict(ids)
    for chat_ext, parents in wanted.items():
        found = _ids_of(ctx.account.pk, ctx.chats[chat_ext].pk, sorted(parents))
        for external_id, pk in found.items():
            known[(chat_ext, external_id)] = pk
    linked: dict[tuple[str, str], int] = {}
    for key, record in records.items():
        if record.reply_to_external_id:
            parent_id = known.get((key[0], record.reply_to_external_id))
            if parent_id is not None and parent_id != ids[key]:
                linked[key] = parent_id
    return linked


# (parent id, child id) pairs as one JSON array: one statement, one step.
_SET_REPLY_TO = (
    "UPDATE archive_message SET reply_to_id = pair.value ->> 0 FROM json_each(%s) AS pair"
    " WHERE archive_message.id = pair.value ->> 1"
)

# The replies waiting for a parent, in the words of message_reply_waiting_idx's own WHERE
# (migration 0005): SQLite reads a partial index only for a query whose WHERE implies the
# index's, and `!= ''` does not imply `NOT (... = '')`. Written so, both statements below
# walked the chat's whole (chat, time) range instead: 33 and 66 ms a batch in a chat of
# 100,000 messages. The probe names the index: without statistics the planner rates the
# (chat, time) index as good for `chat_id = %s`.
_WAITING = "reply_to_id IS NULL AND NOT (reply_to_external_id = '')"


def orphans_adopt(ctx: Context, ids: dict[tuple[str, str], int]) -> None:
    """Point replies stored before their parent (a later export, another batch) at the
    parents just inserted."""
    by_chat: dict[str, list[str]] = {}
    for chat_ext, external_id in ids:
        by_chat.setdefault(chat_ext, []).append(external_id)
    updates: list[tuple[int, int]] = []
    with connection.cursor() as cursor:
        for chat_ext, external_ids in by_chat.items():
            chat_id = ctx.chats[chat_ext].pk
            cursor.execute(
                "SELECT 1 FROM archive_message INDEXED BY message_reply_waiting_idx"
                f" WHERE chat_id = %s AND {_WAITING} LIMIT 1",
                [chat_id],
            )
            if cursor.fetchone() is None:
                continue  # no reply in this chat waits for a parent
            for chunk in _chunks(external_ids):
                marks = ", ".join(["%s"] * len(chunk))
                cursor.execute(
                    "SELECT id, reply_to_external_id FROM archive_message WHERE chat_id = %s"
                    f" AND {_WAITING} AND reply_to_external_id IN ({marks})",
                    [chat_id, *chunk],
                )
                for child_id, parent_ext in cursor.fetchall():
                    parent_id = ids.get((chat_ext, parent_ext))
                    if parent_id is not None and parent_id != child_id:
                        updates.append((parent_id, child_id))
        if updates:
            cursor.execute(_SET_REPLY_TO, [json.dumps(updates)])


def replies_link(ctx: Context, touched: list[Message]) -> None:
    """Resolve reply_to for touched messages, and for replies that arrived before a parent."""
    by_chat: dict[int, list[Message]] = {}
    for message in touched:
        by_chat.setdefault(message.chat_id, []).append(message)
    for chat_id, messages in by_chat.items():
        own_ids = [m.external_id for m in messages]
        fields = ("id", "reply_to_external_id", "reply_to_id")
        # The touched messages, then the replies waiting for them (message_reply_waiting_idx):
        # OR'ed in one statement, the planner walked the chat's whole time range, or with
        # statistics every message without a parent (50 and 317 ms in a chat of 100,000).
        candidates = list(Message.objects.filter(pk__in=[m.pk for m in messages]).only(*fields))
        seen = {candidate.pk for candidate in candidates}
        candidates += [
            waiting
            for waiting in Message.objects.filter(
                chat_id=chat_id, reply_to__isnull=True, reply_to_external_id__in=own_ids
            )
            .exclude(reply_to_external_id="")
            .only(*fields)
            if waiting.pk not in seen
        ]
        wanted = {c.reply_to_external_id for c in candidates if c.reply_to_external_id}
        id_by_external = (
            dict(
                Message.objects.filter(
                    account=ctx.account, chat_id=chat_id, external_id__in=wanted
                ).values_list("external_id", "id")
            )
            if wanted
            else {}
        )
        changed = []
        for candidate in candidates:
            parent = id_by_external.get(candidate.reply_to_external_id)
            if parent == candidate.pk:
                parent = None
            if candidate.reply_to_id != parent:
                candidate.reply_to_id = parent
                changed.append(candidate)
        if changed:
            Message.objects.bulk_update(changed, ["reply_to"])
