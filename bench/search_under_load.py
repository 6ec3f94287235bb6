"""Search under load: API search with 4 clients over the real HTTP stack, idle and then
while `wirecat import` records 150,000 messages into the same store, in one run.

    python bench/search_under_load.py [--messages 150000] [--seconds 20] [--keep DIR]
        [--env NAME=VALUE ...]

Builds the import benchmark's Telegram export of real chat lines
(../shared/corpora/ubuntu-irc) twice over, as two accounts: the first is imported before
anything is timed (what the clients search), the second is the import under way in the
second phase. gunicorn (2 workers, normal priority, as `wirecat start` runs it) serves the
store on loopback; 4 client threads run the search benchmark's queries through
`GET /api/search/messages` as an agent, and a fifth tags a random message
(`POST /api/tags/add`) every quarter second. Phase one runs `--seconds` with nothing else
running; phase two runs for as long as the import does (`--env` sets the import's
environment, e.g. `--env WIRECAT_BACKGROUND_NICE=0` for the old behaviour).

Prints p50/p95/max of search and of tagging in both phases, the ratio
p95(during) / p95(idle), and the import's rate. Target: the ratio <= 4.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from http_stack import free_port, pct, serve  # noqa: E402
from make_telegram_export import OWNER_ID  # noqa: E402
from make_telegram_export import write as write_export  # noqa: E402
from search_bench import make_queries  # noqa: E402

CLIENTS = 4
TAG_EVERY = 0.25  # seconds between two tagging requests
SLOWEST: list[tuple[float, float, str]] = []  # the last phase's slowest requests


def exports(work: Path, messages: int) -> tuple[Path, Path]:
    """The export of `messages` messages, and the same messages as another account's
    (another owner id: every message of the second is new to a store holding the first)."""
    first = work / f"result-{messages}.json"
    second = work / f"result-{messages}-second.json"
    if not first.exists():
        count = write_export(first, messages)
        print(f"export: {count:,} messages, {first.stat().st_size / 1e6:,.0f} MB -> {first}")
    if not second.exists():
        owner = f'"user_id": {OWNER_ID},'
        with first.open(encoding="utf-8") as src, second.open("w", encoding="utf-8") as dst:
            for number, line in enumerate(src):
                if number < 5 and owner in line:
                    line = line.replace(owner, f'"user_id": {OWNER_ID + 1},')
                dst.write(line)
    return first, second


def wirecat(args: list[str], state: Path, env: dict[str, str] | None = None) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env={**os.environ, "WIRECAT_STATE_DIR": str(state), **(env or {})},
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def prepare(state: Path) -> tuple[str, list[str], list[str]]:
    """An agent that may read and tag (no rate limit to speak of): its token, the
    queries, and public ids of messages to tag."""
    os.environ["WIRECAT_STATE_DIR"] = str(state)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wirecat.settings")
    import django

    django.setup()
    from django.db import connection

    from archive.gateway.models import Agent
    from archive.gateway.services.agents import agent_create

    issued = agent_create(name="load-bench", scopes=["messages.read", "tags.write"])
    Agent.objects.filter(pk=issued.agent.pk).update(rate_per_minute=10_000_000)
    connection.close()
    db = sqlite3.connect(state / "wirecat.db")
    rng = random.Random(20261201)  # noqa: S311 - a fixed sample
    queries = [query for _, query, _, _ in make_queries(db.cursor(), rng)]
    ids = [row[0] for row in db.execute("SELECT public_id FROM archive_message WHERE id % 97 = 0")]
    db.close()
    return issued.token, queries, ids


def load(
    base: str, token: str, queries: list[str], ids: list[str], until: threading.Event
) -> tuple[list[float], list[float], list[str]]:
    """Search with CLIENTS threads and tag with one more until `until` is set: the
    latencies of each (seconds) and the errors."""
    search: list[float] = []
    tagging: list[float] = []
    slow: list[tuple[float, float, str]] = []  # (latency, when it started, what)
    errors: list[str] = []
    headers = {"Authorization": f"Bearer {token}"}

    def searcher(seed: int) -> None:
        rng = random.Random(seed)  # noqa: S311 - load, not security
        with httpx.Client(base_url=base, timeout=60, headers=headers) as client:
            while not until.is_set():
                params = {"q": rng.choice(queries), "limit": 20}
                started = time.perf_counter()
                response = client.get("/api/search/messages", params=params)
                search.append(spent := time.perf_counter() - started)
                slow.append((spent, started, "search"))
                if response.status_code != 200:
                    errors.append(f"search {response.status_code} {response.text[:200]}")

    def tagger() -> None:
        rng = random.Random(99)  # noqa: S311 - load, not security
        with httpx.Client(base_url=base, timeout=60, headers=headers) as client:
            while not until.wait(TAG_EVERY):
                name = f"load-{rng.randrange(5)}"
                body = {"kind": "message", "key": rng.choice(ids), "name": name}
                started = time.perf_counter()
                response = client.post("/api/tags/add", json=body)
                tagging.append(spent := time.perf_counter() - started)
                slow.append((spent, started, "tag"))
                if response.status_code != 200:
                    errors.append(f"tag {response.status_code} {response.text[:200]}")

    threads = [threading.Thread(target=searcher, args=(n,)) for n in range(CLIENTS)]
    threads.append(threading.Thread(target=tagger))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    SLOWEST[:] = sorted(slow, reverse=True)[:8]
    return search, tagging, errors


def summary(name: str, samples: list[float]) -> str:
    if not samples:
        return f"{name}: no requests"
    return (
        f"{name}: p50 {pct(samples, 0.5):7.1f} ms  p95 {pct(samples, 0.95):7.1f} ms"
        f"  max {max(samples) * 1000:7.1f} ms  ({len(samples):,} requests)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=150_000)
    parser.add_argument("--seconds", type=float, default=20.0, help="the idle phase")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--keep", type=Path, help="folder for the exports (kept, reused)")
    parser.add_argument(
        "--env", action="append", default=[], help="NAME=VALUE for the import's process"
    )
    args = parser.parse_args()
    import_env = dict(pair.split("=", 1) for pair in args.env)
    work = args.keep or Path(tempfile.mkdtemp(prefix="wirecat-load-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    first, second = exports(work, args.messages)
    base_state = work / "base-state"  # the first export imported (kept with --keep)
    if not (base_state / "wirecat.db").exists():
        shutil.rmtree(base_state, ignore_errors=True)
        wirecat(["migrate", "-v0"], base_state)
        started = time.perf_counter()
        wirecat(["import", str(first)], base_state)
        took = time.perf_counter() - started
        print(f"store: {args.messages:,} messages imported in {took:.1f} s")
    state = work / "load-state"  # a fresh copy every run
    shutil.rmtree(state, ignore_errors=True)
    shutil.copytree(base_state, state, ignore=shutil.ignore_patterns("*.log"))
    wirecat(["migrate", "-v0"], state)
    token, queries, ids = prepare(state)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request
    port = free_port()
    server = serve(state, port, args.workers)
    base = f"http://127.0.0.1:{port}"
    try:
        until = threading.Event()
        threading.Timer(args.seconds, until.set).start()
        idle, idle_tags, errors = load(base, token, queries, ids, until)

        until = threading.Event()
        result: dict[str, float] = {}

        began = time.perf_counter()

        def run_import() -> None:
            try:
                wirecat(["import", str(second)], state, import_env)
            finally:
                result["seconds"] = time.perf_counter() - began
                until.set()

        importer = threading.Thread(target=run_import)
        importer.start()
        during, during_tags, more_errors = load(base, token, queries, ids, until)
        importer.join()
        errors += more_errors
        slowest = ", ".join(
            f"{what} {spent * 1000:.0f} ms at {at - began:.1f} s" for spent, at, what in SLOWEST
        )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    if errors:
        print(f"{len(errors)} errors, e.g. {errors[0]}")
    settings = " ".join(args.env) or "defaults"
    print(f"import during phase two ({settings}):")
    seconds = result["seconds"]
    print(
        f"  {args.messages:,} messages in {seconds:.1f} s = {args.messages / seconds:,.0f} msg/s"
        " (process start and migration check included)"
    )
    print(summary("search idle  ", idle))
    print(summary("search import", during))
    print(summary("tag idle     ", idle_tags))
    print(summary("tag import   ", during_tags))
    print(f"slowest during the import (of {seconds:.1f} s): {slowest}")
    ratio = pct(during, 0.95) / max(pct(idle, 0.95), 1e-9)
    print(f"ratio: search p95 during the import / idle = {ratio:.2f} (target <= 4)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
