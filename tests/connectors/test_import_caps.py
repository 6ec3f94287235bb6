"""Every cap on what one import may cost, at its edge, on real formats through the real
import: the JSON guard against a byte-by-byte reference (whatever the chunking), strings set
aside whole, the zip checks (declared and while streaming), the import's bytes and the free
disk, text kept whole, and sources that yield nothing."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from archive.connectors.base import FormatError, Limits
from archive.connectors.json_guard import JsonGuard
from archive.imports.models import ImportJob
from archive.store.blobs import blob_open
from archive.store.models import Attachment, Message
from tests.connectors.conftest import FIXTURES
from tests.connectors.hostile_support import (
    MIB,
    TG_CHAT_HEAD,
    Member,
    deflated,
    repeated,
    too_deep_at,
    write_zip,
)
from tests.fixtures.imessage.chatdb import ChatDb

Run = Callable[..., ImportJob]

# --- the JSON guard --------------------------------------------------------------------------

# Outside strings: structure; inside: brackets, escaped quotes and backslashes (a backslash
# outside a string is a lexical error at which the parser stops: nothing after it is read).
_OUTSIDE = st.sampled_from([b"[", b"]", b"{", b"}", b"x", b" ", b",", b":", b"1", b"\n"])
_INSIDE = st.sampled_from([b"[", b"]", b"{", b"}", b'\\"', b"\\\\", b"\\n", b"x", b" "])
_STRING = st.lists(_INSIDE, max_size=12).map(lambda inner: b'"' + b"".join(inner) + b'"')
_PIECES = st.one_of(_OUTSIDE, _OUTSIDE, _STRING)
_OPEN_STRING = st.lists(_INSIDE, max_size=12).map(lambda inner: b'"' + b"".join(inner))


def guarded(data: bytes, sizes: list[int], limits: Limits) -> tuple[bytes, FormatError | None]:
    """What a guard over `data` hands on, read in chunks of `sizes` (cycled), and its error."""
    guard = JsonGuard(io.BytesIO(data), "test.json", limits=limits)
    out = bytearray()
    turn = 0
    try:
        while piece := guard.read(sizes[turn % len(sizes)]):
            out += piece
            turn += 1
    except FormatError as exc:
        return bytes(out), exc
    return bytes(out), None


@hypothesis_settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(_PIECES, max_size=300),
    last=st.one_of(st.just(b""), _OPEN_STRING),  # a file may end inside a string
    sizes=st.lists(st.integers(min_value=1, max_value=70), min_size=1, max_size=8),
)
def test_the_guard_refuses_nesting_exactly_where_a_byte_by_byte_walk_does(
    pieces: list[bytes], last: bytes, sizes: list[int]
) -> None:
    """Brackets inside strings, escaped quotes and backslashes, chunk ends anywhere: the
    guard's C-speed scan cuts at the very byte the reference walk finds, and hands on every
    byte before it unchanged."""
    data = b"".join(pieces) + last
    limits = Limits(json_depth=5, json_value_bytes=1 << 30)
    out, error = guarded(data, sizes, limits)
    offset = too_deep_at(data, 5)
    if offset is None:
        assert error is None
        assert out == data
    else:
        assert error is not None
        assert error.position == f"byte {offset}"
        assert "WIRECAT_IMPORT_MAX_JSON_DEPTH" in error.problem
        assert out == data[:offset]


_TEXT = st.text(alphabet=st.sampled_from(list('ab "\\\n\té雪😀\x01/[}')), max_size=300)
_JSON = st.recursive(
    _TEXT | st.integers(-5, 10**6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)
_KEPT = re.compile("\x00wirecat-kept:([A-Za-z0-9_-]+)\x00")


def _restored(value: object) -> object:
    """`value` as the parser got it, each string set aside replaced by its spill file."""
    if isinstance(value, str) and (found := _KEPT.search(value)):
        assert found.end() == len(value)
        spill = Path(django_settings.STATE_DIR) / "import-spill" / str(os.getpid())
        whole = (spill / f"{found[1]}.txt").read_text(encoding="utf-8")
        assert whole.startswith(value[: found.start()])
        return whole
    if isinstance(value, list):
        return [_restored(item) for item in value]
    if isinstance(value, dict):
        return {_restored(key): _restored(item) for key, item in value.items()}
    return value


@hypothesis_settings(max_examples=300, deadline=None)
@given(
    document=_JSON,
    ascii_only=st.booleans(),
    cap=st.sampled_from([8, 30, 1000]),
    sizes=st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=3),
)
def test_strings_set_aside_come_back_whole_whatever_the_chunking(
    document: object, ascii_only: bool, cap: int, sizes: list[int]
) -> None:
    """Escapes, surrogate pairs and multi-byte characters cut at any chunk end: what the
    parser gets, its strings set aside restored from their files, is the document."""
    data = json.dumps(document, ensure_ascii=ascii_only).encode()
    out, error = guarded(data, sizes, Limits(json_value_bytes=cap))
    assert error is None
    assert _restored(json.loads(out)) == document


def test_a_long_number_is_refused_naming_the_setting() -> None:
    data = b'{"n": ' + b"7" * 300_000 + b"}"
    _out, error = guarded(data, [65536], Limits(json_value_bytes=100_000))
    assert error is not None
    assert error.position == "byte 6"
    assert (
        error.problem == "a number or literal longer than 97.7 KiB (WIRECAT_IMPORT_MAX_JSON_VALUE)"
    )


# A string of 3 MiB with everything that must not be cut: escapes, surrogate pairs written
# as escapes, and multi-byte UTF-8, so every chunk end and piece end falls somewhere awkward.
_AWKWARD = 'plain é ü 雪 😀 \\" \\\\ \\n \\t \\u00e9 \\ud83d\\ude00 \\/ end '


def _long_string() -> tuple[bytes, str]:
    raw = (_AWKWARD * (3 * MIB // len(_AWKWARD.encode()))).encode()
    return raw, json.loads(b'"' + raw + b'"')


@pytest.mark.parametrize("size", [65536, 1000, 4099])
def test_a_long_string_is_set_aside_whole_and_the_parser_gets_its_first_part(
    size: int, settings: object
) -> None:
    raw, text = _long_string()
    data = b'{"messages": [{"id": 1, "text": "' + raw + b'", "after": true}]}'
    out, error = guarded(data, [size], Limits())
    assert error is None
    handed = json.loads(out)["messages"][0]
    assert handed["after"] is True
    first, _, rest = handed["text"].partition("\x00wirecat-kept:")
    assert text.startswith(first) and 100_000 < len(first.encode()) <= 256 << 10
    assert rest.endswith("\x00")
    spilled = Path(settings.STATE_DIR).rglob(f"{rest[:-1]}.txt")  # type: ignore[attr-defined]
    assert next(spilled).read_text(encoding="utf-8", errors="surrogatepass") == text


def test_a_huge_telegram_text_is_kept_whole_as_an_attachment(
    run_import: Run, tmp_path: Path
) -> None:
    raw, text = _long_string()
    export = tmp_path / "result.json"
    export.write_bytes(TG_CHAT_HEAD + b'"' + raw + b'"}]}')
    job = run_import(export)
    assert job.status == "done", job.errors
    message = Message.objects.get(external_id="2")
    assert text.startswith(message.text) and "wirecat-kept" not in message.text
    assert message.provider_metadata["kept_whole"]["strings"] == 1
    (attachment,) = Attachment.objects.filter(message=message)
    assert attachment.file_name == "message.txt"
    with blob_open(attachment.path) as stored:
        assert stored.read() == text.encode("utf-8", "surrogatepass")


def test_one_message_of_too_many_values_is_refused(
    run_import: Run, tmp_path: Path, settings: object
) -> None:
    settings.IMPORT_MAX_MESSAGE_VALUES = 1000  # type: ignore[attr-defined]
    export = tmp_path / "result.json"
    export.write_bytes(TG_CHAT_HEAD + b"[" + b'"a",' * 2000 + b'"a"]}]}')
    job = run_import(export)
    assert job.status == "failed"
    assert (
        "one item holds more than 1,000 JSON values (WIRECAT_IMPORT_MAX_MESSAGE_VALUES)"
        in (job.errors[0])
    )
    assert job.added == 1  # the message before it


def test_one_message_spanning_too_many_bytes_is_refused(
    run_import: Run, tmp_path: Path, settings: object
) -> None:
    settings.IMPORT_MAX_MESSAGE_BYTES = 1 * MIB  # type: ignore[attr-defined]
    export = tmp_path / "result.json"
    many = b"[" + b",".join([b'"' + b"w" * 900_000 + b'"'] * 4) + b"]"
    export.write_bytes(TG_CHAT_HEAD + many + b"}]}")
    job = run_import(export)
    assert job.status == "failed"
    assert job.errors[0].startswith("result.json, byte ")
    assert (
        "one message spans more than 1 MiB of JSON (WIRECAT_IMPORT_MAX_MESSAGE_BYTES)"
        in (job.errors[0])
    )


# --- zips ------------------------------------------------------------------------------------

CHAT = b"[02/01/2024, 10:00:00] Alice: hello\n[02/01/2024, 10:01:00] Bob: hi\n"


def test_a_zip_member_declared_too_large_is_refused_unread(
    run_import: Run, tmp_path: Path, settings: object
) -> None:
    settings.IMPORT_MAX_ZIP_MEMBER = 4 * MIB  # type: ignore[attr-defined]
    member = repeated("_chat.txt", b"a", 5, head=CHAT)  # 5 MiB: its size is looked at first
    export = write_zip(tmp_path / "chat.zip", [member])
    job = run_import(export)
    assert job.status == "failed"
    assert job.errors == [
        "chat.zip, member _chat.txt: inflates to 5.0 MiB, more than 4 MiB "
        "(WIRECAT_IMPORT_MAX_ZIP_MEMBER)"
    ]


def test_a_zip_member_inflating_more_than_its_header_says_is_stopped_while_streaming(
    run_import: Run, tmp_path: Path
) -> None:
    bomb = repeated("_chat.txt", b"\x00", 64, head=CHAT)  # 64 MiB in 66 KB
    # Its header claims 150 times its compressed size, within the ratio: the lie is caught
    # by counting what actually comes out.
    lying = Member(bomb.name, bomb.data, 150 * len(bomb.data), bomb.crc)
    export = write_zip(tmp_path / "chat.zip", [lying])
    job = run_import(export)
    assert job.status == "failed"
    (error,) = job.errors
    assert error.startswith("chat.zip, member _chat.txt, byte ")
    assert "more than 200 times (WIRECAT_IMPORT_MAX_ZIP_RATIO), although its header" in error


def test_a_zip_member_claiming_more_compressed_bytes_than_the_zip_has(
    run_import: Run, tmp_path: Path
) -> None:
    export = write_zip(tmp_path / "chat.zip", [deflated("_chat.txt", CHAT + b"x" * (2 * MIB))])
    data = bytearray(export.read_bytes())
    central = data.rindex(b"PK\x01\x02")
    data[central + 20 : central + 24] = (10 * MIB).to_bytes(4, "little")  # compressed size
    export.write_bytes(bytes(data))
    job = run_import(export, format_name="whatsapp")
    assert job.status == "failed"
    assert "member _chat.txt: claims 10 MiB of compressed data in a zip of" in job.errors[0]


# --- the whole import --------------------------------------------------------------------------


def test_an_import_larger_than_the_cap_is_refused_before_writing(
    run_import: Run, settings: object
) -> None:
    settings.IMPORT_MAX_BYTES = 1000  # type: ignore[attr-defined]
    job = run_import(FIXTURES / "telegram" / "group_2023.json")
    assert job.status == "failed"
    (error,) = job.errors
    assert error.startswith("group_2023.json, the whole export: holds ")
    assert error.endswith("more than one import may read (1000 bytes, WIRECAT_IMPORT_MAX_BYTES)")
    assert Message.objects.count() == 0


def test_an_import_the_disk_has_no_room_for_is_refused_before_writing(
    run_import: Run, settings: object
) -> None:
    whole_disk = shutil.disk_usage(settings.STATE_DIR).total  # type: ignore[attr-defined]
    settings.IMPORT_DISK_MARGIN = whole_disk  # type: ignore[attr-defined]
    job = run_import(FIXTURES / "telegram" / "group_2023.json")
    assert job.status == "failed"
    (error,) = job.errors
    assert error.startswith(f"group_2023.json: the state folder {settings.STATE_DIR} has ")  # type: ignore[attr-defined]
    assert "(WIRECAT_IMPORT_DISK_MARGIN). Free some space" in error
    assert Message.objects.count() == 0


def test_a_long_whatsapp_message_is_kept_whole_and_nothing_set_aside_is_left(
    run_import: Run, tmp_path: Path, settings: object
) -> None:
    settings.IMPORT_MAX_TEXT = 5_000  # type: ignore[attr-defined]
    body = [f"line {n} of a long message, ünïcödé 😀" for n in range(1_000)]
    export = tmp_path / "WhatsApp Chat with Bob.txt"
    export.write_text(
        "[02/01/2024, 10:00:00] Bob: " + "\n".join(body) + "\n[02/01/2024, 10:05:00] Alice: ok\n",
        encoding="utf-8",
    )
    job = run_import(export, batch_size=1)
    assert job.status == "done", job.errors
    whole = "\n".join(body)
    long = Message.objects.get(text__startswith="line 0 ")
    assert whole.startswith(long.text) and 4_900 < len(long.text) <= 5_000
    assert long.provider_metadata["kept_whole"]["text_characters"] == len(whole)
    (attachment,) = Attachment.objects.filter(message=long)
    assert attachment.file_name == "message.txt"
    with blob_open(attachment.path) as stored:
        assert stored.read().decode() == whole
    assert hashlib.sha256(whole.encode()).hexdigest() == attachment.sha256
    spill = Path(settings.STATE_DIR) / "import-spill"  # type: ignore[attr-defined]
    assert not spill.exists() or not any(spill.iterdir())


# --- sources that yield nothing ---------------------------------------------------------------


def test_a_slack_export_without_day_files_is_an_error(run_import: Run, tmp_path: Path) -> None:
    export = tmp_path / "slack"
    export.mkdir()
    (export / "channels.json").write_text(json.dumps([{"id": "C1", "name": "general"}]))
    (export / "users.json").write_text("[]")
    job = run_import(export)
    assert job.status == "failed"
    assert job.errors == [
        "slack, the whole export: lists conversations, but none has a folder of day files "
        "(YYYY-MM-DD.json): nothing to import"
    ]
    with pytest.raises(CommandError, match="1 of 1 imports did not finish"):
        call_command("import", str(export), "--restart", stdout=io.StringIO())


def test_a_slack_zip_whose_day_files_hold_no_message_is_an_error(
    run_import: Run, tmp_path: Path
) -> None:
    members = [
        deflated("channels.json", json.dumps([{"id": "C1", "name": "general"}]).encode()),
        deflated("general/2024-01-02.json", b"[]"),
        deflated("general/2024-01-03.json", b'[{"type": "not a message"}]'),
    ]
    job = run_import(write_zip(tmp_path / "slack.zip", members))
    assert job.status == "failed"
    assert job.errors == [
        "slack.zip, the whole export: its 2 day files hold no message (passed over: "
        "1 Slack item of type 'not a message'): nothing to import"
    ]


def test_an_empty_messages_database_is_an_error(run_import: Run, tmp_path: Path) -> None:
    database = ChatDb(tmp_path / "chat.db")
    database.db.commit()
    database.db.close()
    job = run_import(tmp_path / "chat.db")
    assert job.status == "failed"
    assert job.errors == [
        "chat.db, the whole database: its message table holds no message: nothing to import"
    ]


def _words(n: int) -> str:
    return " ".join(hashlib.sha256(f"{n}-{k}".encode()).hexdigest() for k in range(16))


def test_a_big_slack_day_file_is_streamed(run_import: Run, tmp_path: Path) -> None:
    """Past 8 MiB a day file is read item by item; what it holds comes through the same."""
    messages = [
        {
            "type": "message",
            "user": "U1",
            "text": f"message {n} " + _words(n),
            "ts": f"{1704189600 + n}.000100",
        }
        for n in range(9_000)
    ]
    day = json.dumps(messages).encode()
    assert len(day) > 8 * MIB
    members = [
        deflated("channels.json", json.dumps([{"id": "C1", "name": "general"}]).encode()),
        deflated("general/2024-01-02.json", day),
    ]
    job = run_import(write_zip(tmp_path / "slack.zip", members))
    assert job.status == "done", job.errors
    assert job.added == 9_000
    assert Message.objects.filter(text__startswith="message 8999 ").count() == 1
