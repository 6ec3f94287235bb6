"""Conversations build benchmark: the import benchmark's messages built into conversations,
and what a concurrent writer waits meanwhile, against the plainest build in the same run.

    python bench/conversations_bench.py [--messages 1000000] [--big-chat 100000] [--keep DIR]

The store: the import benchmark's Telegram export of real chat lines (one chat per log and
"year" copy, bench/make_telegram_export.py) imported with `wirecat import`, plus one large
chat of `--big-chat` messages (the logs one after another). With `--keep` the export and
the imported store are kept and a copy of the store is used on the next run.

Measured, each in a child process (Django set up, the services called as the job calls
them), while a writer in another process records one message through the sink every
WRITE_EVERY seconds (each write's wait and duration):
- idle: the writer alone, for reference;
- full: a full build of every chat of the import (messages per second, transactions, the
  longest write transaction, peak RSS of the builder);
- big: a full build of the large chat alone;
- grown: the large chat built on after 1% more messages arrived.
The baseline beside them: one `INSERT … SELECT` of "parent = the previous message" links
into a plain table (a window function over the same messages), in one transaction, with
the same writer. Target: the writer's p99 <= 300 ms during a build.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from make_telegram_export import OWNER_ID, chat_messages, logs  # noqa: E402
from make_telegram_export import write as write_export  # noqa: E402
from measure import peak_rss_mb  # noqa: E402

WRITE_EVERY = 0.05  # seconds between two of the writer's writes
IDLE_SECONDS = 5.0
BIG_CHAT_ID = 99_999
T = TypeVar("T")


# -- the store ------------------------------------------------------------------------------


def write_big_chat(out: Path, count: int) -> int:
    """An export holding one chat of `count` messages: the logs one after another (each a
    day of its own, copies a year later when the logs run out)."""
    corpus = logs()
    if not corpus:
        raise SystemExit("no logs: ../shared/corpora/ubuntu-irc/train is missing")
    written = 0
    with out.open("w", encoding="utf-8") as handle:
        owner = {"user_id": OWNER_ID, "first_name": "Bench", "last_name": "Owner"}
        handle.write('{\n "personal_information": ' + json.dumps(owner) + ",\n")
        handle.write(' "chats": {"list": [\n   {"name": "#ubuntu, all of it",')
        handle.write(f' "type": "public_supergroup", "id": {BIG_CHAT_ID}, "messages": [\n')
        shift = 0
        while written < count:
            for day, lines, parents in corpus:
                if written >= count:
                    break
                for item in chat_messages(day, lines, parents, shift + 10, written + 1):
                    if written >= count:
                        break
                    handle.write(("    " if not written else ",\n    ") + json.dumps(item))
                    written += 1
            shift += 1
        handle.write("\n   ]}\n  ]\n }\n}\n")
    return written


def manage(args: list[str], state: Path) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env={**os.environ, "WIRECAT_STATE_DIR": str(state), "CELERY_BROKER_URL": "memory://"},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"wirecat {' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr}")
    return done.stdout


def store_ready(work: Path, messages: int, big: int) -> Path:
    """A fresh copy of the imported store (imported once, kept with --keep)."""
    kept = work / f"store-{messages}-{big}"
    if not (kept / "wirecat.db").exists():
        export = work / f"result-{messages}.json"
        if not export.exists():
            print(f"export: {write_export(export, messages):,} messages -> {export}")
        big_export = work / f"big-{big}.json"
        if big and not big_export.exists():
            print(f"export: {write_big_chat(big_export, big):,} messages in one chat")
        shutil.rmtree(kept, ignore_errors=True)
        manage(["migrate", "-v0"], kept)
        started = time.perf_counter()
        manage(["import", str(export)], kept)
        if big:
            manage(["import", str(big_export)], kept)
        print(f"import: {messages + big:,} messages in {time.perf_counter() - started:,.0f} s")
    state = work / "run-state"
    shutil.rmtree(state, ignore_errors=True)
    shutil.copytree(kept, state)
    manage(["migrate", "-v0"], state)  # migrations added since the store was kept
    return state


# -- the child processes --------------------------------------------------------------------


def django_setup(state: Path) -> None:
    os.environ["WIRECAT_STATE_DIR"] = str(state)
    os.environ["CELERY_BROKER_URL"] = "memory://"  # effects asked for go nowhere slow
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wirecat.settings")
    import django

    django.setup()


def child_writer(state: Path, out: Path) -> None:
    """Record one message through the sink every WRITE_EVERY seconds until `out.stop`
    appears; write each write's seconds (wait and duration) to `out`."""
    django_setup(state)
    from archive.store.domain import AccountRecord, Batch, ChatRecord, MessageRecord
    from archive.store.sink import batch_record

    account = AccountRecord(provider="telegram", external_id="bench-writer", name="writer")
    chat = ChatRecord(external_id="bench-writer", kind="group", title="the writer")

    def write(number: int) -> None:
        record = MessageRecord(
            chat_external_id="bench-writer",
            external_id=f"w{number}",
            sent_at=datetime.now(UTC),
            text=f"a small write, number {number}",
        )
        batch_record(batch=Batch(account=account, chats=(chat,), messages=(record,)))

    for number in range(-5, 0):  # the account and chat made, caches warm: not measured
        write(number)
    (out.parent / (out.name + ".ready")).touch()
    samples: list[float] = []
    failures = 0
    stop = out.parent / (out.name + ".stop")
    number = 1
    while not stop.exists():
        started = time.perf_counter()
        try:
            write(number)
        except Exception:  # "database is locked": the wait ran out, counted apart
            failures += 1
        spent = time.perf_counter() - started
        samples.append(spent)
        number += 1
        time.sleep(max(0.0, WRITE_EVERY - spent))
    out.write_text(json.dumps({"samples": samples, "failures": failures}))


def child_build(state: Path, what: str) -> None:
    """Build the chats named by `what` (every chat of the import, or the large one, full or
    grown); print what it did as JSON."""
    django_setup(state)
    from archive.conversations.services.builds import chats_due, conversations_build
    from archive.store.models import Chat

    big = Chat.objects.filter(external_id=str(BIG_CHAT_ID)).values_list("pk", flat=True).first()
    writer = Chat.objects.filter(external_id="bench-writer").values_list("pk", flat=True).first()
    if what == "full":
        chats = [pk for pk in chats_due() if pk not in (big, writer)]
    else:
        chats = [big] if big is not None else []
    started = time.perf_counter()
    out: dict[str, Any] = {"messages": 0, "chats": 0, "transactions": 0, "longest": 0.0}
    for chat_id in chats:
        run = conversations_build(chat_id=chat_id, full=what != "grown")
        out["messages"] += run.messages
        out["chats"] += 1
        out["transactions"] += run.transactions
        out["longest"] = max(out["longest"], run.longest_write)
        out["conversations"] = out.get("conversations", 0) + run.conversations
        out.setdefault("modes", []).append(run.mode)
    out["seconds"] = time.perf_counter() - started
    out["peak_rss_mb"] = peak_rss_mb()
    out["modes"] = sorted(set(out.get("modes", [])))
    print(json.dumps(out))


def child_grow(state: Path, count: int) -> None:
    """Append `count` messages to the large chat, through the sink, in bounded batches."""
    django_setup(state)
    from archive.store.domain import AccountRecord, Batch, ChatRecord, MessageRecord
    from archive.store.models import Account, Chat, Message

    chat = Chat.objects.get(external_id=str(BIG_CHAT_ID))
    account = Account.objects.get(pk=chat.account_id)
    last = Message.objects.filter(chat=chat).order_by("-sent_at").values_list("sent_at")[0][0]
    from archive.store.sink import batch_record

    for start in range(0, count, 1_000):
        records = tuple(
            MessageRecord(
                chat_external_id=chat.external_id,
                external_id=f"grown-{n}",
                sent_at=last + timedelta(seconds=n + 1),
                text=f"nick{n % 17}: and one more thing about topic {n % 13}",
                sender_external_id=f"user{n % 29}",
            )
            for n in range(start, min(count, start + 1_000))
        )
        batch_record(
            batch=Batch(
                account=AccountRecord(
                    provider=account.provider, external_id=account.external_id, name=account.name
                ),
                chats=(ChatRecord(external_id=chat.external_id, kind=chat.kind, title=chat.title),),
                messages=records,
            )
        )


def child(args: list[str], state: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, "--child", *args, "--state", str(state)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


# -- measuring ------------------------------------------------------------------------------


def pct(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] * 1000


def writer_line(name: str, writes: dict[str, Any]) -> str:
    samples = writes["samples"]
    if not samples:
        return f"  writer during {name}: no writes"
    failed = f", {writes['failures']} timed out" if writes["failures"] else ""
    return (
        f"  writer during {name}: p50 {pct(samples, 0.5):6.1f} ms  p95 {pct(samples, 0.95):6.1f}"
        f" ms  p99 {pct(samples, 0.99):6.1f} ms  max {max(samples) * 1000:7.1f} ms"
        f"  ({len(samples)} writes{failed})"
    )


def with_writer(state: Path, run: Callable[[], T]) -> tuple[T, dict[str, Any]]:
    """`run()` while the writer writes; what it returned and the writer's samples."""
    out = state / f"writer-{time.monotonic_ns()}.json"
    writer = child(["writer", "--out", str(out)], state)
    ready = out.parent / (out.name + ".ready")
    while not ready.exists():
        if writer.poll() is not None:
            raise SystemExit("the writer failed to start")
        time.sleep(0.05)  # waiting for the writer's first write
    try:
        result = run()
    finally:
        (out.parent / (out.name + ".stop")).touch()
        writer.wait()
    return result, json.loads(out.read_text())


def build(state: Path, what: str) -> dict[str, Any]:
    proc = child(["build", "--what", what], state)
    stdout, _ = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"the {what} build failed")
    return dict(json.loads(stdout.strip().splitlines()[-1]))


def baseline(state: Path, *, big: bool) -> tuple[float, int]:
    """The plainest build: each message's parent is the one before it in its chat, written
    by one INSERT … SELECT into a plain table, in one transaction. (seconds, rows)"""
    import sqlean

    db = sqlean.connect(str(state / "wirecat.db"), isolation_level=None, timeout=60)
    db.execute("DROP TABLE IF EXISTS bench_links")
    db.execute("CREATE TABLE bench_links (message_id INTEGER PRIMARY KEY, parent_id INTEGER)")
    which = "=" if big else "!="
    started = time.perf_counter()
    db.execute("BEGIN IMMEDIATE")
    db.execute(
        "INSERT INTO bench_links (message_id, parent_id)"
        " SELECT m.id, lag(m.id) OVER (PARTITION BY m.chat_id ORDER BY m.sent_at, m.id)"
        " FROM archive_message AS m JOIN archive_chat AS c ON c.id = m.chat_id"
        f" WHERE c.external_id {which} ? AND c.external_id != 'bench-writer'"
        " AND m.deleted_at IS NULL",
        [str(BIG_CHAT_ID)],
    )
    rows = db.execute("SELECT count(*) FROM bench_links").fetchone()[0]
    db.execute("COMMIT")
    spent = time.perf_counter() - started
    db.execute("DROP TABLE bench_links")
    db.close()
    return spent, int(rows)


def report(name: str, got: dict[str, Any], writes: dict[str, Any]) -> None:
    rate = got["messages"] / max(got["seconds"], 1e-9)
    print(
        f"{name}: {got['messages']:,} messages of {got['chats']} chats"
        f" ({', '.join(got['modes']) or 'nothing'}) in {got['seconds']:,.1f} s ="
        f" {rate:,.0f} msg/s; {got['conversations']:,} conversations,"
        f" {got['transactions']:,} transactions, longest write {got['longest'] * 1000:.0f} ms,"
        f" builder peak RSS {got['peak_rss_mb']} MB"
    )
    print(writer_line(name, writes))


def report_baseline(name: str, result: tuple[float, int], writes: dict[str, Any]) -> None:
    spent, rows = result
    print(
        f"baseline {name}: {rows:,} previous-message links in one INSERT … SELECT,"
        f" {spent:,.1f} s = {rows / max(spent, 1e-9):,.0f} msg/s"
    )
    print(writer_line(f"baseline {name}", writes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--big-chat", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, help="folder for the exports and store (kept)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--state", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--what", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "writer":
        child_writer(args.state, args.out)
        return
    if args.child == "build":
        child_build(args.state, args.what)
        return
    if args.child == "grow":
        child_grow(args.state, int(args.what))
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="wirecat-conv-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    state = store_ready(work, args.messages, args.big_chat)

    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    _, idle = with_writer(state, lambda: time.sleep(IDLE_SECONDS))
    print(writer_line("idle (nothing else running)", idle))
    got, writes = with_writer(state, lambda: build(state, "full"))
    report("full build", got, writes)
    plain, writes = with_writer(state, lambda: baseline(state, big=False))
    report_baseline("of the same chats", plain, writes)
    if args.big_chat:
        got, writes = with_writer(state, lambda: build(state, "big"))
        report("large chat, full build", got, writes)
        plain, writes = with_writer(state, lambda: baseline(state, big=True))
        report_baseline("of the large chat", plain, writes)
        grow = child(["grow", "--what", str(args.big_chat // 100)], state)
        if grow.wait():
            raise SystemExit("growing the large chat failed")
        got, writes = with_writer(state, lambda: build(state, "grown"))
        report("large chat, built on (1% more)", got, writes)
    print(f"load average after: {os.getloadavg()[0]:.1f} (other work on the machine)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
