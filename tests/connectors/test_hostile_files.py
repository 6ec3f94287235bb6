"""Small files built to exhaust memory, imported for real (the import service, its reader
forked as in `wirecat import`) in a child process whose address space is capped at what a
sound import of a small export reaches plus 300 MB (RLIMIT_AS, inherited by the reader):
each ends in a clear error naming the file, the place and the setting, or, for a big but
legitimate message, in success with the text kept whole; and the most resident memory of
the import and its reader stays under 300 MB.

Built on the fly in tmp_path (hostile_support.py): the compressed ones are a few MB."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.connectors.hostile_support import (
    MIB,
    TG_CHAT_HEAD,
    Run,
    deep_json,
    discord_deep,
    import_in_child,
    mbox_with_attachment,
    migrated,
    slack_spaces_zip,
    telegram_big_message,
    telegram_deep,
    too_deep_at,
    whatsapp_long_line,
    whatsapp_nul_zip,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PEAK = 300 * MIB  # what any import may hold resident, whatever the file


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated state folder, copied for each test."""
    return migrated(tmp_path_factory.mktemp("template"))


@pytest.fixture(scope="module")
def limit(template: Path, tmp_path_factory: pytest.TempPathFactory) -> int:
    """The address space a sound import of a small export reaches (the interpreter, Django,
    SQLite, the reader's pipe thread), plus 300 MB."""
    state = tmp_path_factory.mktemp("baseline")
    shutil.copytree(template, state, dirs_exist_ok=True)
    baseline = import_in_child(state, FIXTURES / "telegram" / "group_2023.json")
    assert baseline.status == "done", baseline.output
    print(
        f"\nbaseline: VmPeak {baseline.vm_peak / MIB:.0f} MB, RSS {baseline.peak_rss / MIB:.0f} MB"
    )
    return baseline.vm_peak + PEAK


@pytest.fixture
def state(template: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "import-state"  # (tmp_path / "state" is every test's own)
    shutil.copytree(template, folder)
    return folder


def bounded(run: Run, name: str) -> None:
    print(f"\n{name}: peak RSS {run.peak_rss / MIB:.0f} MB, VmPeak {run.vm_peak / MIB:.0f} MB")
    assert run.status != "crashed", run.output
    assert run.peak_rss < PEAK, run.output


def test_telegram_text_of_100000_nested_brackets(state: Path, tmp_path: Path, limit: int) -> None:
    export = telegram_deep(tmp_path / "deep.json")
    assert export.stat().st_size < 250_000
    run = import_in_child(state, export, limit=limit)
    bounded(run, "telegram deep")
    assert run.status == "failed"
    # The `[` 65 levels deep, in the second message's text, refused before the parser saw
    # it; the message before it is kept.
    offset = too_deep_at(export.read_bytes())
    assert offset is not None and offset > len(TG_CHAT_HEAD)
    assert run.error == (
        f"deep.json, byte {offset}: the JSON nests deeper than 64 levels "
        "(WIRECAT_IMPORT_MAX_JSON_DEPTH)"
    )
    assert run.added == 1


@pytest.mark.parametrize("wrapped", [True, False], ids=["object", "bare array"])
def test_any_deep_json_forced_as_telegram(
    state: Path, tmp_path: Path, limit: int, wrapped: bool
) -> None:
    export = deep_json(tmp_path / "any.json", wrapped=wrapped)
    run = import_in_child(state, export, format_name="telegram", limit=limit)
    bounded(run, f"any deep JSON as telegram ({'object' if wrapped else 'array'})")
    assert run.status == "failed"
    if wrapped:
        assert run.error == (
            f"any.json, byte {too_deep_at(export.read_bytes())}: the JSON nests deeper than 64"
            " levels (WIRECAT_IMPORT_MAX_JSON_DEPTH)"
        )
    else:  # what comes before the limit already says it is no Telegram export
        assert run.error == "any.json, byte 0: not a JSON object, so not a Telegram Desktop export"


def test_discord_embeds_of_100000_nested_brackets(state: Path, tmp_path: Path, limit: int) -> None:
    export = discord_deep(tmp_path / "channel.json")
    run = import_in_child(state, export, limit=limit)  # detected as Discord, then refused
    bounded(run, "discord deep")
    assert run.status == "failed"
    assert run.error == (
        f"channel.json, byte {too_deep_at(export.read_bytes())}: the JSON nests deeper than 64"
        " levels (WIRECAT_IMPORT_MAX_JSON_DEPTH)"
    )


def test_whatsapp_zip_inflating_to_2_gb_of_nul(state: Path, tmp_path: Path, limit: int) -> None:
    export = whatsapp_nul_zip(tmp_path / "WhatsApp Chat - Bob.zip")
    assert export.stat().st_size < 3 * MIB
    run = import_in_child(state, export, limit=limit)
    bounded(run, "whatsapp zip bomb")
    assert run.status == "failed"
    assert run.error.startswith("WhatsApp Chat - Bob.zip, member _chat.txt: inflates 2.0 MiB to")
    assert "(WIRECAT_IMPORT_MAX_ZIP_RATIO)" in run.error


def test_slack_zip_with_a_day_file_of_2_gb_of_spaces(
    state: Path, tmp_path: Path, limit: int
) -> None:
    export = slack_spaces_zip(tmp_path / "slack.zip")
    assert export.stat().st_size < 3 * MIB
    run = import_in_child(state, export, limit=limit)
    bounded(run, "slack zip of spaces")
    assert run.returncode == 1 and run.status == "failed"
    assert run.error.startswith("slack.zip, member general/2024-01-02.json: inflates 2.0 MiB")
    assert "(WIRECAT_IMPORT_MAX_ZIP_RATIO)" in run.error


def test_a_50_mb_telegram_message_is_kept_whole(state: Path, tmp_path: Path, limit: int) -> None:
    export, text = telegram_big_message(tmp_path / "big.json")
    run = import_in_child(state, export, limit=limit)
    bounded(run, "telegram 50 MB message")
    assert run.status == "done", run.output
    assert run.added == 3
    with sqlite3.connect(state / "wirecat.db") as db:
        (message_id, stored) = db.execute(
            "SELECT id, text FROM archive_message WHERE external_id = '2'"
        ).fetchone()
        files = db.execute(
            "SELECT file_name, sha256, path FROM archive_attachment WHERE message_id = ?",
            (message_id,),
        ).fetchall()
    assert 100_000 < len(stored) < 300_000 and text.startswith(stored)  # its first part
    ((name, sha256, path),) = files
    whole = text.encode()
    assert name == "message.txt" and sha256 == hashlib.sha256(whole).hexdigest()
    assert (state / path).read_bytes() == whole
    assert not list((state / "import-spill").rglob("*.txt"))  # nothing set aside is left


def test_a_100_mb_whatsapp_line(state: Path, tmp_path: Path, limit: int) -> None:
    export = whatsapp_long_line(tmp_path / "WhatsApp Chat with Bob.txt")
    run = import_in_child(state, export, limit=limit)
    bounded(run, "whatsapp 100 MB line")
    assert run.status == "failed"
    assert run.error == (
        "WhatsApp Chat with Bob.txt, line 2: the line is longer than 16 MiB "
        "(WIRECAT_IMPORT_MAX_LINE)"
    )


def test_a_30_mb_mbox_attachment_streams(state: Path, tmp_path: Path, limit: int) -> None:
    export, payload = mbox_with_attachment(tmp_path / "big.mbox")
    run = import_in_child(state, export, limit=limit)
    bounded(run, "mbox 30 MB attachment")
    assert run.status == "done", run.output
    assert run.added == 2
    with sqlite3.connect(state / "wirecat.db") as db:
        rows = db.execute(
            "SELECT m.text, a.file_name, a.size, a.sha256 FROM archive_attachment a"
            " JOIN archive_message m ON m.id = a.message_id"
        ).fetchall()
    assert rows == [("Here it is.", "big.bin", len(payload), hashlib.sha256(payload).hexdigest())]
