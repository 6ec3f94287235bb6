"""The changes feed: what changed in the store, in order. This module writes every row.

Agents read the feed (`/api/changes`), webhooks are told of it (a trigger of the gateway,
migration 0017, fans each row that is not quiet out to the endpoints that want its event).
A row is written in the transaction of its cause, set-wise for a batch, its values always
bound as parameters. The vocabulary lives here too: the kinds of change the feed records
and the events webhooks call them by.

Quiet: within `quiet_changes()` (an import of history, the sync's repair pass) every row
is written quiet: in the feed for agents that poll it, told to no webhook. A quiet batch's
new messages are one row per chat ("messages.imported": the chat's first and last new
message and how many), not one per message: history is read, not reacted to, and a million
imported messages would otherwise be a million rows no webhook hears of.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from enum import StrEnum

from django.db import connection
from django.utils import timezone

from wirecat.db.values import db_time


class ChangeKind(StrEnum):
    """What the feed records (`archive_change.kind`)."""

    MESSAGE_ADDED = "message.added"
    MESSAGE_EDITED = "message.edited"
    MESSAGE_TOMBSTONED = "message.tombstoned"
    MESSAGES_IMPORTED = "messages.imported"  # a quiet batch's new messages of one chat
    TAG_ADDED = "tag.added"
    TAG_REMOVED = "tag.removed"
    SEND_STATUS = "send.status"
    NOTE_CREATED = "note.created"
    NOTE_UPDATED = "note.updated"
    NOTE_DELETED = "note.deleted"


class Event(StrEnum):
    """What webhooks call a change (an endpoint filters by these)."""

    MESSAGE_INBOUND = "message.inbound"
    MESSAGE_OUTBOUND = "message.outbound"
    MESSAGE_EDITED = "message.edited"
    MESSAGE_DELETED = "message.deleted"
    SEND_STATUS = "send.status"
    TAG_CHANGED = "tag.changed"
    NOTE_CREATED = "note.created"
    NOTE_UPDATED = "note.updated"
    NOTE_DELETED = "note.deleted"


EVENTS: tuple[str, ...] = tuple(event.value for event in Event)


def event_of(kind: str, *, direction: str = "in") -> Event | None:
    """The webhook event of a change of `kind` (an added message's by its direction); None
    for "messages.imported", which no webhook hears of (its rows are always quiet, so the
    fan-out trigger never sees one). Migration 0017's fan-out trigger computes the same in
    SQL (as amended by 0027); a test holds the two equal."""
    match ChangeKind(kind):
        case ChangeKind.MESSAGES_IMPORTED:
            return None
        case ChangeKind.MESSAGE_ADDED:
            return Event.MESSAGE_OUTBOUND if direction == "out" else Event.MESSAGE_INBOUND
        case ChangeKind.MESSAGE_EDITED:
            return Event.MESSAGE_EDITED
        case ChangeKind.MESSAGE_TOMBSTONED:
            return Event.MESSAGE_DELETED
        case ChangeKind.SEND_STATUS:
            return Event.SEND_STATUS
        case ChangeKind.TAG_ADDED | ChangeKind.TAG_REMOVED:
            return Event.TAG_CHANGED
        case ChangeKind.NOTE_CREATED:
            return Event.NOTE_CREATED
        case ChangeKind.NOTE_UPDATED:
            return Event.NOTE_UPDATED
        case ChangeKind.NOTE_DELETED:
            return Event.NOTE_DELETED


# --- quiet --------------------------------------------------------------------------------

_quiet: contextvars.ContextVar[bool] = contextvars.ContextVar("changes_quiet", default=False)


@contextmanager
def quiet_changes(quiet: bool = True) -> Iterator[None]:
    """Within (when `quiet`): every change is in the feed but tells no webhook (an import
    of history, a repair pass: not news)."""
    token = _quiet.set(quiet or _quiet.get())
    try:
        yield
    finally:
        _quiet.reset(token)


def changes_quiet() -> bool:
    return _quiet.get()


# --- writing ------------------------------------------------------------------------------

_COLUMNS = "kind, message_pk, chat_pk, tag, target_kind, target_id, at, quiet"

# Changes of messages, set-wise: each message's chat comes from its own row.
_MESSAGES_FROM = (
    f"INSERT INTO archive_change ({_COLUMNS})"
    " SELECT %s, m.id, m.chat_id, '', '', NULL, %s, %s FROM archive_message AS m"
)
_ADDED_SINCE = _MESSAGES_FROM + " WHERE m.id >= %s ORDER BY m.id"
_OF_IDS = _MESSAGES_FROM + " WHERE m.id IN (SELECT value FROM json_each(%s)) ORDER BY m.id"
# Rows given whole, as one JSON array of arrays, in their order.
_ROWS = (
    f"INSERT INTO archive_change ({_COLUMNS})"
    " SELECT row.value ->> 0, row.value ->> 1, row.value ->> 2, row.value ->> 3,"
    " row.value ->> 4, row.value ->> 5, %s, %s FROM json_each(%s) AS row ORDER BY row.key"
)


def _stamp(at: datetime | None) -> str:
    return db_time(at or timezone.now())


def messages_added(*, first_id: int, chat_ids: Sequence[int], at: datetime | None = None) -> None:
    """The messages the sink's batch just stored, ids `first_id` on without a gap, the
    chat of each in `chat_ids` (in id order): a row "message.added" for each (news:
    webhooks tell of each one), or within `quiet_changes()` one row "messages.imported"
    per chat, its chats' messages mixed or not: a chat's row names the first and last of
    its own and how many, and its messages are exactly the chat's ones from the first to
    the last by id. The import's rows are counted here, from the ids the sink gave out,
    not read back from the table (at a million messages, a tenth of the batch's time)."""
    stamp = _stamp(at)
    if not changes_quiet():
        with connection.cursor() as cursor:
            cursor.execute(_ADDED_SINCE, [ChangeKind.MESSAGE_ADDED.value, stamp, False, first_id])
        return
    spans: dict[int, list[int]] = {}  # chat -> [first id, last id, count]
    for message_id, chat_id in enumerate(chat_ids, start=first_id):
        span = spans.get(chat_id)
        if span is None:
            spans[chat_id] = [message_id, message_id, 1]
        else:
            span[1] = message_id
            span[2] += 1
    kind = ChangeKind.MESSAGES_IMPORTED.value
    _insert(
        [
            [kind, first, chat_id, str(count), "", last]
            for chat_id, (first, last, count) in spans.items()
        ],
        at,
        quiet=True,
    )


def imported_count(tag: str) -> int | None:
    """How many messages a "messages.imported" row counts (kept as text in its `tag`)."""
    return int(tag) if tag.isdigit() else None


def messages_changed(
    *, kind: ChangeKind, message_ids: Iterable[int], at: datetime | None = None
) -> None:
    """One `kind` row ("message.edited", "message.tombstoned") per message, in id order."""
    ids = sorted(set(message_ids))
    if not ids:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            _OF_IDS, [ChangeKind(kind).value, _stamp(at), changes_quiet(), json.dumps(ids)]
        )


def tags_changed(
    *, added: bool, tag: str, targets: Iterable[tuple[str, int]], at: datetime | None = None
) -> None:
    """Rows "tag.added" or "tag.removed" of tag `tag` for each (target kind, target id), in the
    order given; a message target names its message too."""
    kind = ChangeKind.TAG_ADDED if added else ChangeKind.TAG_REMOVED
    rows: list[list[object]] = []
    for target_kind, target_id in targets:
        message_id = target_id if target_kind == "message" else None
        rows.append([kind.value, message_id, None, tag, target_kind, target_id])
    _insert(rows, at)


def send_status_changed(
    *, send_id: int, message_id: int | None, chat_id: int | None, at: datetime | None = None
) -> None:
    """A row "send.status": the journal row `send_id` (a SendAttempt) has a new outcome."""
    _insert([[ChangeKind.SEND_STATUS.value, message_id, chat_id, "", "send", send_id]], at)


def note_changed(
    *, kind: ChangeKind, note_id: int, public_id: str = "", at: datetime | None = None
) -> None:
    """A row "note.created", "note.updated" or "note.deleted" of the note `note_id` (its
    primary key, in `target_id`). The feed outlives a deleted note: its public id is kept
    in the row's one text column, `tag`, so the feed and webhooks still name it."""
    if kind not in (ChangeKind.NOTE_CREATED, ChangeKind.NOTE_UPDATED, ChangeKind.NOTE_DELETED):
        raise ValueError(f"not a change of a note: {kind}")
    _insert([[ChangeKind(kind).value, None, None, public_id, "note", note_id]], at)


def _insert(rows: list[list[object]], at: datetime | None, *, quiet: bool | None = None) -> None:
    if not rows:
        return
    quiet = changes_quiet() if quiet is None else quiet
    with connection.cursor() as cursor:
        cursor.execute(_ROWS, [_stamp(at), quiet, json.dumps(rows, ensure_ascii=False)])
