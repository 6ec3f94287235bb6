"""Telegram Desktop JSON exports at their bounds: truncated, malformed and hostile files fail
naming where, media paths never leave the export, a large export streams in bounded memory."""

from __future__ import annotations

import json
import pathlib
import shutil
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from archive.connectors.base import FormatError, ReadOptions
from archive.connectors.telegram.export import READER
from archive.store.models import Attachment, Message
from tests.connectors.telegram_support import TG, Run, msg, sha256

# --- bad input ---------------------------------------------------------------------------


def test_truncated_file_fails_with_its_position_and_keeps_earlier_batches(
    run_import: Run,
) -> None:
    path = TG / "truncated.json"
    job = run_import(path, batch_size=2)
    assert job.status == "failed"
    (error,) = job.errors
    assert error.startswith("truncated.json, ")
    assert "after message #5 (id 5)" in error
    assert f"byte {path.stat().st_size} (end of file)" in error
    assert "truncated" in error
    # Every message read before the fault is kept: 1-4 in batches, 5 written before failing.
    assert job.position == 5
    assert job.added == 5
    assert sorted(Message.objects.values_list("text", flat=True)) == [
        "five",
        "four",
        "one",
        "three",
        "two",
    ]


def test_truncated_file_raises_lazily_mid_stream() -> None:
    stream = READER.open(TG / "truncated.json", ReadOptions())
    seen = []
    with pytest.raises(FormatError) as caught:
        for item in stream.items:
            seen.append(item.message.external_id)
    assert seen == ["1", "2", "3", "4", "5"]
    assert caught.value.path.endswith("truncated.json")
    assert "byte" in caught.value.position


def test_a_date_telegram_never_wrote_is_kept_estimated(run_import: Run) -> None:
    job = run_import(TG / "bad_date.json", batch_size=2)
    assert (job.status, job.added, job.estimated, job.skipped) == ("done", 4, 1, {})
    odd = Message.objects.get(external_id="3")  # "next tuesday": the message before it
    assert odd.date_estimated
    assert odd.sent_at == Message.objects.get(external_id="2").sent_at
    assert odd.provider_metadata["date_estimated_from"] == "the message before it in the export"
    assert Message.objects.filter(date_estimated=True).count() == 1


def test_wrong_structure_fails(run_import: Run) -> None:
    job = run_import(TG / "wrong_structure.json")
    assert job.status == "failed"
    assert "`messages` is not a list" in job.errors[0]
    assert Message.objects.count() == 0


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("empty.json", b"", "empty"),
        ("list.json", b"[1, 2, 3]", "not a JSON object"),
        ("garbage.json", b'{"name": "x", oops}', "not valid JSON"),
        ("other.json", b'{"foo": {"bar": 1}}', "not a Telegram Desktop JSON export"),
        ("chats.json", b'{"chats": [1, 2]}', "`chats` is not an object"),
        ("list_of.json", b'{"chats": {"list": {"a": 1}}}', "`chats.list` is not a list"),
        (
            "notobj.json",
            b'{"type": "personal_chat", "id": 1, "messages": ["hello"]}',
            "not a JSON object",
        ),
        ("badutf8.json", b'{"type": "personal_chat", "id": 1, "name": "\xff\xfe"}', "JSON"),
        (
            "deep.json",
            b'{"type": "personal_chat", "id": 1, "messages": [{"id": 1, "poll": '
            + b"[" * 200
            + b"]" * 200
            + b"}]}",
            "nests deeper than 64 levels",
        ),
    ],
)
def test_bad_content_raises_only_format_errors(
    tmp_path: Path, name: str, content: bytes, problem: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(FormatError) as caught:
        stream = READER.open(path, ReadOptions())
        list(stream.items)
    assert problem in str(caught.value)
    assert str(caught.value).startswith(f"{name}, ")


def test_a_non_json_file_forced_as_telegram_fails(run_import: Run) -> None:
    job = run_import(TG / "not_json.txt", format_name="telegram")
    assert job.status == "failed"
    assert job.errors[0].startswith("not_json.txt, bytes 0-")
    assert "not valid JSON" in job.errors[0]


def test_media_paths_outside_the_export_are_never_read(
    run_import: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[Path] = []
    real_open = pathlib.Path.open

    def spying_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        opened.append(Path(self).resolve())
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "open", spying_open)
    job = run_import(TG / "traversal")
    monkeypatch.undo()

    assert job.status == "done", job.errors
    assert job.added == 5
    secret = TG / "outside_secret.jpg"
    assert secret.resolve() not in opened
    assert Path("/etc/passwd").resolve() not in opened
    for external_id in ("1", "2", "3", "4"):
        attachment = Attachment.objects.get(message=msg("666", external_id))
        assert attachment.path is None
        assert attachment.sha256 == ""
        assert attachment.provider_metadata["unsafe_path"] is True
    inside = Attachment.objects.get(message=msg("666", "5"))
    assert inside.sha256 == sha256(TG / "traversal" / "files" / "ok.txt")
    assert not Attachment.objects.filter(sha256=sha256(secret)).exists()
    stored = [p.name for p in Path(settings.BLOB_DIR).rglob("*") if p.is_file()]
    assert sha256(secret) not in stored
    assert job.skipped == {"media path outside the export refused": 4}


def test_a_symlink_out_of_the_export_is_not_followed(tmp_path: Path, run_import: Run) -> None:
    export = tmp_path / "export"
    (export / "files").mkdir(parents=True)
    outside = tmp_path / "private.txt"
    outside.write_text("private")
    (export / "files" / "link.txt").symlink_to(outside)
    shutil.copy(TG / "traversal" / "result.json", export / "result.json")
    text = (export / "result.json").read_text().replace("files/ok.txt", "files/link.txt")
    (export / "result.json").write_text(text)
    job = run_import(export)
    assert job.status == "done", job.errors
    linked = Attachment.objects.get(message=msg("666", "5"))
    assert linked.path is None
    assert linked.provider_metadata["not_included"] is True


# --- streaming ---------------------------------------------------------------------------


def _write_big_account(path: Path, chats: int, per_chat: int) -> None:
    """A whole-account export written piece by piece (never held whole in memory)."""
    filler = "lorem ipsum dolor sit amet " * 20
    with path.open("w") as out:
        out.write('{"about": "big", "personal_information": {"user_id": 1, "first_name": "Me"},')
        out.write(' "chats": {"about": "all", "list": [')
        for chat in range(chats):
            if chat:
                out.write(",")
            out.write(f'{{"name": "chat {chat}", "type": "private_group", "id": {chat + 10},')
            out.write(' "messages": [')
            for n in range(per_chat):
                if n:
                    out.write(",")
                message = {
                    "id": n + 1,
                    "type": "message",
                    "date": "2023-01-01T00:00:00",
                    "date_unixtime": str(1672531200 + n),
                    "from": "Someone",
                    "from_id": f"user{2 + n % 7}",
                    "text": [f"{n} ", {"type": "bold", "text": filler}],
                }
                out.write(json.dumps(message))
            out.write("]}")
        out.write("]}}")


def test_large_exports_are_streamed_with_bounded_memory(tmp_path: Path, settings: Any) -> None:
    path = tmp_path / "result.json"
    _write_big_account(path, chats=3, per_chat=2500)
    size = path.stat().st_size
    assert size > 5_000_000
    settings.IMPORT_WHOLE_FILE = size - 1  # past the size parsed whole: streamed
    stream = READER.open(path, ReadOptions())
    assert stream.total is None
    count = 0
    chats: set[str] = set()
    tracemalloc.start()
    try:
        for item in stream.items:
            count += 1
            chats.add(item.chat.external_id)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 7_500
    assert chats == {"10", "11", "12"}
    assert peak < size // 5, f"peak {peak} bytes while reading a {size}-byte export"
