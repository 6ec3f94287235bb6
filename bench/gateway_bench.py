"""Agent gateway benchmark: `unread` (first page) and `mark_read` (100 ids) for ten agents
with different read states over a million messages, through the real HTTP stack (gunicorn
on loopback), at rising concurrency, against the raw unread query in this process.

    python bench/gateway_bench.py --store DIR [--seconds 15] [--workers 2]

`--store` is a state folder holding an import (the import benchmark's, e.g.); it is copied
first (the agents' read state is written to the copy, never to the original). Prints p50,
p95 and p99 per endpoint and concurrency, requests per second, the highest throughput with
p95 <= 100 ms, and the HTTP-to-raw ratio of unread's p95.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import shutil
import signal
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

AGENTS = 10
LEVELS = (1, 2, 4, 8)


def prepare(state: Path) -> tuple[list[str], dict[str, list[str]], float]:
    """Ten agents with different read states; their tokens, a pool of unread ids per
    agent for mark_read, and the raw unread query's p95 (ms) measured in this process."""
    os.environ["WIRECAT_STATE_DIR"] = str(state)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wirecat.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    from datetime import UTC, datetime

    from archive.gateway.models import Agent, AgentRead
    from archive.gateway.selectors import unread_page
    from archive.gateway.services.agents import agent_create
    from archive.store.models import Message

    Agent.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute("SELECT min(id), max(id), count(*) FROM archive_message")
        low, high, total = cursor.fetchone()
    print(f"store: {total:,} messages (ids {low:,}..{high:,})")
    rng = random.Random(20261130)  # noqa: S311 - a fixed sample
    tokens, pools = [], {}
    for n in range(AGENTS):
        issued = agent_create(
            name=f"bench-{n}", scopes=["messages.read"], since=datetime(2000, 1, 1, tzinfo=UTC)
        )
        # Agent n has read the first n tenths, plus 2,000 scattered messages above that.
        through = low + (high - low) * n // AGENTS
        Agent.objects.filter(pk=issued.agent.pk).update(
            read_through=through, rate_per_minute=10_000_000
        )
        scattered = rng.sample(range(through + 1, high + 1), 2_000)
        AgentRead.objects.bulk_create(
            [AgentRead(agent_id=issued.agent.pk, message_id=i) for i in scattered],
            batch_size=1000,
        )
        tokens.append(issued.token)
        sample = rng.sample(range(through + 1, high + 1), 20_000)
        pools[issued.token] = list(
            Message.objects.filter(pk__in=sample, direction="in").values_list(
                "public_id", flat=True
            )
        )
    raw: list[float] = []
    agents = list(Agent.objects.filter(name__startswith="bench-"))
    for _ in range(200):
        agent = rng.choice(agents)
        started = time.perf_counter()
        unread_page(agent=agent, limit=50)
        raw.append(time.perf_counter() - started)
    connection.close()
    return tokens, pools, pct(raw, 0.95)


def run_level(
    base: str, tokens: list[str], pools: dict[str, list[str]], threads: int, seconds: float
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"unread": [], "mark_read": []}
    errors: list[str] = []
    stop = time.monotonic() + seconds

    def worker(seed: int) -> None:
        rng = random.Random(seed)  # noqa: S311 - load, not security
        with httpx.Client(base_url=base, timeout=30) as client:
            while time.monotonic() < stop:
                token = rng.choice(tokens)
                headers = {"Authorization": f"Bearer {token}"}
                if rng.random() < 0.5:
                    started = time.perf_counter()
                    response = client.get("/api/messages/unread", headers=headers)
                    kind = "unread"
                else:
                    ids = rng.sample(pools[token], 100)
                    started = time.perf_counter()
                    response = client.post(
                        "/api/messages/mark_read", json={"ids": ids}, headers=headers
                    )
                    kind = "mark_read"
                spent = time.perf_counter() - started
                if response.status_code != 200:
                    errors.append(f"{kind} {response.status_code} {response.text[:200]}")
                times[kind].append(spent)

    pool = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    if errors:
        print(f"  {len(errors)} errors, e.g. {errors[0]}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="wirecat-gateway-bench-"))
    state = work / "state"
    shutil.copytree(args.store, state, ignore=shutil.ignore_patterns("*.log"))
    tokens, pools, raw_p95 = prepare(state)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request
    print(f"raw unread query in this process: p95 {raw_p95:.1f} ms (the baseline)")
    port = free_port()
    server = serve(state, port, args.workers)
    best: tuple[float, int] | None = None
    unread_p95_at_1 = 0.0
    try:
        for threads in LEVELS:
            times = run_level(f"http://127.0.0.1:{port}", tokens, pools, threads, args.seconds)
            count = sum(len(v) for v in times.values())
            rate = count / args.seconds
            worst = max(pct(v, 0.95) for v in times.values() if v)
            print(f"{threads} clients: {rate:,.0f} requests/s")
            for kind, samples in times.items():
                if samples:
                    print(
                        f"  {kind:>9}: p50 {pct(samples, 0.5):6.1f} ms  p95"
                        f" {pct(samples, 0.95):6.1f} ms  p99 {pct(samples, 0.99):6.1f} ms"
                        f"  ({len(samples):,} requests)"
                    )
            if threads == 1:
                unread_p95_at_1 = pct(times["unread"], 0.95)
            if worst <= 100 and (best is None or rate > best[0]):
                best = (rate, threads)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    if best:
        print(
            f"highest throughput with p95 <= 100 ms: {best[0]:,.0f} requests/s ({best[1]} clients)"
        )
    else:
        print("no concurrency level kept p95 <= 100 ms")
    print(
        f"ratio: unread p95 over HTTP (1 client) / raw query p95 = "
        f"{unread_p95_at_1 / max(raw_p95, 1e-9):.1f}"
    )


if __name__ == "__main__":
    main()
