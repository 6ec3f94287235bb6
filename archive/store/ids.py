"""Public ids: a type prefix and a ULID (`msg_01J…`). Rowids never leave the process."""

from __future__ import annotations

import base64
import os

from ulid import ULID

# RFC 4648 base32 and Crockford's (ULID's) alphabet differ only in their symbols: both
# write 5 bits per character, most significant first.
_CROCKFORD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789ABCDEFGHJKMNPQRSTVWXYZ")
_RANDOM_BYTES = 10  # a ULID's 80 random bits: 16 characters after its 10 of time


def new_public_id(prefix: str) -> str:
    return f"{prefix}_{ULID()}"


def new_public_ids(prefix: str, count: int) -> list[str]:
    """`count` ids of one millisecond in one go (a large import makes thousands a batch):
    the time part once, the random parts from one read of the OS's randomness."""
    if count <= 0:
        return []
    head = f"{prefix}_{str(ULID())[:10]}"
    tails = base64.b32encode(os.urandom(_RANDOM_BYTES * count)).decode().translate(_CROCKFORD)
    return [head + tails[start : start + 16] for start in range(0, 16 * count, 16)]


def new_message_id() -> str:
    return new_public_id("msg")


def new_attachment_id() -> str:
    return new_public_id("att")


def new_import_id() -> str:
    return new_public_id("imp")
