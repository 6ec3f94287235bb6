"""Import benchmark: single-chat Telegram exports of real chat lines, imported with the real
command, against two baselines measured in the same run.

    python bench/import_bench.py [--messages 1000000] [--per-chat 5000] [--keep DIR]

Data: `--messages` lines of ../shared/corpora/ubuntu-irc as single-chat Telegram exports of
`--per-chat` messages each (200 of 5,000 by default: DIR/chats-N-P/chat-NNN/result.json,
written by bench/make_telegram_export.py and reused on the next run with the same --keep).

Measured, each on a fresh store:
- the import: `wirecat import DIR/chat-*/result.json`, every file in one command in a fresh
  process, what a user types. Its time, messages per second, peak memory (the largest
  process's peak RSS; for the process tree, the sum of PSS sampled every second and the sum
  of RSS every 250 ms, which counts pages a forked child shares with its parent twice);
- the plain limit: the same messages (rows prepared before the clock) inserted with
  `executemany` into a plain table (id, chat_id, external_id, sender, sent_at, text, raw_json
  as the export's JSON), then `rebuild` of a words and a trigram FTS5 index on it, WAL and
  synchronous=NORMAL as in the app;
- the migrated schema: the same rows inserted with `executemany` into WireCat's schema as
  migrated (raw JSON as text; required columns the bench does not know are filled with
  empty values and named), then `rebuild` of both FTS tables.

Prints the three times and rates, the import's ratio to each baseline, the store's bytes
(the database file after a TRUNCATE checkpoint; attachment blobs excluded, there are none
here) against the plain store's, the 10 largest objects of both stores (dbstat), peak
memory, and a summary line with PASS/MISS per target.
Targets: >= 30,000 msg/s and >= 0.5x the plain limit; store <= 1.6x the plain store's
bytes; peak memory <= 300 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import sqlean
from ulid import ULID

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from make_telegram_export import write_chats  # noqa: E402

RATE_TARGET = 30_000  # msg/s
RATIO_TARGET = 0.5  # of the plain limit
STORE_TARGET = 1.6  # x the plain store's bytes
MEMORY_TARGET = 300  # MB

PLAIN_SCHEMA = """
CREATE TABLE message (id INTEGER PRIMARY KEY, chat_id INTEGER, external_id TEXT,
    sender TEXT, sent_at TEXT, text TEXT, raw_json TEXT);
CREATE VIRTUAL TABLE words USING fts5(text, content='message', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE trigram USING fts5(text, content='message', content_rowid='id',
    tokenize='trigram remove_diacritics 1');
"""


class Row(NamedTuple):
    """One exported message as both baselines store it."""

    chat_no: int
    external_id: str
    sender: str
    sent_at: str
    text: str
    raw_json: str
    kind: str
    reply_to: str


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
        raise SystemExit(f"wirecat {' '.join(args[:3])} ... failed:\n{output[-3000:]}")
    return elapsed, usage.ru_maxrss // 1024, (peak_rss // 1024, peak_pss // 1024), output


def exports(work: Path, messages: int, per_chat: int) -> list[Path]:
    """The single-chat exports, written once per (messages, per_chat) and kept in `work`: a
    folder is renamed into place only when complete."""
    folder = work / f"chats-{messages}-{per_chat}"
    if not folder.exists():
        partial = work / f"{folder.name}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        write_chats(partial, messages, per_chat)
        partial.rename(folder)
    files = sorted(folder.glob("chat-*/result.json"))
    size = sum(path.stat().st_size for path in files)
    print(f"data:      {messages:,} messages in {len(files)} chat exports, {size / 1e6:,.0f} MB")
    print(f"           {folder}")
    return files


def read_rows(files: list[Path]) -> tuple[list[Row], list[tuple[str, str]]]:
    """Every message of the exports as a Row, and each file's (chat id, title)."""
    rows: list[Row] = []
    chats: list[tuple[str, str]] = []
    for chat_no, path in enumerate(files, start=1):
        chat = orjson.loads(path.read_bytes())
        chats.append((str(chat["id"]), chat["name"]))
        for message in chat["messages"]:
            text = message["text"]
            if isinstance(text, list):
                text = "".join(p if isinstance(p, str) else p["text"] for p in text)
            sent = datetime.fromtimestamp(int(message["date_unixtime"]), UTC)
            rows.append(
                Row(
                    chat_no,
                    str(message["id"]),
                    str(message.get("from_id", message.get("actor_id", ""))),
                    sent.isoformat(" "),
                    text,
                    json.dumps(message, ensure_ascii=False),
                    "service" if message["type"] == "service" else "text",
                    str(message.get("reply_to_message_id", "")),
                )
            )
    return rows, chats


def _connect(path: Path) -> Any:
    db = sqlean.connect(str(path), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def store_bytes(path: Path) -> tuple[int, list[tuple[str, int]]]:
    """The database file's bytes after a TRUNCATE checkpoint, and its 10 largest objects
    (tables and indexes, dbstat; the file's free pages count as one)."""
    db = sqlean.connect(str(path), isolation_level=None)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    objects = db.execute("SELECT name, pgsize FROM dbstat WHERE aggregate = TRUE").fetchall()
    free = db.execute("PRAGMA freelist_count").fetchone()[0]
    free *= db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    objects.append(("(free pages)", free))
    return path.stat().st_size, sorted(objects, key=lambda item: -item[1])[:10]


def plain_limit(rows: list[Row], path: Path) -> float:
    """executemany into a plain table in one transaction, then FTS5 `rebuild` of a words and
    a trigram index. Returns seconds."""
    db = _connect(path)
    db.executescript(PLAIN_SCHEMA)
    values = [row[:6] for row in rows]  # prepared before the clock
    started = time.perf_counter()
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO message (chat_id, external_id, sender, sent_at, text, raw_json)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        values,
    )
    db.execute("COMMIT")
    db.execute("INSERT INTO words(words) VALUES ('rebuild')")
    db.execute("INSERT INTO trigram(trigram) VALUES ('rebuild')")
    elapsed = time.perf_counter() - started
    db.close()
    return elapsed


def _insert(
    db: Any, table: str, given: set[str], rows: Iterable[dict[str, object]]
) -> tuple[str, list[tuple[object, ...]], list[str]]:
    """An INSERT into `table` as migrated and its values: the `given` columns the table has,
    plus an empty value for each required column the bench does not know (named in the
    third item, so a schema change shows in the output instead of failing the run)."""
    table_sql = db.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    columns: list[str] = []
    empty: dict[str, object] = {}
    for _, name, declared, notnull, default, pk in db.execute(f"PRAGMA table_info({table})"):
        if name in given:
            columns.append(name)
        elif notnull and default is None and not pk:
            columns.append(name)
            kind = declared.lower()
            if f'json_valid("{name}")' in table_sql.lower():
                empty[name] = "{}"
            elif "blob" in kind:
                empty[name] = b""
            elif "int" in kind or "bool" in kind or "real" in kind:
                empty[name] = 0
            else:
                empty[name] = ""
    values = [tuple(row.get(column, empty.get(column)) for column in columns) for row in rows]
    marks = ", ".join("?" * len(columns))
    statement = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
    return statement, values, [f"{table}.{name}" for name in empty]


def migrated_limit(
    rows: list[Row], chats: list[tuple[str, str]], state: Path
) -> tuple[float, int, list[str]]:
    """The same rows with executemany into WireCat's schema as migrated (its own triggers
    included; the raw JSON as text, which the column takes as well as a compressed frame:
    compressing is the importer's work), then FTS `rebuild` of both indexes. Returns
    (seconds, store bytes after a TRUNCATE checkpoint, the required columns the bench
    filled with empty values)."""
    wirecat(["migrate", "-v0"], state)
    db = _connect(state / "wirecat.db")
    now = datetime.now(UTC).isoformat(" ")
    message_columns = {r[1]: r[2].lower() for r in db.execute("PRAGMA table_info(archive_message)")}
    as_bytes = "blob" in message_columns.get("raw_json", "")
    senders: dict[str, int] = {}
    for row in rows:
        senders.setdefault(row.sender, len(senders) + 1)

    def messages() -> Iterator[dict[str, object]]:
        for row in rows:
            yield {
                "public_id": f"msg_{ULID()}",
                "account_id": 1,
                "chat_id": row.chat_no,
                "external_id": row.external_id,
                "sender_id": senders[row.sender],
                "sent_at": row.sent_at,
                "text": row.text,
                "kind": row.kind,
                "direction": "in",
                "reply_to_external_id": row.reply_to,
                "delivery_status": "",
                "raw_json": row.raw_json.encode() if as_bytes else row.raw_json,
                "provider_metadata": "{}",
                "created_at": now,
                "updated_at": now,
            }

    # Prepare every statement and row first (not timed): the limit is the database's.
    account = _insert(
        db,
        "archive_account",
        {"id", "provider", "external_id", "name", "send_permission", "created_at"},
        [
            {
                "id": 1,
                "provider": "telegram",
                "external_id": "bench",
                "name": "bench",
                "send_permission": "deny",
                "created_at": now,
            }
        ],
    )
    identity_columns = {"id", "provider", "external_id", "display_name", "phone", "email"}
    identity_columns |= {"handle", "created_at", "updated_at"}
    identities = _insert(
        db,
        "archive_identity",
        identity_columns,
        (
            {
                "id": pk,
                "provider": "telegram",
                "external_id": ext,
                "display_name": ext,
                "phone": "",
                "email": "",
                "handle": "",
                "created_at": now,
                "updated_at": now,
            }
            for ext, pk in senders.items()
        ),
    )
    chat_columns = {"id", "account_id", "external_id", "kind", "title", "provider_metadata"}
    chat_columns |= {"message_count", "created_at"}
    chat_rows = _insert(
        db,
        "archive_chat",
        chat_columns,
        (
            {
                "id": number,
                "account_id": 1,
                "external_id": external_id,
                "kind": "group",
                "title": title,
                "provider_metadata": "{}",
                "message_count": 0,
                "created_at": now,
            }
            for number, (external_id, title) in enumerate(chats, start=1)
        ),
    )
    first = next(messages(), {})
    message_rows = _insert(db, "archive_message", set(first), messages())
    filled = [
        name for _, _, names in (account, identities, chat_rows, message_rows) for name in names
    ]
    if "raw_json" not in message_columns:
        filled.append("archive_message has no raw_json column: no provider JSON stored")
    started = time.perf_counter()
    db.execute("BEGIN")
    for statement, values, _ in (account, identities, chat_rows, message_rows):
        db.executemany(statement, values)
    db.execute("COMMIT")
    db.execute("INSERT INTO message_fts(message_fts) VALUES ('rebuild')")
    db.execute("INSERT INTO message_trigram(message_trigram) VALUES ('rebuild')")
    elapsed = time.perf_counter() - started
    db.close()
    size, _ = store_bytes(state / "wirecat.db")
    return elapsed, size, filled


def _objects(left: list[tuple[str, int]], right: list[tuple[str, int]]) -> None:
    print(f"  {'WireCat store (dbstat)':<44} {'plain store (dbstat)':<32}")
    for index in range(max(len(left), len(right))):
        cells = []
        for objects, width in ((left, 36), (right, 24)):
            name, size = objects[index] if index < len(objects) else ("", 0)
            cells.append(f"{name[:width]:<{width}} {size / 1e6:>6.0f} MB" if name else "")
        print(f"  {cells[0]:<44} {cells[1]}")


def _folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--per-chat", type=int, default=5_000, help="messages per chat export")
    parser.add_argument("--keep", type=Path, help="folder for the exports and stores (kept)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="wirecat-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    files = exports(work, args.messages, args.per_chat)
    # Fresh stores every run: exports kept with --keep are reused, a store never is.
    for old in ("import-state", "migrated-state", "plain"):
        shutil.rmtree(work / old, ignore_errors=True)

    store = work / "import-state"
    wirecat(["migrate", "-v0"], store)
    seconds, rss_mb, (tree_rss_mb, tree_pss_mb), output = wirecat(
        ["import", *map(str, files)], store
    )
    added = sum(int(n.replace(",", "")) for n in re.findall(r"added ([\d,]+)", output))
    rate = args.messages / seconds
    print("\n".join(output.strip().splitlines()[-2:]))
    print(
        f"import:    {args.messages:,} messages ({added:,} added) from {len(files)} files in"
        f" one command: {seconds:,.1f} s = {rate:,.0f} msg/s"
    )
    if added != args.messages:
        print(f"           (the import added {added:,} of {args.messages:,} messages)")
    wirecat_bytes, wirecat_objects = store_bytes(store / "wirecat.db")
    blobs = _folder_bytes(store / "blobs") if (store / "blobs").exists() else 0

    rows, chats = read_rows(files)
    (work / "plain").mkdir()
    plain_seconds = plain_limit(rows, work / "plain" / "plain.db")
    plain_rate = len(rows) / plain_seconds
    plain_bytes, plain_objects = store_bytes(work / "plain" / "plain.db")
    print(
        f"plain:     {len(rows):,} rows executemany + FTS5 rebuild (words, trigram) in"
        f" {plain_seconds:,.1f} s = {plain_rate:,.0f} msg/s"
    )
    migrated_seconds, migrated_bytes, filled = migrated_limit(rows, chats, work / "migrated-state")
    migrated_rate = len(rows) / migrated_seconds
    print(
        f"migrated:  {len(rows):,} rows executemany into the migrated schema + FTS rebuild in"
        f" {migrated_seconds:,.1f} s = {migrated_rate:,.0f} msg/s;"
        f" store {migrated_bytes / 1e6:,.0f} MB"
    )
    if filled:
        print(f"           filled with empty values: {', '.join(filled)}")
    del rows

    ratio = rate / plain_rate
    print(
        f"ratio:     {ratio:.2f} x the plain limit (target >= {RATIO_TARGET}),"
        f" {rate / migrated_rate:.2f} x the migrated schema"
    )
    size_ratio = wirecat_bytes / plain_bytes
    print(
        f"store:     {wirecat_bytes / 1e6:,.0f} MB against the plain store's"
        f" {plain_bytes / 1e6:,.0f} MB = {size_ratio:.2f} x (target <= {STORE_TARGET});"
        f" database files after a TRUNCATE checkpoint, attachment blobs excluded"
        f" ({blobs / 1e6:,.0f} MB here)"
    )
    _objects(wirecat_objects, plain_objects)
    memory = max(rss_mb, tree_pss_mb)
    print(
        f"memory:    peak RSS {rss_mb} MB (largest process); the import's process tree:"
        f" PSS {tree_pss_mb} MB, RSS sum {tree_rss_mb} MB (shared pages counted twice)"
        f" (target <= {MEMORY_TARGET}, on the larger of RSS and PSS)"
    )

    def verdict(met: bool) -> str:
        return "PASS" if met else "MISS"

    print(
        f"summary:   rate {rate:,.0f} msg/s {verdict(rate >= RATE_TARGET)};"
        f" {ratio:.2f} x plain {verdict(ratio >= RATIO_TARGET)};"
        f" store {size_ratio:.2f} x plain {verdict(size_ratio <= STORE_TARGET)};"
        f" memory {memory} MB {verdict(memory <= MEMORY_TARGET)}"
    )


if __name__ == "__main__":
    main()
