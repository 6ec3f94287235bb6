"""Import benchmark: a Telegram export of real chat lines, imported with the real command,
against the raw-SQLite limit measured in the same run.

    python bench/import_bench.py [--messages 1000000] [--keep DIR]

Prints the import's messages per second and peak memory: the largest process's RSS, and
for the import with its forked reader together the sum of their PSS (sampled every second)
and the sum of their RSS (every 250 ms; it counts the pages the two still share twice),
then the limit: the same rows inserted with `executemany` into the same schema followed by
FTS `rebuild` of both indexes, and the ratio of the two.
Targets: ratio >= 0.5, peak RSS <= 300 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import ijson
import sqlean
from ulid import ULID

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from make_telegram_export import write as write_export  # noqa: E402


def _tree_memory_kb(root: int, pss: bool) -> tuple[int, int]:
    """Memory of `root` and all its descendants (the import's reader process): the sum of
    their RSS, which counts the pages a forked child still shares with its parent twice,
    and the sum of their PSS, which splits each shared page between its sharers."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in tree:
                tree.add(pid)
                frontier.append(pid)
    rss_kb = pss_kb = 0
    for pid in tree:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            # smaps_rollup walks the process's page tables: read it only when asked.
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text() if pss else ""
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                rss_kb += int(line.split()[1])
        for line in rollup.splitlines():
            if line.startswith("Pss:"):
                pss_kb += int(line.split()[1])
    return rss_kb, pss_kb


def wirecat(args: list[str], state: Path) -> tuple[float, int, tuple[int, int], str]:
    """Run `wirecat ARGS` in a fresh process. Returns (seconds, peak RSS of the largest
    process in MB, peak (RSS, PSS) sums of the whole process tree in MB (RSS sampled every
    250 ms, PSS every second), output)."""
    env = {**os.environ, "WIRECAT_STATE_DIR": str(state)}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    peak_rss = peak_pss = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_rss, peak_pss
        ticks = 0
        while not done.wait(0.25):
            ticks += 1
            rss, pss = _tree_memory_kb(proc.pid, pss=ticks % 4 == 0)  # PSS once a second
            peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    assert proc.stdout is not None
    output = proc.stdout.read().decode(errors="replace")
    done.set()
    sampler.join()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"wirecat {' '.join(args)} failed:\n{output[-3000:]}")
    return elapsed, usage.ru_maxrss // 1024, (peak_rss // 1024, peak_pss // 1024), output


def raw_limit(export: Path, state: Path) -> tuple[float, int]:
    """Insert the export's messages with executemany into the schema exactly as migrated
    (it has no insert triggers: the sink indexes set-wise), then FTS `rebuild` of both
    indexes. Returns (seconds, rows)."""
    wirecat(["migrate", "-v0"], state)
    db = sqlean.connect(str(state / "wirecat.db"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    now = datetime.now(UTC).isoformat(" ")
    # Prepare every row first (not timed): the limit is the database's, not the parser's.
    chats: list[tuple[object, ...]] = []
    senders: dict[str, int] = {}
    rows: list[tuple[object, ...]] = []
    with export.open("rb") as handle:
        for chat_no, chat in enumerate(ijson.items(handle, "chats.list.item"), start=1):
            chats.append((chat_no, 1, str(chat["id"]), "group", chat["name"], "{}", None, 0, now))
            for message in chat["messages"]:
                text = message["text"]
                if isinstance(text, list):
                    text = "".join(p if isinstance(p, str) else p["text"] for p in text)
                sender = str(message.get("from_id", message.get("actor_id", "")))
                sender_pk = senders.setdefault(sender, len(senders) + 1)
                sent = datetime.fromtimestamp(int(message["date_unixtime"]), UTC).isoformat(" ")
                rows.append(
                    (
                        f"msg_{ULID()}",
                        1,
                        chat_no,
                        str(message["id"]),
                        sender_pk,
                        sent,
                        text,
                        (message["type"] == "service" and "service") or "text",
                        "in",
                        str(message.get("reply_to_message_id", "")),
                        None,
                        None,
                        "",
                        json.dumps(message, ensure_ascii=False, default=str),
                        "{}",
                        now,
                        now,
                    )
                )
    started = time.perf_counter()
    db.execute("BEGIN")
    db.execute(
        "INSERT INTO archive_account (id, provider, external_id, name, send_permission,"
        " created_at) VALUES (1, 'telegram', 'bench', 'bench', 'deny', ?)",
        (now,),
    )
    db.executemany(
        "INSERT INTO archive_identity (id, provider, external_id, display_name, phone,"
        " email, handle, created_at, updated_at) VALUES (?, 'telegram', ?, ?, '', '',"
        " '', ?, ?)",
        [(pk, ext, ext, now, now) for ext, pk in senders.items()],
    )
    db.executemany(
        "INSERT INTO archive_chat (id, account_id, external_id, kind, title,"
        " provider_metadata, last_message_at, message_count, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        chats,
    )
    db.executemany(
        "INSERT INTO archive_message (public_id, account_id, chat_id, external_id, sender_id,"
        " sent_at, text, kind, direction, reply_to_external_id, edited_at, deleted_at,"
        " delivery_status, raw_json, provider_metadata, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    db.execute("COMMIT")
    db.execute("INSERT INTO message_fts(message_fts) VALUES ('rebuild')")
    db.execute("INSERT INTO message_trigram(message_trigram) VALUES ('rebuild')")
    elapsed = time.perf_counter() - started
    db.close()
    return elapsed, len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="folder for the export and stores (kept)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="wirecat-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    export = work / f"result-{args.messages}.json"
    if not export.exists():
        count = write_export(export, args.messages)
        print(f"export: {count:,} messages, {export.stat().st_size / 1e6:,.0f} MB -> {export}")
    # Fresh stores every run: an export kept with --keep is reused, a store never is.
    for old in ("import-state", "raw-state", "raw-state-triggers"):
        shutil.rmtree(work / old, ignore_errors=True)
    store = work / "import-state"
    wirecat(["migrate", "-v0"], store)
    seconds, rss_mb, (tree_rss_mb, tree_pss_mb), output = wirecat(["import", str(export)], store)
    print(output.strip().splitlines()[-6:] and "\n".join(output.strip().splitlines()[-4:]))
    rate = args.messages / seconds
    print(
        f"import:    {args.messages:,} messages in {seconds:,.1f} s = {rate:,.0f} msg/s, "
        f"peak RSS {rss_mb} MB (largest process); import and reader together: "
        f"PSS {tree_pss_mb} MB, RSS sum {tree_rss_mb} MB (shared pages counted twice)"
    )
    limit_seconds, rows = raw_limit(export, work / "raw-state")
    limit_rate = rows / limit_seconds
    print(
        f"raw limit: {rows:,} rows executemany + FTS rebuild in {limit_seconds:,.1f} s = "
        f"{limit_rate:,.0f} rows/s"
    )
    print(
        f"ratio:     {rate / limit_rate:.2f} x the raw limit (target >= 0.5); "
        f"peak memory {rss_mb} MB largest process, {tree_pss_mb} MB PSS of both together "
        f"(target <= 300)"
    )


if __name__ == "__main__":
    main()
