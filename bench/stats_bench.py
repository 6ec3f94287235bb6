"""Statistics benchmark: each statistics selector (volume, heatmap, top chats, top people,
unanswered, response times) over a year's range of the whole store and of one busy chat,
on the import benchmark's million messages, beside the plainest SQL doing the same job in
the same run.

    python bench/stats_bench.py [--messages 1000000] [--big-chat 100000] [--runs 20]
        [--keep DIR] [--owner-every 10] [--direct-every 5]

The store: the conversations benchmark's import of real chat lines (../shared/corpora/
ubuntu-irc, CC-BY-4.0) with its one big chat of `--big-chat` messages (the logs one after
another over several years; made once and kept with `--keep`, each run works on a fresh
copy). Those logs are group chats the owner never speaks in, so the copy is given an
owner who does, by SQL (as a store that holds the owner's messages has it): one message
in `--owner-every` becomes the owner's (outbound, the account's own identity) and one
chat in `--direct-every` a direct chat. Unanswered messages and response times then have
runs to find in every chat.

Scopes: the busiest calendar year of the whole store, the busiest year of its busiest
chat (the big one), and (for the record: not a year) the whole history. Each selector is
timed `--runs` times after one untimed call: p50 and p95 of the selector's own call, in
this process. Baseline, timed the same way in the same run on its own connection: a raw
GROUP BY over the messages table for the same range (strftime per week for volume, per
weekday and hour for the heatmap, per chat and per sender for the tops), and for
unanswered and response times the range's (chat, time, direction) rows in chat order
with one pass in Python finding each inbound message's next outbound one. Target: p95
<= 500 ms for a year's range. Each line also gives the CPU time's p95 (this process),
which other work on the machine does not inflate; the load average is printed before and
after.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from conversations_bench import django_setup, store_ready  # noqa: E402
from measure import percentiles  # noqa: E402

TARGET_MS = 500.0
SELECTORS = ("volume", "heatmap", "top_chats", "top_people", "unanswered", "responses")


def shape(state: Path, owner_every: int, direct_every: int) -> dict[str, int]:
    """Give the store an owner who speaks, and direct chats (see the module's docstring)."""
    import sqlean

    db = sqlean.connect(str(state / "wirecat.db"), isolation_level=None, timeout=60)
    owner = db.execute(
        "SELECT owner_identity_id FROM archive_account WHERE owner_identity_id IS NOT NULL"
        " ORDER BY id LIMIT 1"
    ).fetchone()
    if owner is None:
        raise SystemExit("the store's account has no identity of the owner's")
    db.execute("BEGIN IMMEDIATE")
    db.execute(
        "UPDATE archive_message SET direction = 'out', sender_id = ?"
        " WHERE id % ? = 0 AND kind = 'text'",
        [owner[0], owner_every],
    )
    db.execute("UPDATE archive_chat SET kind = 'dm' WHERE id % ? = 0", [direct_every])
    db.execute("COMMIT")
    counts = {
        "messages": db.execute("SELECT count(*) FROM archive_message").fetchone()[0],
        "owner": db.execute(
            "SELECT count(*) FROM archive_message WHERE direction = 'out'"
        ).fetchone()[0],
        "chats": db.execute("SELECT count(*) FROM archive_chat").fetchone()[0],
        "direct": db.execute("SELECT count(*) FROM archive_chat WHERE kind = 'dm'").fetchone()[0],
    }
    db.close()
    return counts


def ranges(state: Path) -> list[tuple[str, date, date, int | None]]:
    """(label, since, until, chat): the busiest year of the store, the busiest year of
    its busiest chat, and the whole history."""
    import sqlean

    db = sqlean.connect(str(state / "wirecat.db"))
    year, in_year = db.execute(
        "SELECT substr(sent_at, 1, 4) AS y, count(*) FROM archive_message GROUP BY y"
        " ORDER BY 2 DESC LIMIT 1"
    ).fetchone()
    chat = db.execute(
        "SELECT chat_id FROM archive_message GROUP BY chat_id ORDER BY count(*) DESC LIMIT 1"
    ).fetchone()[0]
    chat_year, in_chat = db.execute(
        "SELECT substr(sent_at, 1, 4) AS y, count(*) FROM archive_message WHERE chat_id = ?"
        " GROUP BY y ORDER BY 2 DESC LIMIT 1",
        [chat],
    ).fetchone()
    first, last = db.execute("SELECT min(sent_at), max(sent_at) FROM archive_message").fetchone()
    db.close()
    start, end = date(int(year), 1, 1), date(int(year), 12, 31)
    return [
        (f"whole store, {year} ({in_year:,} messages)", start, end, None),
        (
            f"busiest chat, {chat_year} ({in_chat:,} messages)",
            date(int(chat_year), 1, 1),
            date(int(chat_year), 12, 31),
            int(chat),
        ),
        (
            f"whole history, {first[:10]} to {last[:10]} (not a year: for the record)",
            date.fromisoformat(first[:10]),
            date.fromisoformat(last[:10]),
            None,
        ),
    ]


def timed(call: Callable[[], Any], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds (this process: SQLite runs in it) of `runs` calls, after an
    untimed one that warms the page cache and the statements."""
    call()
    wall, cpu = [], []
    for _ in range(runs):
        started, used = time.perf_counter(), time.process_time()
        call()
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - used)
    return wall, cpu


def baselines(
    state: Path, since: date, until: date, chat: int | None
) -> dict[str, Callable[[], Any]]:
    """The plainest SQL for each selector's job, on a connection of its own."""
    import sqlean

    db = sqlean.connect(str(state / "wirecat.db"))
    where = "sent_at >= ? AND sent_at < ?"
    params: list[Any] = [since.isoformat(), f"{until.isoformat()} 24"]
    if chat is not None:
        where += " AND chat_id = ?"
        params.append(chat)

    def rows(sql: str) -> list[Any]:
        return db.execute(sql, params).fetchall()

    def answers() -> int:
        """Each inbound message's next outbound one in its chat: one reverse pass."""
        found = rows(
            f"SELECT chat_id, sent_at, direction FROM archive_message WHERE {where}"
            " ORDER BY chat_id, sent_at, id"
        )
        waiting = 0
        next_out: str | None = None
        current = None
        for chat_id, sent_at, direction in reversed(found):
            if chat_id != current:
                current, next_out = chat_id, None
            if direction == "out":
                next_out = sent_at
            elif next_out is None:
                waiting += 1
        return waiting

    return {
        "volume": lambda: rows(
            "SELECT strftime('%Y-%W', sent_at) AS w, count(*), sum(direction = 'out')"
            f" FROM archive_message WHERE {where} GROUP BY w"
        ),
        "heatmap": lambda: rows(
            "SELECT strftime('%w %H', sent_at) AS h, count(*) FROM archive_message"
            f" WHERE {where} GROUP BY h"
        ),
        "top_chats": lambda: rows(
            f"SELECT chat_id, count(*) AS n FROM archive_message WHERE {where}"
            " GROUP BY chat_id ORDER BY n DESC LIMIT 10"
        ),
        "top_people": lambda: rows(
            f"SELECT sender_id, count(*) AS n FROM archive_message WHERE {where}"
            " GROUP BY sender_id ORDER BY n DESC LIMIT 10"
        ),
        "unanswered": answers,
        "responses": answers,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--big-chat", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--owner-every", type=int, default=10)
    parser.add_argument("--direct-every", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="folder for the export and store (kept)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="wirecat-stats-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    state = store_ready(work, args.messages, args.big_chat)
    counts = shape(state, args.owner_every, args.direct_every)
    print(
        f"store: {counts['messages']:,} messages ({counts['owner']:,} the owner's),"
        f" {counts['chats']:,} chats ({counts['direct']:,} direct)"
    )
    one, five, fifteen = os.getloadavg()
    print(f"load average before: {one:.1f} {five:.1f} {fifteen:.1f} on {os.cpu_count()} cores")
    django_setup(state)
    from archive.stats import selectors

    calls: dict[str, Callable[[Any], Any]] = {
        "volume": lambda scope: selectors.volume(scope, "week"),
        "heatmap": selectors.heatmap,
        "top_chats": selectors.top_chats,
        "top_people": selectors.top_people,
        "unanswered": selectors.unanswered,
        "responses": lambda scope: selectors.response_times(scope, "month"),
    }
    worst: list[tuple[float, str]] = []
    for index, (label, since, until, chat) in enumerate(ranges(state)):
        print(f"{label}:")
        scope = selectors.stats_scope(since=since, until=until, chat=chat)
        plain = baselines(state, since, until, chat)
        runs = args.runs if index < 2 else max(3, args.runs // 4)
        for name in SELECTORS:
            wall, cpu = timed(functools.partial(calls[name], scope), runs)
            plain_wall, plain_cpu = timed(plain[name], runs)
            p50, p95, _ = percentiles(wall)
            b50, b95, _ = percentiles(plain_wall)
            c95, d95 = percentiles(cpu)[1], percentiles(plain_cpu)[1]
            if index < 2:
                worst.append((p95, f"{name}, {label}"))
            print(
                f"  {name:>10}: p50 {p50:7.1f} ms  p95 {p95:7.1f} ms | baseline p50"
                f" {b50:7.1f} ms  p95 {b95:7.1f} ms | p95 ratio {p95 / max(b95, 0.001):.1f}x"
                f" | cpu p95 {c95:7.1f} ms, baseline {d95:7.1f} ms"
            )
    slowest, where = max(worst)
    verdict = "met" if slowest <= TARGET_MS else "NOT met"
    print(
        f"target p95 <= {TARGET_MS:.0f} ms for a year's range: {verdict} (slowest {slowest:.1f}"
        f" ms: {where})"
    )
    print("load average after: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
