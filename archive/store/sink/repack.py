"""Raw JSON stored as text packed afterwards: rows written before it was stored compressed,
or while their provider had no dictionary yet (its first small batches). A bounded pass, a
batch per transaction, oldest rows first; what a reader sees does not change, so it writes
no changes-feed row and leaves `updated_at` alone."""

from __future__ import annotations

import json
from collections import defaultdict

from django.db import connection, transaction

from archive.store.models import Account
from archive.store.raw import raw_packer

REPACK_BATCH = 5_000  # rows looked at per transaction (at least RAW_TRAIN_MIN: it may train)
REPACK_MOST = 200_000  # rows looked at per pass (the nightly job's share: a few seconds)

# By row id (`+account_id` keeps the planner off the account's unique index, which would
# read every row of the account and sort them).
_TEXT_ROWS = (
    "SELECT id, raw_json FROM archive_message"
    " WHERE id > %s AND +account_id IN (SELECT value FROM json_each(%s))"
    " AND typeof(raw_json) = 'text' AND raw_json <> '' ORDER BY id LIMIT %s"
)


def raw_json_repack(*, most: int = REPACK_MOST) -> int:
    """Pack the raw JSON still stored as text, up to `most` rows looked at, provider by
    provider (a provider without a dictionary trains one from its first batch of text
    rows when that holds enough). Returns how many rows were packed."""
    by_provider: dict[str, list[int]] = defaultdict(list)
    for pk, provider in Account.objects.order_by("pk").values_list("pk", "provider"):
        by_provider[provider].append(pk)
    packed = 0
    for provider, accounts in sorted(by_provider.items()):
        last = 0
        while most > 0:
            with transaction.atomic(), connection.cursor() as cursor:
                size = min(REPACK_BATCH, most)
                cursor.execute(_TEXT_ROWS, [last, json.dumps(accounts), size])
                rows = cursor.fetchall()
                if not rows:
                    break
                most -= len(rows)
                last = rows[-1][0]
                pack = raw_packer(provider, [text for _pk, text in rows])
                frames = [
                    (frame, pk) for pk, text in rows if isinstance(frame := pack(text), bytes)
                ]
                if frames:
                    cursor.executemany(
                        "UPDATE archive_message SET raw_json = %s WHERE id = %s", frames
                    )
                packed += len(frames)
            if len(rows) < size:
                break
    return packed
