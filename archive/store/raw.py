"""A message's raw provider JSON in the store: text, or a zstd frame compressed with a
dictionary trained on its provider's messages (RawDictionary in models.py), less than half
the text's bytes. The frame names its dictionary's id, so reading needs no header of
ours: a BLOB is a frame, a TEXT is the JSON itself (rows written before compression, and
values compression would not shrink). Python only ever sees the text:
`PackedJsonTextField` unpacks what the ORM reads, `raw_json_text` what raw SQL reads."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import zstandard
from django.conf import settings
from django.db import connection, models
from django.utils import timezone

from wirecat.db.values import db_time
from wirecat.errors import Invalid, TooLarge

# A provider's first batch of at least this many non-empty raw JSONs trains its dictionary
# (fewer teach it too little); at most RAW_TRAIN_MAX of them are used.
RAW_TRAIN_MIN = 1_000
RAW_TRAIN_MAX = 5_000
# Measured on 100,000 Telegram messages of 20 chats (212 bytes of JSON each), the dictionary
# trained on the first chat's batch: a 64 KiB dictionary at level 3 packs one into 93 bytes
# (176 without a dictionary) in 2 us, unpacked in 0.8 us; training takes 0.1 s. No checksum
# in the frame (4 bytes each): SQLite keeps none for its text either.
RAW_DICT_SIZE = 64 * 1024
RAW_LEVEL = 3
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

# A dictionary's bytes by its zstd id (a hash of its content: the same id in another store,
# a restored backup's or a test's, is the same dictionary), and a dictionary row never
# changes.
_dictionaries: dict[int, bytes] = {}
# Decompressors are not safe to share between threads: each thread keeps its own.
_local = threading.local()


def _dictionary_data(dict_id: int) -> bytes:
    data = _dictionaries.get(dict_id)
    if data is None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT data FROM archive_rawdictionary WHERE dict_id = %s", [dict_id])
            row = cursor.fetchone()
        if row is None:
            raise Invalid(
                f"A message's stored raw JSON needs compression dictionary {dict_id},"
                " which this store does not hold: the store is damaged."
            )
        data = bytes(row[0])
        _dictionaries[dict_id] = data
    return data


def _decompressor(dict_id: int) -> zstandard.ZstdDecompressor:
    found: dict[int, zstandard.ZstdDecompressor] | None = getattr(_local, "decompressors", None)
    if found is None:
        found = _local.decompressors = {}
    decompressor = found.get(dict_id)
    if decompressor is None:
        if dict_id:
            dictionary = zstandard.ZstdCompressionDict(_dictionary_data(dict_id))
            decompressor = zstandard.ZstdDecompressor(dict_data=dictionary)
        else:
            decompressor = zstandard.ZstdDecompressor()
        found[dict_id] = decompressor
    return decompressor


def raw_json_text(value: str | bytes | memoryview | None) -> str:
    """The raw JSON a stored value holds: text as it is, a zstd frame decompressed with the
    dictionary it names (at most WIRECAT_IMPORT_MAX_MESSAGE_BYTES of it)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    data = bytes(value)
    if not data.startswith(ZSTD_MAGIC):
        raise Invalid("A message's stored raw JSON is damaged: it is neither text nor zstd.")
    try:
        frame = zstandard.get_frame_parameters(data)
    except zstandard.ZstdError as error:
        raise Invalid(f"A message's stored raw JSON is damaged: {error}.") from error
    most = int(settings.IMPORT_MAX_MESSAGE_BYTES)
    if frame.content_size != zstandard.CONTENTSIZE_UNKNOWN and frame.content_size > most:
        raise TooLarge(
            f"A message's stored raw JSON unpacks to {frame.content_size} bytes, more than"
            f" WIRECAT_IMPORT_MAX_MESSAGE_BYTES ({most})."
        )
    try:
        # A frame without its size (never one of ours) is unpacked into at most `most`.
        text = _decompressor(frame.dict_id).decompress(data, max_output_size=most)
        return text.decode()
    except (zstandard.ZstdError, UnicodeDecodeError) as error:
        raise Invalid(f"A message's stored raw JSON is damaged: {error}.") from error


class PackedText(str):
    """Raw JSON read from a frame, holding the frame: a row saved with it unchanged (an
    update of the message's other fields) writes the frame back rather than the text."""

    frame: bytes


class PackedJsonTextField(models.TextField):
    """A text column that may also hold a zstd frame of the text; always a str in Python.
    A new text written through the ORM (an edit's new raw JSON, rare) is stored as text."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> str:
        if isinstance(value, bytes | memoryview):
            text = PackedText(raw_json_text(value))
            text.frame = bytes(value)
            return text
        return raw_json_text(value)

    def get_prep_value(self, value: Any) -> Any:
        if isinstance(value, PackedText):
            return value.frame
        return super().get_prep_value(value)


def _as_text(text: str) -> str:
    return text


def _stored_dictionary(provider: str) -> int | None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT dict_id FROM archive_rawdictionary WHERE provider = %s"
            " ORDER BY id DESC LIMIT 1",
            [provider],
        )
        row = cursor.fetchone()
    return None if row is None else int(row[0])


def _trained(provider: str, samples: Sequence[str]) -> int | None:
    """A new dictionary for the provider trained on the batch's raw JSONs and stored, or
    None when there are too few of them or they teach zstd nothing."""
    texts = [sample.encode() for sample in samples if sample]
    if len(texts) < RAW_TRAIN_MIN:
        return None
    if len(texts) > RAW_TRAIN_MAX:
        step = -(-len(texts) // RAW_TRAIN_MAX)
        texts = texts[::step]
    try:
        trained = zstandard.train_dictionary(RAW_DICT_SIZE, texts)
    except zstandard.ZstdError:
        return None
    dict_id = int(trained.dict_id())
    data = trained.as_bytes()
    with connection.cursor() as cursor:
        # An id already taken (another provider's dictionary with the same content hash)
        # is not ours to write frames for: the batch stays text.
        cursor.execute(
            "INSERT INTO archive_rawdictionary (provider, dict_id, data, created_at)"
            " VALUES (%s, %s, %s, %s) ON CONFLICT (dict_id) DO NOTHING",
            [provider, dict_id, data, db_time(timezone.now())],
        )
        if cursor.rowcount != 1:
            return None
    _dictionaries[dict_id] = data
    return dict_id


# Compression dictionaries prepared for RAW_LEVEL once per process (240 us a compressor
# otherwise); a prepared dictionary is read-only and shared by every batch's compressor.
_prepared: dict[int, zstandard.ZstdCompressionDict] = {}


def _prepared_dictionary(dict_id: int) -> zstandard.ZstdCompressionDict:
    dictionary = _prepared.get(dict_id)
    if dictionary is None:
        dictionary = zstandard.ZstdCompressionDict(_dictionary_data(dict_id))
        dictionary.precompute_compress(level=RAW_LEVEL)
        _prepared[dict_id] = dictionary
    return dictionary


def raw_packer(provider: str, samples: Sequence[str]) -> Callable[[str], str | bytes]:
    """How this batch stores its raw JSONs, called by the sink inside its transaction: a
    zstd frame with the provider's dictionary (trained first from the batch when the
    provider has none and the batch brings at least RAW_TRAIN_MIN), else text. An empty
    value, one past WIRECAT_IMPORT_MAX_MESSAGE_BYTES and one a frame would not shrink
    stay text."""
    dict_id = _stored_dictionary(provider)
    if dict_id is None:
        dict_id = _trained(provider, samples)
    if dict_id is None:
        return _as_text
    compress = zstandard.ZstdCompressor(
        level=RAW_LEVEL,
        dict_data=_prepared_dictionary(dict_id),
        write_checksum=False,
        write_content_size=True,
        write_dict_id=True,
    ).compress
    most = int(settings.IMPORT_MAX_MESSAGE_BYTES)

    def pack(text: str) -> str | bytes:
        if not text:
            return text
        data = text.encode()
        if len(data) > most:
            return text
        packed: bytes = compress(data)
        return packed if len(packed) < len(data) else text

    return pack
