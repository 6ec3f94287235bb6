"""A Telegram export small enough to hold is parsed whole (whole_file.py): what comes out,
errors included, is exactly what streaming gives, and where it is not the common case
(a message near a cap, a broken file) the streaming reader takes over."""

from __future__ import annotations

import json
import tracemalloc
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from archive.connectors.base import FormatError, ReadOptions
from archive.connectors.telegram.export import READER
from tests.connectors.conftest import FIXTURES
from tests.connectors.test_telegram_bounds import _write_big_account

TG = FIXTURES / "telegram"
SAMPLE_FILES = sorted(TG.rglob("*.json"))


def _read(path: Path) -> tuple[list[Any], dict[str, int], str]:
    """Every item (attachments without their byte openers), the skip counts, and the
    error the read ended with ("" when none)."""
    items: list[Any] = []
    error = ""
    try:
        stream = READER.open(path, ReadOptions())
    except FormatError as exc:
        return [], {}, str(exc)
    try:
        for item in stream.items:
            message = item.message
            attachments = tuple(replace(a, content=None) for a in message.attachments)
            items.append((item.chat, replace(message, attachments=attachments), item.identities))
    except FormatError as exc:
        error = str(exc)
    return items, dict(stream.skipped), error


def _both(path: Path, settings: Any) -> tuple[Any, Any]:
    settings.IMPORT_WHOLE_FILE = 64 << 20
    whole = _read(path)
    settings.IMPORT_WHOLE_FILE = 0
    streamed = _read(path)
    return whole, streamed


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: str(p.relative_to(TG)))
def test_every_sample_reads_the_same_whole_or_streamed(path: Path, settings: Any) -> None:
    whole, streamed = _both(path, settings)
    assert whole == streamed
    assert whole[0] or whole[2]  # something was read, or the file was refused


def _chat_file(path: Path, messages: list[dict[str, Any]]) -> Path:
    path.write_text(
        json.dumps({"name": "Chat", "type": "private_group", "id": 77, "messages": messages})
    )
    return path


def _message(number: int, text: Any = None) -> dict[str, Any]:
    return {
        "id": number,
        "type": "message",
        "date": "2023-05-01T10:00:00",
        "date_unixtime": str(1682935200 + number),
        "from": "Ann",
        "from_id": "user5",
        "text": f"message {number}" if text is None else text,
    }


def test_a_message_nesting_past_the_cap_is_refused_as_streaming_refuses_it(
    tmp_path: Path, settings: Any
) -> None:
    settings.IMPORT_MAX_JSON_DEPTH = 12
    deep: Any = "core"
    for _ in range(15):
        deep = [deep]
    path = _chat_file(tmp_path / "result.json", [_message(1), _message(2), _message(3, deep)])
    whole, streamed = _both(path, settings)
    assert whole == streamed
    items, _skipped, error = whole
    assert [item[1].external_id for item in items] == ["1", "2"]
    assert "deeper than 12" in error


def test_a_value_past_the_cap_is_set_aside_as_streaming_does(tmp_path: Path, settings: Any) -> None:
    settings.IMPORT_MAX_JSON_VALUE = 2_000
    path = _chat_file(  # longer than the streaming reader's buffer: set aside whole there
        tmp_path / "result.json", [_message(1), _message(2, "long " * 30_000), _message(3)]
    )
    whole, streamed = _both(path, settings)
    assert whole == streamed
    items, _skipped, error = whole
    assert error == ""
    assert [item[1].external_id for item in items] == ["1", "2", "3"]
    assert len(items[1][1].text) < 3_000  # the first part; the whole is set aside


def test_a_broken_file_fails_where_streaming_says(tmp_path: Path, settings: Any) -> None:
    path = _chat_file(tmp_path / "result.json", [_message(n) for n in range(1, 6)])
    path.write_text(path.read_text()[:-40])  # cut inside the last message
    whole, streamed = _both(path, settings)
    assert whole == streamed
    items, _skipped, error = whole
    assert [item[1].external_id for item in items] == ["1", "2", "3", "4"]
    assert "byte" in error


def test_a_held_file_costs_bounded_memory(tmp_path: Path, settings: Any) -> None:
    """Parsed whole, a file's objects take a bounded multiple of its size (the setting's
    comment says 16x); past the setting the same file is streamed."""
    path = tmp_path / "result.json"
    _write_big_account(path, chats=3, per_chat=2500)
    size = path.stat().st_size
    settings.IMPORT_WHOLE_FILE = size
    stream = READER.open(path, ReadOptions())
    tracemalloc.start()
    try:
        count = sum(1 for _ in stream.items)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 7_500
    assert size < peak < 16 * size, f"peak {peak} bytes while holding a {size}-byte export"
