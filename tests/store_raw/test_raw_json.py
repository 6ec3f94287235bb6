"""Raw provider JSON stored as zstd frames with a dictionary per provider: written by the
sink, read back exactly as text by the ORM, the export and a re-import."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
import zstandard
from django.db import connection

from archive.exports import rows
from archive.store.domain import AccountRecord, IdentityRecord, MessageRecord
from archive.store.models import Message, RawDictionary
from archive.store.raw import RAW_TRAIN_MIN, ZSTD_MAGIC, raw_json_text
from archive.store.sink import batch_record
from tests.factories import batch, message
from wirecat.errors import Invalid

pytestmark = pytest.mark.django_db

OTHER = AccountRecord(
    provider="othernet",
    external_id="acct-2",
    name="Other account",
    owner=IdentityRecord(external_id="me2", display_name="Owner Elsewhere"),
)
WORDS = [
    "roof",
    "budget",
    "plan",
    "letter",
    "meeting",
    "train",
    "station",
    "coffee",
    "release",
    "build",
    "test",
    "deploy",
]


def raw(number: int, provider: str = "testnet") -> str:
    """A provider's JSON of one message, shaped like an export's (numbers, dates, words)."""
    words = " ".join(WORDS[(number * 7 + k) % len(WORDS)] for k in range(number % 9 + 2))
    body: dict[str, Any] = {
        "id": number,
        "type": "message",
        "date": f"2024-03-{number % 28 + 1:02d}T{number % 24:02d}:{number % 60:02d}:00",
        "date_unixtime": str(1709290000 + number * 61),
        "from": "Alice" if number % 3 else "Bob",
        "from_id": f"{provider}{1000 + number % 5}",
        "text": [
            {"type": "bold", "text": "note:"},
            f" {words} \u00fcn\u00efc\u00f8d\u00e9 #{number}",
        ],
    }
    if number % 4 == 0:
        body["reply_to_message_id"] = number - 1
    return json.dumps(body, ensure_ascii=False)


def messages(first: int, count: int, provider: str = "testnet") -> list[MessageRecord]:
    return [
        message(str(n), f"text {n}", minutes=n, raw_json=raw(n, provider))
        for n in range(first, first + count)
    ]


def stored() -> dict[str, tuple[str, bytes | str]]:
    """Each message's column as SQLite holds it: (typeof, value), by external id."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT external_id, typeof(raw_json), raw_json FROM archive_message")
        return {ext: (kind, value) for ext, kind, value in cursor.fetchall()}


def read_back() -> dict[str, str]:
    return dict(Message.objects.values_list("external_id", "raw_json"))


def test_a_large_batch_is_stored_as_frames_and_reads_back_exactly() -> None:
    records = messages(1, RAW_TRAIN_MIN + 200)
    records[0] = replace(records[0], raw_json="")  # an empty one stays empty text
    records[1] = replace(records[1], raw_json="{}")  # too short for a frame to shrink
    result = batch_record(batch=batch(*records))
    assert result.added == len(records)

    columns = stored()
    assert columns["1"] == ("text", "") and columns["2"] == ("text", "{}")
    frames = [value for ext, (kind, value) in columns.items() if ext not in ("1", "2")]
    assert all(isinstance(v, bytes) and v.startswith(ZSTD_MAGIC) for v in frames)
    assert {kind for ext, (kind, _v) in columns.items() if ext not in ("1", "2")} == {"blob"}
    text_bytes = sum(len(r.raw_json.encode()) for r in records[2:])
    assert sum(len(v) for v in frames) < text_bytes / 2

    (dictionary,) = RawDictionary.objects.all()
    assert dictionary.provider == "testnet"
    assert isinstance(frames[0], bytes)
    frame = zstandard.get_frame_parameters(frames[0])
    assert frame.dict_id == dictionary.dict_id

    expected = {r.external_id: r.raw_json for r in records}
    assert read_back() == expected
    assert Message.objects.get(external_id="77").raw_json == expected["77"]
    exported = {row["external_id"]: row["raw_json"] for row in rows.messages()}
    assert exported == expected


def test_a_small_batch_stays_text_and_trains_nothing() -> None:
    batch_record(batch=batch(*messages(1, 20)))
    assert {kind for kind, _v in stored().values()} == {"text"}
    assert not RawDictionary.objects.exists()
    assert read_back() == {str(n): raw(n) for n in range(1, 21)}


def test_a_later_small_batch_is_packed_with_the_stored_dictionary() -> None:
    batch_record(batch=batch(*messages(1, RAW_TRAIN_MIN)))
    (dictionary,) = RawDictionary.objects.all()
    later = messages(5000, 5)
    batch_record(batch=batch(*later))
    columns = stored()
    for record in later:
        kind, value = columns[record.external_id]
        assert kind == "blob"
        assert isinstance(value, bytes)
        assert zstandard.get_frame_parameters(value).dict_id == dictionary.dict_id
    assert RawDictionary.objects.count() == 1
    assert {ext: read_back()[ext] for ext in ("5000", "5004")} == {
        "5000": raw(5000),
        "5004": raw(5004),
    }


def test_two_providers_get_a_dictionary_each() -> None:
    batch_record(batch=batch(*messages(1, RAW_TRAIN_MIN)))
    others = messages(1, RAW_TRAIN_MIN, provider="othernet")
    batch_record(batch=replace(batch(*others), account=OTHER))
    dictionaries = {d.provider: d.dict_id for d in RawDictionary.objects.all()}
    assert set(dictionaries) == {"testnet", "othernet"}
    assert dictionaries["testnet"] != dictionaries["othernet"]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.provider, m.raw_json FROM archive_message m"
            " JOIN archive_account a ON a.id = m.account_id"
        )
        for provider, value in cursor.fetchall():
            assert zstandard.get_frame_parameters(value).dict_id == dictionaries[provider]
    read = {
        (provider, ext): text
        for provider, ext, text in Message.objects.values_list(
            "account__provider", "external_id", "raw_json"
        )
    }
    assert read[("testnet", "9")] == raw(9) and read[("othernet", "9")] == raw(9, "othernet")
    assert len(read) == 2 * RAW_TRAIN_MIN


def test_a_re_import_changes_nothing() -> None:
    records = messages(1, RAW_TRAIN_MIN + 10)
    batch_record(batch=batch(*records))
    before = stored()
    again = batch_record(batch=batch(*records))
    assert (again.added, again.updated, again.unchanged) == (0, 0, len(records))
    assert stored() == before
    assert RawDictionary.objects.count() == 1


def test_an_edit_with_new_raw_json_reads_back_the_new_one() -> None:
    records = messages(1, RAW_TRAIN_MIN)
    batch_record(batch=batch(*records))
    newer = json.dumps({"id": 5, "text": "edited words", "edited": "2024-03-09T10:00:00"})
    edited = replace(records[4], text="edited words", raw_json=newer, edited_at=records[4].sent_at)
    result = batch_record(batch=batch(edited))
    assert result.updated == 1
    assert Message.objects.get(external_id="5").raw_json == newer
    assert {ext: text for ext, text in read_back().items() if ext != "5"} == {
        r.external_id: r.raw_json for r in records if r.external_id != "5"
    }


def _column_set(external_id: str, value: bytes) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE archive_message SET raw_json = %s WHERE external_id = %s", [value, external_id]
        )


def test_a_damaged_frame_or_a_missing_dictionary_is_a_clear_error() -> None:
    batch_record(batch=batch(*messages(1, RAW_TRAIN_MIN)))
    frame = stored()["3"][1]
    assert isinstance(frame, bytes)

    _column_set("3", frame[: len(frame) // 2])
    with pytest.raises(Invalid, match="stored raw JSON is damaged"):
        Message.objects.get(external_id="3")
    _column_set("3", b"\x00not a frame")
    with pytest.raises(Invalid, match="neither text nor zstd"):
        Message.objects.get(external_id="3")

    # A frame naming a dictionary this store never held.
    stranger = zstandard.train_dictionary(
        4096, [f"stranger sample {n} {WORDS[n % 12]} {n * 13}".encode() for n in range(2000)]
    )
    alien = zstandard.ZstdCompressor(dict_data=stranger).compress(b'{"id": 3}')
    _column_set("3", alien)
    with pytest.raises(Invalid, match=f"dictionary {stranger.dict_id()}"):
        Message.objects.get(external_id="3")
    with pytest.raises(Invalid, match="does not hold"):
        raw_json_text(memoryview(alien))
    # The other rows still read.
    assert Message.objects.get(external_id="4").raw_json == raw(4)


def test_an_update_that_keeps_the_raw_json_keeps_its_frame() -> None:
    records = messages(1, RAW_TRAIN_MIN)
    batch_record(batch=batch(*records))
    before = stored()
    moved = [replace(r, metadata={"views": 7}) for r in records[:50]]
    result = batch_record(batch=batch(*moved))
    assert result.updated == 50
    assert stored() == before  # the frames written back as they were, not as text
    assert Message.objects.get(external_id="3").provider_metadata == {"views": 7}
    assert read_back() == {r.external_id: r.raw_json for r in records}
