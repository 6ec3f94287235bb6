"""Public ids for new rows: the one a record brings (the id it had in the archive it was
exported from) when it is well-formed and free, else a new one. One probe of the store per
batch, and none at all when no record brings an id (every live sync and provider import)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from django.db import connection

from archive.store.ids import new_public_ids

# A type prefix and a ULID: 26 characters of Crockford's base32, the first at most 7
# (a ULID is 128 bits).
_ULID = "[0-7][0-9A-HJKMNP-TV-Z]{25}"
# The tables a given id must be free in, by prefix (a fixed list: never a caller's text).
_TABLES = {"msg": "archive_message", "att": "archive_attachment"}


def public_id_well_formed(prefix: str, value: str) -> bool:
    """True when `value` is `prefix_` and a ULID, as `archive.store.ids` makes them."""
    return re.fullmatch(f"{prefix}_{_ULID}", value) is not None


def public_ids_given(prefix: str, wanted: Sequence[str | None]) -> list[str]:
    """An id for each of `wanted`, in order: the wanted one when it is well-formed, not
    already in the store and not wanted earlier in the list; else a new one. Never fails:
    an id taken is only replaced."""
    fresh = new_public_ids(prefix, len(wanted))
    offered = {value for value in wanted if value and public_id_well_formed(prefix, value)}
    if not offered:
        return fresh
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT public_id FROM {_TABLES[prefix]}"
            " WHERE public_id IN (SELECT value FROM json_each(%s))",
            [json.dumps(sorted(offered))],
        )
        used = {row[0] for row in cursor.fetchall()}
    chosen: list[str] = []
    for value, new in zip(wanted, fresh, strict=True):
        if value is not None and value in offered and value not in used:
            used.add(value)  # a second record wanting it gets a new one
            chosen.append(value)
        else:
            chosen.append(new)
    return chosen
