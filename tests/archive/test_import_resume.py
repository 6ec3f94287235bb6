"""An import killed with SIGKILL at any point and started again ends exactly as an
uninterrupted run: no loss, no duplicates. Real `wirecat import` processes, real kills."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import sqlean

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = 2400
BATCH = 100


def build_export(folder: Path) -> Path:
    """A Telegram Desktop single-chat export with replies, edits, service lines and files."""
    (folder / "files").mkdir(parents=True)
    messages: list[dict[str, Any]] = []
    for i in range(1, MESSAGES + 1):
        stamp = 1_600_000_000 + i * 37
        if i % 97 == 0:
            messages.append(
                {
                    "id": i,
                    "type": "service",
                    "date": "2020-09-13T12:26:40",
                    "date_unixtime": str(stamp),
                    "actor": "Bob",
                    "actor_id": "user2",
                    "action": "pin_message",
                    "message_id": i - 1,
                    "text": "",
                }
            )
            continue
        message: dict[str, Any] = {
            "id": i,
            "type": "message",
            "date": "2020-09-13T12:26:40",
            "date_unixtime": str(stamp),
            "from": "Alice" if i % 3 else "Bob",
            "from_id": "user1" if i % 3 else "user2",
            "text": f"line {i} about resuming imports",
        }
        if i % 5 == 0:
            message["reply_to_message_id"] = i - 2
        if i % 11 == 0:
            message["edited"] = "2020-09-13T13:00:00"
            message["edited_unixtime"] = str(stamp + 60)
        if i % 200 == 0:
            name = f"files/doc_{i}.txt"
            (folder / name).write_text(f"attachment bytes {i}")
            message["file"] = name
            message["mime_type"] = "text/plain"
        messages.append(message)
    export = folder / "result.json"
    export.write_text(
        json.dumps(
            {"name": "Resume test", "type": "private_group", "id": 777, "messages": messages},
            ensure_ascii=False,
            indent=1,
        )
    )
    return export


def command(state: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "WIRECAT_STATE_DIR": str(state), "WIRECAT_DB": "store.db"}
    env.pop("WIRECAT_TEST_DB", None)
    return subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def run(state: Path, *args: str) -> None:
    proc = command(state, *args)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode(errors="replace")[-3000:]


def position(state: Path) -> int:
    db = state / "store.db"
    if not db.exists():
        return -1
    try:
        conn = sqlean.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute("SELECT max(position) FROM archive_importjob").fetchone()
        finally:
            conn.close()
    except (sqlean.OperationalError, sqlite3.OperationalError):
        return -1
    return int(row[0] or 0) if row else 0


def snapshot(state: Path) -> dict[str, Any]:
    conn = sqlean.connect(str(state / "store.db"))
    try:
        messages = conn.execute(
            "SELECT c.external_id, m.external_id, m.text, i.external_id, m.sent_at, "
            "p.external_id, m.edited_at, m.deleted_at, m.kind, m.direction "
            "FROM archive_message m JOIN archive_chat c ON c.id = m.chat_id "
            "LEFT JOIN archive_identity i ON i.id = m.sender_id "
            "LEFT JOIN archive_message p ON p.id = m.reply_to_id ORDER BY 1, 2"
        ).fetchall()
        attachments = conn.execute(
            "SELECT m.external_id, a.external_id, a.sha256, a.path FROM archive_attachment a "
            "JOIN archive_message m ON m.id = a.message_id ORDER BY 1, 2"
        ).fetchall()
        counts = {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in (
                "archive_message",
                "archive_messagerevision",
                "archive_attachment",
                "archive_chat",
                "archive_identity",
                "archive_account",
            )
        }
        jobs = conn.execute(
            "SELECT status, position, added, updated, unchanged FROM archive_importjob"
        ).fetchall()
        for table in ("message_fts", "message_trigram"):
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
        fts = conn.execute(
            "SELECT count(*) FROM message_fts WHERE message_fts MATCH 'resuming'"
        ).fetchone()[0]
    finally:
        conn.close()
    return {
        "messages": messages,
        "attachments": attachments,
        "counts": counts,
        "jobs": jobs,
        "fts": fts,
    }


def test_killed_import_resumes_to_the_same_result(tmp_path: Path) -> None:
    export = build_export(tmp_path / "export")
    reference = tmp_path / "reference"
    run(reference, "migrate", "-v0")
    run(reference, "import", str(export), "--batch-size", str(BATCH))
    expected = snapshot(reference)
    assert expected["counts"]["archive_message"] == MESSAGES
    assert expected["jobs"] == [("done", MESSAGES, MESSAGES, 0, 0)]

    killed = tmp_path / "killed"
    run(killed, "migrate", "-v0")
    kills = 0
    for threshold in (1, 500, 1300, 2000):
        proc = command(killed, "import", str(export), "--batch-size", str(BATCH))
        deadline = time.monotonic() + 120
        while position(killed) < threshold and proc.poll() is None:
            assert time.monotonic() < deadline, "import made no progress"
            time.sleep(0.005)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills >= 3, "the import finished before it could be killed; make the export bigger"
    assert 0 < position(killed) < MESSAGES
    run(killed, "import", str(export), "--batch-size", str(BATCH))
    got = snapshot(killed)
    assert got["messages"] == expected["messages"]
    assert got["attachments"] == expected["attachments"]
    assert got["counts"] == expected["counts"]
    assert got["fts"] == expected["fts"]
    # One job, resumed each time: its counters add up to the uninterrupted run's.
    assert got["jobs"] == expected["jobs"]
