"""A WireCat export that is broken is refused before anything is written, naming the file
and the line; the export command never writes into a folder holding something else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from archive.exports.format import FILES
from archive.exports.services import export_load, is_export
from archive.store.models import Account, Chat, Message
from archive.store.sink import batch_record
from archive.tags.models import Tag
from tests.factories import batch, message
from wirecat.errors import Invalid

ACCOUNT = {"id": 1, "provider": "testnet", "external_id": "acct-1", "name": "", "owner": None}
CHAT = {"id": 4, "account": 1, "external_id": "c1", "kind": "dm", "title": "", "metadata": {}}


def _message(number: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": f"msg_{number}",
        "chat": 4,
        "external_id": f"e{number}",
        "sender": None,
        "sent_at": f"2024-03-01T12:0{number}:00Z",
        "text": f"message number {number}",
        "revisions": [],
        "attachments": [],
        **extra,
    }


def _export(root: Path, **files: list[Any]) -> Path:
    """An export written by hand: `files` gives each file's lines (raw text for a string)."""
    root.mkdir()
    (root / "attachments").mkdir()
    counts = {}
    for kind in FILES:
        lines = files.get(kind, [])
        text = "".join(
            (line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines
        )
        (root / f"{kind}.jsonl").write_text(text, encoding="utf-8")
        counts[kind] = len(lines)
    manifest = {"format": "wirecat-export", "version": 1, "counts": counts}
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def _refused(root: Path) -> str:
    with pytest.raises(Invalid) as refused:
        export_load(root)
    return str(refused.value)


@pytest.mark.django_db
def test_a_broken_line_is_refused_naming_file_and_line_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    root = _export(
        tmp_path / "export",
        accounts=[ACCOUNT],
        chats=[CHAT],
        messages=[_message(1), _message(2), '{"id": "msg_3", "chat": 4, "text": "cut'],
    )
    assert is_export(root)
    assert _refused(root).startswith("messages.jsonl, line 3: not JSON")
    assert not Account.objects.exists() and not Chat.objects.exists()
    assert not Message.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("bad", "said"),
    [
        (_message(2, sent_at="yesterday"), "messages.jsonl, line 2: sent_at: not a time"),
        (_message(2, chat=99), "messages.jsonl, line 2: chat: 99 is not in chats.jsonl"),
        (_message(2, direction="sideways"), "messages.jsonl, line 2: direction: one of"),
        (
            _message(2, revisions=[{"text": 5}]),
            "messages.jsonl, line 2: revisions[0].text: not a text",
        ),
        (
            _message(2, attachments=[{"file": "attachments/" + "a" * 64, "file_name": "x"}]),
            f"messages.jsonl, line 2: attachments[0].file: attachments/{'a' * 64} is missing",
        ),
        ([1, 2], "messages.jsonl, line 2: not a JSON object"),
    ],
)
def test_each_kind_of_fault_names_its_line_and_field(tmp_path: Path, bad: Any, said: str) -> None:
    root = _export(
        tmp_path / "export", accounts=[ACCOUNT], chats=[CHAT], messages=[_message(1), bad]
    )
    assert _refused(root).startswith(said)
    assert not Message.objects.exists()


@pytest.mark.django_db
def test_a_file_cut_short_or_missing_is_refused(tmp_path: Path) -> None:
    root = _export(tmp_path / "export", accounts=[ACCOUNT], chats=[CHAT], messages=[_message(1)])
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["counts"]["messages"] = 2
    (root / "manifest.json").write_text(json.dumps(manifest))
    assert "messages.jsonl, file: 1 lines where the manifest counts 2" in _refused(root)
    (root / "notes.jsonl").unlink()
    assert _refused(root) == "notes.jsonl, file: missing from the export"
    (root / "manifest.json").unlink()
    assert not is_export(root)
    assert "manifest.json, file: missing" in _refused(root)
    assert not Message.objects.exists()


@pytest.mark.django_db
def test_a_sound_hand_written_export_is_imported_and_again_changes_nothing(
    tmp_path: Path,
) -> None:
    edited = _message(
        2,
        text="the text now",
        edited_at="2024-03-02T10:00:00Z",
        revisions=[{"text": "the text first", "edited_at": "2024-03-02T10:00:00Z"}],
        deleted_at="2024-03-03T10:00:00Z",
    )
    root = _export(
        tmp_path / "export", accounts=[ACCOUNT], chats=[CHAT], messages=[_message(1), edited]
    )
    done = export_load(root)
    assert done.messages_added == 2
    stored = Message.objects.get(external_id="e2")
    assert stored.text == "the text now" and stored.deleted_at is not None
    assert list(stored.revisions.values_list("text", flat=True)) == ["the text first"]
    again = export_load(root)
    assert (again.messages_added, again.messages_updated) == (0, 0)
    assert Message.objects.count() == 2 and stored.revisions.count() == 1


@pytest.mark.django_db
def test_export_refuses_a_folder_holding_something(tmp_path: Path) -> None:
    batch_record(batch=batch(message("m1")))
    dest = tmp_path / "busy"
    dest.mkdir()
    (dest / "mine.txt").write_text("keep me")
    with pytest.raises(CommandError, match="exists and is not an empty folder"):
        call_command("export", str(dest))
    assert sorted(p.name for p in dest.iterdir()) == ["mine.txt"]


@pytest.mark.django_db
def test_the_import_command_names_the_broken_line(tmp_path: Path) -> None:
    root = _export(
        tmp_path / "export",
        accounts=[ACCOUNT],
        chats=[CHAT, '{"id": 5, "account": 1, "external_id": "c2", "kind": "sofa"}'],
    )
    with pytest.raises(CommandError) as refused:
        call_command("import", str(root))
    assert str(refused.value).startswith("chats.jsonl, line 2: kind: one of dm, group")
    assert not Account.objects.exists()


@pytest.mark.django_db
def test_a_reference_the_notes_would_not_read_is_refused_with_their_sentence(
    tmp_path: Path,
) -> None:
    tag = {"tag": "trip", "colour": "", "on": {"ref": "planet:mars"}, "actor": None}
    root = _export(tmp_path / "export", tags=[tag])
    said = _refused(root)
    assert said.startswith("tags.jsonl, line 1:")
    assert "a typed reference such as person:12" in said and "'planet:mars'" in said
    assert not Tag.objects.exists()
