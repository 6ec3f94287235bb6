"""Public ids are ULIDs behind a type prefix, one at a time or a batch at once."""

from __future__ import annotations

import time

from ulid import ULID

from archive.store.ids import new_public_id, new_public_ids


def test_batch_ids_are_valid_distinct_ulids_of_now() -> None:
    before = int(time.time() * 1000)
    ids = new_public_ids("msg", 5000)
    after = int(time.time() * 1000)
    assert len(ids) == len(set(ids)) == 5000
    for public_id in ids:
        prefix, _, body = public_id.partition("_")
        assert prefix == "msg"
        assert len(body) == 26
        parsed = ULID.from_str(body)
        assert str(parsed) == body  # canonical Crockford text, nothing lost in decoding
        assert before <= parsed.milliseconds <= after
    # The random parts use the whole alphabet, not a slice of it.
    tails = "".join(public_id[-16:] for public_id in ids)
    assert set(tails) == set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")


def test_batch_and_single_ids_share_one_shape() -> None:
    single = new_public_id("msg")
    (batched,) = new_public_ids("msg", 1)
    assert len(single) == len(batched) == 30
    assert new_public_ids("msg", 0) == []
