"""Notes benchmark: note search over 50,000 notes of real text, against the plainest SQLite
doing the same job in the same run.

    python bench/notes_bench.py [--notes 50000] [--queries 300] [--keep DIR] [--quick]
    python bench/notes_bench.py --search-only DIR [--queries 300]

`--search-only DIR` runs only the search phase against the stores a `--keep DIR` run left
(DIR/state and DIR/baseline.db; migrated first, nothing written): the same seed, so the same
queries.

Input is made in the run (seeded, so every run writes the same notes): each note is a run
of 3 to 20 consecutive lines of ../shared/corpora/ubuntu-irc (Kummerfeld et al., ACL 2019,
CC-BY-4.0), some as list items, titled by the first words of its first line; notes sit in
a folder tree (about 60 folders, three levels, a tenth of the notes at the top), a fifth
carry a tag (30 tags, a few common and many rare), and their last change is spread over
three years.

Our path (timed): `note_create` for every note, in transactions of 1,000 as a vault import
would write them (revisions, names, links, the feed and the words and trigram indexes by
trigger), `tag_add` for the taggings, then `note_stems_drain` (what the index job does once
a save commits) until the stems queue is empty. The Celery broker is in memory: nothing
runs the jobs the saves ask for but the drain timed here.

Baseline (same process): the same notes with `executemany` into a plain table (title, body,
folder, last change; a taggings table; the indexes a plain design has), then FTS5 `rebuild`
of a words index over title and body. Search: `--queries` queries (common, mid and rare
words, two words, phrases, prefixes, words with other forms, and `tag:`, `in:` and dates
with and without words) through `note_search`, each the median of 3 runs, against the
baseline's plain SQL for the same terms and filters: `SELECT rowid FROM fts WHERE fts MATCH ?
ORDER BY rank LIMIT 20`, joined to its tables for a filter. Target: note_search p95 <= 50 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlean
from measure import RUNS, peak_rss_mb, percentiles, term_tiers, timed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CORPUS = ROOT.parent / "shared" / "corpora" / "ubuntu-irc" / "train"
LINE = re.compile(r"^\[\d\d:\d\d\] <[^>]+> (.+)$")
SEED = 20261202
BATCH = 1_000  # notes per transaction
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)  # fixed, so every run dates its notes alike
TOP = ("Work", "Home", "Projects", "Reading", "People", "Journal", "Servers", "Ideas")
KINDS = (
    "common word",
    "mid word",
    "rare word",
    "two words",
    "phrase",
    "prefix",
    "other forms",
    "word tag:",
    "tag:",
    "word in:",
    "in:",
    "word after:",
    "on: (a month)",
)


# --- input ------------------------------------------------------------------------------


def corpus() -> list[str]:
    """Lines of real chat text with at least three words, in the order they were said."""
    lines: list[str] = []
    for raw in sorted(CORPUS.glob("*.raw.txt")):
        for line in raw.read_text(errors="replace").splitlines():
            found = LINE.match(line)
            if found is None:
                continue
            text = " ".join(found.group(1).split())
            if len(text.split()) >= 3 and "-->" not in text:
                lines.append(text)
    return lines


def folder_paths(rng: random.Random) -> list[str]:
    """A tree of about 60 folders, three levels deep."""
    paths: list[str] = []
    for top in TOP:
        paths.append(top)
        for child in range(rng.randint(2, 6)):
            middle = f"{top}/{top[:3]} {child + 1}"
            paths.append(middle)
            paths.extend(f"{middle}/Part {leaf + 1}" for leaf in range(rng.randint(0, 2)))
    return paths


def tag_names() -> list[str]:
    return [f"tag{number:02}" for number in range(30)]


def make_notes(
    count: int, lines: list[str], folders: list[str]
) -> list[tuple[str, str, str | None, datetime, str | None]]:
    """(title, body, folder path or None, last change, tag or None) for `count` notes."""
    rng = random.Random(SEED)  # noqa: S311 - a fixed sample, not a secret
    tags = tag_names()
    weights = [1 / (rank + 1) for rank in range(len(tags))]  # a few common, many rare
    notes = []
    for _ in range(count):
        size = rng.randint(3, 20)
        start = rng.randrange(len(lines) - size)
        run = lines[start : start + size]
        listed = rng.random() < 0.3
        body = "\n".join(f"- {line}" if listed else line for line in run)
        title = " ".join(run[0].split()[:7])[:200]
        folder = rng.choice(folders) if rng.random() >= 0.1 else None
        changed = NOW - timedelta(seconds=rng.randint(0, 3 * 365 * 24 * 3600))
        tag = rng.choices(tags, weights)[0] if rng.random() < 0.2 else None
        notes.append((title, body, folder, changed, tag))
    return notes


# --- measuring --------------------------------------------------------------------------


def our_store(notes: list[tuple[str, str, str | None, datetime, str | None]]) -> dict[str, float]:
    """The notes through the notes services, then the stems drain their commits lead to."""
    from django.db import transaction

    from archive.tags.services import tag_add, tag_target
    from notes.search_index import note_stems_drain
    from notes.services.folders import folder_ensure
    from notes.services.notes import note_create

    started = time.perf_counter()
    folders = {path: folder_ensure(path) for path in {note[2] for note in notes} if path}
    tagged = 0
    for first in range(0, len(notes), BATCH):
        with transaction.atomic():
            for title, body, path, changed, tag in notes[first : first + BATCH]:
                note = note_create(
                    title=title,
                    body=body,
                    folder=folders[path] if path else None,
                    created_at=changed - timedelta(days=3),
                    updated_at=changed,
                )
                if tag is not None:
                    tag_add(target=tag_target(kind="note", key=note.pk), name=tag)
                    tagged += 1
    stored = time.perf_counter() - started
    began = time.perf_counter()
    drained = note_stems_drain()
    assert drained.left == 0, drained
    return {"store": stored, "drain": time.perf_counter() - began, "tagged": tagged}


def baseline_store(
    db_path: Path, notes: list[tuple[str, str, str | None, datetime, str | None]]
) -> tuple[Any, float]:
    """The same notes with executemany into plain tables, then FTS5 rebuild."""
    folders = sorted({note[2] for note in notes if note[2]})
    folder_ids = {path: number + 1 for number, path in enumerate(folders)}
    tag_ids = {name: number + 1 for number, name in enumerate(tag_names())}
    db = sqlean.connect(str(db_path), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE folder (id INTEGER PRIMARY KEY, path TEXT)")
    db.execute(
        "CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT, body TEXT, folder_id INTEGER,"
        " updated_at TEXT)"
    )
    db.execute("CREATE TABLE tagging (tag_id INTEGER, note_id INTEGER)")
    db.execute(
        "CREATE VIRTUAL TABLE fts USING fts5(title, body, content='note', content_rowid='id',"
        " tokenize='unicode61 remove_diacritics 2')"
    )
    started = time.perf_counter()
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO folder (id, path) VALUES (?, ?)", [(v, k) for k, v in folder_ids.items()]
    )
    db.executemany(
        "INSERT INTO note (id, title, body, folder_id, updated_at) VALUES (?, ?, ?, ?, ?)",
        [
            (
                number + 1,
                title,
                body,
                folder_ids.get(path) if path else None,
                changed.replace(tzinfo=None).isoformat(" "),
            )
            for number, (title, body, path, changed, _) in enumerate(notes)
        ],
    )
    db.executemany(
        "INSERT INTO tagging (tag_id, note_id) VALUES (?, ?)",
        [(tag_ids[tag], number + 1) for number, (*_, tag) in enumerate(notes) if tag],
    )
    db.execute("CREATE INDEX note_folder ON note (folder_id, updated_at)")
    db.execute("CREATE INDEX note_updated ON note (updated_at)")
    db.execute("CREATE INDEX tagging_tag ON tagging (tag_id, note_id)")
    db.execute("COMMIT")
    db.execute("INSERT INTO fts(fts) VALUES ('rebuild')")
    return db, time.perf_counter() - started


Query = tuple[str, str, str, list[Any]]


def make_queries(count: int, base_db: Any) -> list[Query]:
    """(kind, query, baseline SQL, baseline params) with the same terms, `count` in all."""

    rng = random.Random(SEED + 1)  # noqa: S311
    common, mid, rare, texts = term_tiers(
        "note_words_vocab", "SELECT body FROM notes_note WHERE id % 97 = 0 LIMIT 2000"
    )
    # Words whose stem is shorter than the word: "files" also finds "file".
    forms = [term for term in mid if term.endswith(("s", "ing", "ed"))] or mid
    folders = base_db.execute("SELECT id, path FROM folder").fetchall()
    plain = "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT 20"
    joined = (
        "SELECT n.id FROM fts JOIN note AS n ON n.id = fts.rowid WHERE fts MATCH ? AND {}"
        " ORDER BY rank LIMIT 20"
    )
    newest = "SELECT n.id FROM note AS n WHERE {} ORDER BY n.updated_at DESC LIMIT 20"
    in_tag = "n.id IN (SELECT note_id FROM tagging WHERE tag_id = ?)"
    out: list[Query] = []
    while len(out) < count:
        a, b, m, r = rng.choice(common), rng.choice(common), rng.choice(mid), rng.choice(rare)
        words = re.findall(r"[a-z]{3,}", rng.choice(texts).lower()) if texts else []
        start = rng.randrange(max(1, len(words) - 1))
        phrase = " ".join(words[start : start + 2]) if len(words) >= 2 else f"{a} {b}"
        tag_number = min(int(rng.expovariate(0.25)), 29)
        tag = tag_names()[tag_number]
        form = rng.choice(forms)
        _, path = rng.choice(folders)
        under = [found for found, other in folders if other == path or other.startswith(path + "/")]
        inside = f"n.folder_id IN ({','.join(str(found) for found in under)})"
        year = rng.randint(2024, 2026)
        month = rng.randint(1, 12 if year < 2026 else 11)
        after = f"{year}-{month:02}-01"
        month_end = f"{year + month // 12}-{month % 12 + 1:02}-01"
        out += [
            ("common word", a, plain, [f'"{a}"']),
            ("mid word", m, plain, [f'"{m}"']),
            ("rare word", r, plain, [f'"{r}"']),
            ("two words", f"{b} {m}", plain, [f'"{b}" AND "{m}"']),
            ("phrase", f'"{phrase}"', plain, [f'"{phrase}"']),
            ("prefix", f"{b[:3]}*", plain, [f'"{b[:3]}"*']),
            ("other forms", form, plain, [f'"{form}"']),
            ("word tag:", f"{a} tag:{tag}", joined.format(in_tag), [f'"{a}"', tag_number + 1]),
            ("tag:", f"tag:{tag}", newest.format(in_tag), [tag_number + 1]),
            ("word in:", f'{a} in:"{path}"', joined.format(inside), [f'"{a}"']),
            ("in:", f'in:"{path}"', newest.format(inside), []),
            (
                "word after:",
                f"{m} after:{after}",
                joined.format("n.updated_at >= ?"),
                [f'"{m}"', f"{after} 00:00:00"],
            ),
            (
                "on: (a month)",
                f"on:{after[:7]}",
                newest.format("n.updated_at >= ? AND n.updated_at < ?"),
                [f"{after} 00:00:00", f"{month_end} 00:00:00"],
            ),
        ]
    return out[:count]


def search_phase(base_db: Any, queries: int) -> None:
    """`queries` queries through `note_search` against the baseline's plain SQL."""
    from notes.search import note_search

    plan = make_queries(queries, base_db)
    service: list[float] = []
    raw: list[float] = []
    by_kind: dict[str, list[float]] = {}
    raw_by_kind: dict[str, list[float]] = {}
    for kind, query, raw_sql, raw_params in plan:

        def raw_call(sql: str = raw_sql, params: list[Any] = raw_params) -> None:
            base_db.execute(sql, params).fetchall()

        def service_call(q: str = query) -> None:
            note_search(query=q, limit=20, now=NOW)

        raw.append(timed(raw_call))
        raw_by_kind.setdefault(kind, []).append(raw[-1])
        spent = timed(service_call)
        service.append(spent)
        by_kind.setdefault(kind, []).append(spent)
    base_rows = base_db.execute("SELECT count(*) FROM note").fetchone()[0]
    base_db.close()
    print(f"search:   {len(plan)} queries over {base_rows:,} notes, median of {RUNS} runs each")
    for label, samples in (("note_search", service), ("raw MATCH", raw)):
        p50, p95, top = percentiles(samples)
        print(f"search:   {label:>11}: p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  max {top:7.1f} ms")
    for kind in KINDS:
        if kind in by_kind:
            p50, p95, top = percentiles(by_kind[kind])
            raw_p50, raw_p95, _ = percentiles(raw_by_kind[kind])
            print(
                f"    {kind:>13}: p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  max {top:7.1f} ms"
                f"  (raw p50 {raw_p50:5.1f} ms  p95 {raw_p95:5.1f} ms)"
            )
    p95_service, p95_raw = percentiles(service)[1], percentiles(raw)[1]
    print(
        f"ratio:    note_search p95 / raw p95 = {p95_service / max(p95_raw, 1e-9):.2f};"
        f" target: note_search p95 <= 50 ms ({'met' if p95_service <= 50 else 'NOT met'})"
    )


def _django(state: Path) -> None:
    """Migrate the store in `state` and set Django up on it, with a broker in memory."""
    env = {**os.environ, "WIRECAT_STATE_DIR": str(state)}
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"], cwd=ROOT, env=env, check=True
    )
    os.environ["WIRECAT_STATE_DIR"] = str(state)
    os.environ["CELERY_BROKER_URL"] = "memory://localhost/"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wirecat.settings")
    import django

    django.setup()


def search_only(work: Path, queries: int) -> None:
    """The search phase alone, on the stores a `--keep` run left in `work`."""
    state, baseline = work / "state", work / "baseline.db"
    if not state.is_dir() or not baseline.is_file():
        raise SystemExit(f"{work}: no kept run here (state/ and baseline.db from --keep)")
    _django(state)
    search_phase(sqlean.connect(str(baseline), isolation_level=None), queries)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--notes", type=int, default=None, help="notes (default 50,000)")
    parser.add_argument("--queries", type=int, default=None, help="search queries (300)")
    parser.add_argument("--keep", type=Path, help="folder for the stores (kept)")
    parser.add_argument(
        "--search-only", type=Path, metavar="DIR", help="only search a kept run's stores"
    )
    parser.add_argument("--quick", action="store_true", help="a quick run: 2,000 notes, 60 queries")
    args = parser.parse_args(argv)
    count = args.notes if args.notes is not None else (2_000 if args.quick else 50_000)
    queries = args.queries if args.queries is not None else (60 if args.quick else 300)
    if args.search_only is not None:
        search_only(args.search_only, queries)
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="wirecat-notes-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    # Fresh stores every run.
    for old in ("state", "baseline.db", "baseline.db-wal", "baseline.db-shm"):
        target = work / old
        shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(True)

    began = time.perf_counter()
    lines = corpus()
    folders = folder_paths(random.Random(SEED + 2))  # noqa: S311
    notes = make_notes(count, lines, folders)
    size = sum(len(title) + len(body) for title, body, *_ in notes) / 1e6
    tagged = sum(1 for note in notes if note[-1])
    print(
        f"input:    {count:,} notes ({size:,.1f} MB of text) in {len(folders)} folders,"
        f" {tagged:,} tagged, made in {time.perf_counter() - began:.1f} s"
        f" from {len(lines):,} lines of ubuntu-irc (CC-BY-4.0)"
    )

    _django(work / "state")
    ours = our_store(notes)
    rss = peak_rss_mb()
    print(
        f"store:    {count:,} notes and {ours['tagged']:,.0f} tags in {ours['store']:,.1f} s ="
        f" {count / ours['store']:,.0f} notes/s (note_create, tag_add); stems drained in"
        f" {ours['drain']:,.1f} s; peak RSS {rss} MB"
    )
    base_db, base_seconds = baseline_store(work / "baseline.db", notes)
    print(
        f"baseline: {count:,} notes executemany + FTS5 rebuild in {base_seconds:,.1f} s"
        f" = {count / base_seconds:,.0f} notes/s"
    )
    search_phase(base_db, queries)


if __name__ == "__main__":
    main()
