"""New messages: inserted with one executemany, replies already pointing at their parents,
indexed set-wise in both full-text tables and queued for stems."""

from __future__ import annotations

import json
from datetime import datetime

import orjson
from django.db import connection

from archive.store.domain import MessageRecord
from archive.store.raw import raw_packer
from archive.store.sink.cleaning import normalize_text
from archive.store.sink.public_ids import public_ids_given
from archive.store.sink.replies import parent_ids
from archive.store.sink.upserts import Context
from wirecat.db.values import db_time, without_surrogates

# A batch is inserted with executemany: measured against one `json_each` statement over
# the batch as a JSON array, it costs half the time per row (14 against 30 us), the JSON
# encoding included.
_INSERT_MESSAGES = (
    "INSERT INTO archive_message (id, public_id, account_id, chat_id, external_id, sender_id,"
    " sent_at, text, kind, direction, reply_to_external_id, reply_to_id, edited_at,"
    " deleted_at, delivery_status, raw_json, provider_metadata, created_at, updated_at,"
    " date_estimated)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, '', %s, %s, %s, %s, %s)"
)
# The next id AUTOINCREMENT would give: above every id ever used, even purged ones.
_NEXT_MESSAGE_ID = (
    "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'archive_message'), 0),"
    " coalesce((SELECT max(id) FROM archive_message), 0)) + 1"
)
# The FTS5 tables kept over archive_message.text (migrations 0002, 0003).
FTS_TABLES = ("message_fts", "message_trigram")


# One encoder for every row (json.dumps with options builds a new one per call), for what
# orjson refuses.
_to_json = json.JSONEncoder(ensure_ascii=False).encode


def metadata_json(metadata: dict[str, object]) -> str:
    """A record's metadata as the store keeps it: JSON written at C speed (orjson, about a
    tenth of json's time); json's encoder for what orjson refuses (a lone surrogate, which
    becomes U+FFFD, or a key that is not a string)."""
    if not metadata:
        return "{}"
    try:
        return orjson.dumps(metadata).decode()
    except (orjson.JSONEncodeError, UnicodeDecodeError):
        return without_surrogates(_to_json(metadata))


def _db_time(value: datetime | None) -> str | None:
    return None if value is None else db_time(value)


def messages_insert(
    ctx: Context,
    records: dict[tuple[str, str], MessageRecord],
    deleted: dict[tuple[str, str], datetime],
    now: datetime,
) -> dict[tuple[str, str], int]:
    """Insert new messages with one executemany (the ORM's per-value work dominated large
    imports), replies already pointing at their parents, index them in both FTS tables
    and queue them for stems; returns their rowids (consecutive, from the lowest)."""
    stamp = _db_time(now)
    with connection.cursor() as cursor:
        # This transaction holds SQLite's write lock (BEGIN IMMEDIATE), so the ids from
        # here on are ours: giving them out now lets a reply name a parent of its own
        # batch in the row itself instead of in a second pass over the table.
        cursor.execute(_NEXT_MESSAGE_ID)
        first = int(cursor.fetchone()[0])
        ids = {key: first + offset for offset, key in enumerate(records)}
        parents = parent_ids(ctx, records, ids)
        account_id = ctx.account.pk
        chat_ids = {ext: chat.pk for ext, chat in ctx.chats.items()}
        sender_ids = {ext: ident.pk for ext, ident in ctx.identities.items()}
        rows = []
        # An exported message's own id when it brings one that is free (one probe).
        public_ids = public_ids_given("msg", [record.public_id for record in records.values()])
        # Raw JSON as zstd frames with the provider's dictionary (archive/store/raw.py).
        pack = raw_packer(ctx.account.provider, [record.raw_json for record in records.values()])
        for public_id, (key, record) in zip(public_ids, records.items(), strict=True):
            metadata = metadata_json(record.metadata)
            rows.append(
                (
                    ids[key],
                    public_id,
                    account_id,
                    chat_ids[record.chat_external_id],
                    record.external_id,
                    sender_ids.get(record.sender_external_id or ""),
                    _db_time(record.sent_at),
                    normalize_text(record.text),
                    record.kind,
                    record.direction,
                    record.reply_to_external_id,
                    parents.get(key),
                    _db_time(record.edited_at),
                    _db_time(record.deleted_at or deleted.get(key)),
                    pack(record.raw_json),
                    metadata,
                    stamp,
                    stamp,
                    record.date_estimated,
                )
            )
        cursor.executemany(_INSERT_MESSAGES, rows)
        # The sink indexes what it inserts, set-wise (migration 0008): one statement per
        # FTS table instead of a trigger call per row; stems are made from the queue.
        for table in FTS_TABLES:
            cursor.execute(
                f"INSERT INTO {table}(rowid, text) SELECT id, text FROM archive_message"
                " WHERE id >= %s",
                [first],
            )
        cursor.execute(
            "INSERT OR IGNORE INTO archive_stem_queue (message_id)"
            " SELECT id FROM archive_message WHERE id >= %s",
            [first],
        )
    return ids
