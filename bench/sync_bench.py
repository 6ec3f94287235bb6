"""Sync benchmark: real chat lines served by a local Discord REST server, synced through a
real Celery worker, against the importer's rate for the same messages.

    python bench/sync_bench.py [--messages 200000] [--channels 20] [--keep DIR]

The messages (the real lines of ../shared/corpora/ubuntu-irc, nicks as authors, gold reply
links as replies) are spread over channels of one guild and served by the Discord server of
the tests (tests/providers/discord_api.py) on loopback. A fresh store is migrated, the bot
connected, and a worker started on the embedded SQLite broker; `account_sync` is queued
again each time a run ends on its budget (45 s or 20,000 messages), until one ends done.
Time runs from the first job queued to the last run's end. The same messages, written as
DiscordChatExporter files (one per channel), are then imported with `wirecat import` into
another fresh store. Prints both rates and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from celery import Celery  # noqa: E402
from make_telegram_export import LINE, logs, user_id  # noqa: E402

from tests.providers.discord_api import GUILD, TOKEN, DiscordApi  # noqa: E402

QUEUES = "celery,sync,index,delivery"
BASE = datetime(2024, 1, 1, tzinfo=UTC)
DISCORD_EPOCH_MS = 1_420_070_400_000


def snowflake(at: datetime, sequence: int) -> str:
    return str(((int(at.timestamp() * 1000) - DISCORD_EPOCH_MS) << 22) | (sequence & 0x3FFFFF))


def corpus_messages(count: int, channels: int) -> dict[str, list[dict[str, Any]]]:
    """`count` messages of real lines, over `channels` channels, as Discord's REST API
    answers them (ids ascending)."""
    by_channel: dict[str, list[dict[str, Any]]] = {}
    made = 0
    serial = 0
    while made < count:
        for _, lines, parents in logs():
            channel = str(3_100_000_000_000_000_000 + (serial % channels))
            serial += 1
            ids: dict[int, str] = {}
            for index, line in enumerate(lines):
                match = LINE.match(line)
                if match is None or not (match.group(3) or match.group(4)):
                    continue
                nick = match.group(3) or match.group(4)
                at = BASE + timedelta(seconds=made * 7)
                message_id = snowflake(at, made)
                ids[index] = message_id
                message: dict[str, Any] = {
                    "id": message_id,
                    "type": 0,
                    "channel_id": channel,
                    "author": {"id": str(user_id(nick)), "username": nick, "global_name": None},
                    "content": match.group(5),
                    "timestamp": at.isoformat(),
                    "edited_timestamp": None,
                    "attachments": [],
                    "embeds": [],
                    "mentions": [],
                }
                parent = parents.get(index)
                if parent is not None and parent in ids:
                    message["type"] = 19
                    message["message_reference"] = {
                        "message_id": ids[parent],
                        "channel_id": channel,
                    }
                by_channel.setdefault(channel, []).append(message)
                made += 1
                if made >= count:
                    break
            if made >= count:
                break
    for messages in by_channel.values():
        messages.sort(key=lambda m: int(m["id"]))
    return by_channel


def exporter_file(folder: Path, channel: str, messages: list[dict[str, Any]]) -> Path:
    """The same channel as DiscordChatExporter writes it."""
    path = folder / f"channel-{channel}.json"
    rows = []
    for m in messages:
        row: dict[str, Any] = {
            "id": m["id"],
            "type": "Reply" if m["type"] == 19 else "Default",
            "timestamp": m["timestamp"],
            "timestampEdited": None,
            "isPinned": False,
            "content": m["content"],
            "author": {
                "id": m["author"]["id"],
                "name": m["author"]["username"],
                "discriminator": "0000",
                "isBot": False,
            },
            "attachments": [],
            "embeds": [],
            "stickers": [],
            "reactions": [],
            "mentions": [],
        }
        if "message_reference" in m:
            row["reference"] = {
                "messageId": m["message_reference"]["message_id"],
                "channelId": channel,
                "guildId": GUILD["id"],
            }
        rows.append(row)
    path.write_text(
        json.dumps(
            {
                "guild": {"id": GUILD["id"], "name": GUILD["name"]},
                "channel": {"id": channel, "type": "GuildTextChat", "name": f"c{channel[-3:]}"},
                "messages": rows,
                "messageCount": len(rows),
            }
        )
    )
    return path


def manage(state: Path, *args: str, **popen: Any) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "WIRECAT_STATE_DIR": str(state)}
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, env=env, check=True, **popen
    )


def runs(state: Path) -> list[tuple[str, str | None, int]]:
    db = sqlite3.connect(f"file:{state / 'wirecat.db'}?mode=ro", uri=True)
    try:
        return db.execute(
            "SELECT outcome, ended_at, added FROM archive_syncrun ORDER BY id"
        ).fetchall()
    finally:
        db.close()


def sync_through_worker(api: DiscordApi, state: Path) -> tuple[float, int, int]:
    """(seconds, messages added, runs)."""
    manage(state, "migrate", "-v0")
    out = manage(
        state,
        "shell",
        "-c",
        "from archive.sync.services.accounts import sync_connect as c;"
        f"print(c(kind='discord_bot', credentials={{'token': {TOKEN!r}}},"
        f" settings={{'api_url': {api.url!r}}}).pk)",
        stdout=subprocess.PIPE,
    ).stdout.decode()
    pk = int(out.strip().splitlines()[-1])
    env = {**os.environ, "WIRECAT_STATE_DIR": str(state)}
    log = (state / "worker.log").open("wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "wirecat", "worker", "--pool=solo", "-Q", QUEUES,
         "--loglevel=INFO", "--hostname=bench@%h"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    # Queued from here, as the Sync page's "Sync now" or beat would (no process start-up).
    client = Celery("bench", broker=f"sqla+sqlite:///{state / 'broker.db'}")
    client.conf.task_routes = {"archive.jobs.account_sync": {"queue": "sync"}}

    def enqueue() -> None:
        client.send_task("archive.jobs.account_sync", args=[pk, True])

    try:
        time.sleep(3)  # the worker connects to its broker
        started = time.perf_counter()
        enqueue()
        while True:
            done = [r for r in runs(state) if r[1] is not None]
            if done and len(done) == len(runs(state)):
                if done[-1][0] == "budget":
                    enqueue()
                elif done[-1][0] == "done":
                    break
                else:
                    raise SystemExit(f"a sync run ended {done[-1][0]}: see {state / 'worker.log'}")
                while len(runs(state)) == len(done):
                    time.sleep(0.05)
            time.sleep(0.1)
        elapsed = time.perf_counter() - started
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        log.close()
    finished = runs(state)
    return elapsed, sum(r[2] for r in finished), len(finished)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--channels", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="folder for the stores (kept)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="wirecat-sync-bench-"))
    for old in ("sync-state", "import-state", "exports"):
        shutil.rmtree(work / old, ignore_errors=True)
    by_channel = corpus_messages(args.messages, args.channels)
    total = sum(len(m) for m in by_channel.values())
    api = DiscordApi()
    api.channels = []
    for channel, messages in by_channel.items():
        api.load(
            {"id": channel, "type": 0, "name": f"c{channel[-3:]}", "guild_id": GUILD["id"]},
            messages,
        )
    try:
        seconds, added, count = sync_through_worker(api, work / "sync-state")
    finally:
        api.close()
    print(
        f"sync:   {added:,} of {total:,} messages in {seconds:,.1f} s"
        f" = {added / seconds:,.0f} msg/s"
        f" ({count} runs of account_sync through one worker, {len(api.requests):,} requests)"
    )
    exports = work / "exports"
    exports.mkdir(parents=True)
    files = [str(exporter_file(exports, c, m)) for c, m in by_channel.items()]
    state = work / "import-state"
    manage(state, "migrate", "-v0")
    started = time.perf_counter()
    manage(state, "import", *files, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import_seconds = time.perf_counter() - started
    print(
        f"import: {total:,} messages in {import_seconds:,.1f} s"
        f" = {total / import_seconds:,.0f} msg/s"
    )
    print(
        f"ratio:  sync runs at {(added / seconds) / (total / import_seconds):.2f} x the import rate"
    )


if __name__ == "__main__":
    main()
