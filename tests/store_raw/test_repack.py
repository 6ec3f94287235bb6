"""The bounded pass that packs raw JSON still stored as text (rows from before compression,
or from a provider's first small batches)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.db import connection

from archive.store.models import Change, Message, RawDictionary
from archive.store.raw import RAW_TRAIN_MIN
from archive.store.services.maintenance import store_optimize
from archive.store.sink import batch_record
from archive.store.sink.repack import raw_json_repack
from tests.factories import batch
from tests.store_raw.test_raw_json import OTHER, messages, read_back

pytestmark = pytest.mark.django_db


def kinds() -> dict[str, int]:
    """How many raw JSON columns SQLite holds as text and as blobs."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT typeof(raw_json), count(*) FROM archive_message GROUP BY 1")
        return dict(cursor.fetchall())


def test_small_batches_stored_as_text_are_packed_later_and_read_the_same() -> None:
    for first in range(1, 1300, 400):  # four batches, each too small to train
        batch_record(batch=batch(*messages(first, 400)))
    assert kinds() == {"text": 1600} and not RawDictionary.objects.exists()
    expected = read_back()
    changes = Change.objects.count()
    stamps = dict(Message.objects.values_list("external_id", "updated_at"))

    assert raw_json_repack() == 1600
    assert kinds() == {"blob": 1600}
    assert RawDictionary.objects.get().provider == "testnet"
    assert read_back() == expected
    # Nothing a reader sees changed: no feed row, no new update time.
    assert Change.objects.count() == changes
    assert dict(Message.objects.values_list("external_id", "updated_at")) == stamps
    assert raw_json_repack() == 0


def test_the_pass_is_bounded_and_goes_on_where_text_is_left() -> None:
    batch_record(batch=batch(*messages(1, RAW_TRAIN_MIN)))
    others = messages(1, RAW_TRAIN_MIN, provider="othernet")
    batch_record(batch=replace(batch(*others), account=OTHER))
    expected = {
        (p, ext): text
        for p, ext, text in Message.objects.values_list(
            "account__provider", "external_id", "raw_json"
        )
    }
    # Rows written before compression: text again, in both providers.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id, a.provider, m.external_id FROM archive_message m"
            " JOIN archive_account a ON a.id = m.account_id WHERE m.id % 4 = 0"
        )
        rows = cursor.fetchall()
        cursor.executemany(
            "UPDATE archive_message SET raw_json = %s WHERE id = %s",
            [(expected[(provider, ext)], pk) for pk, provider, ext in rows],
        )
    assert kinds()["text"] == len(rows) == 2 * RAW_TRAIN_MIN // 4

    assert raw_json_repack(most=100) == 100
    assert kinds()["text"] == len(rows) - 100
    assert raw_json_repack() == len(rows) - 100
    assert kinds() == {"blob": 2 * RAW_TRAIN_MIN}
    assert RawDictionary.objects.count() == 2
    assert {
        (p, ext): text
        for p, ext, text in Message.objects.values_list(
            "account__provider", "external_id", "raw_json"
        )
    } == expected


def test_the_nightly_optimise_packs_a_share() -> None:
    batch_record(batch=batch(*messages(1, 600)))
    batch_record(batch=batch(*messages(601, 600)))
    assert kinds() == {"text": 1200}
    assert "raw JSON packed: 1200" in store_optimize()
    assert kinds() == {"blob": 1200}
