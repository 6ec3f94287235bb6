"""Search-all benchmark: `GET /api/search/all` over HTTP at the import benchmark's million
messages plus notes, meetings and file texts, by words, meaning and hybrid, against the
plainest search doing the same job in the same run; the embedding rate and the peak memory
of a worker with the model loaded.

    python bench/search_all_bench.py [--messages 1000000] [--notes 2000] [--meetings 200]
        [--files 2000] [--sample 2000] [--requests 200] [--keep DIR]

The store (made once and kept with `--keep`; each run works on a fresh copy of it): the
conversations benchmark's import of real chat lines (../shared/corpora/ubuntu-irc,
CC-BY-4.0) with its conversations built, `--notes` notes (the notes benchmark's), the
meetings benchmark's calendar with `--meetings` one-hour transcribed meetings, `--files`
file texts (the search benchmark's: three messages' lines each), every index drained and
every source cut into chunks.

Embedding (in a child process, as the worker runs it): `--sample` chunks taken evenly from
all chunks (every kind in its share), each read from its source, embedded with the real
model and written, as `embeddings_refresh` does it: chunks/s on this machine, and the
child's peak RSS (getrusage) with the model loaded. Embedding every chunk would take hours
here, so the other chunks get COPIES of real vectors (each the vector of a sampled chunk of
its kind, chosen by its id): an exact scan costs the same whatever the numbers are, so the
latency below is the latency of a full index; how well meaning finds things is
bench/meaning_eval.py's measure, not this one's.

Search: gunicorn (2 workers, as `wirecat start` runs it) on loopback, one client, an agent
token; queries of real words (fixed seed: common, mid and rare single words, two words, a
phrase, the first words of a message), `--requests` timed requests per mode after a warm-up.
Baseline, in this process, timed the same way right after each request: one FTS5 bm25
query per kind on the store's own words indexes (words), the query embedded and one exact
sqlite-vec KNN per kind (meaning), both (hybrid). Targets: p95 words <= 150 ms, hybrid
<= 250 ms; the embedding worker's peak RSS <= 600 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from conversations_bench import build as conversations_build  # noqa: E402
from conversations_bench import django_setup, manage, store_ready  # noqa: E402
from http_stack import free_port, pct, serve  # noqa: E402
from measure import peak_rss_mb, term_tiers  # noqa: E402

SEED = 20261202
WARM = 10  # untimed requests per mode first
MODES = ("words", "meaning", "hybrid")
TARGETS = {"words": 150.0, "hybrid": 250.0}
# The words indexes of each kind, for the baseline (meetings' and files' hold their titles
# and texts; conversations are found through their messages).
WORDS_TABLES = ("message_fts", "note_words", "meeting_words", "attachment_words")


# -- the store (children) -------------------------------------------------------------------


def child_fill(state: Path, notes: int, meetings: int, files: int, messages: int) -> None:
    """Notes, meetings and file texts into the store, every index drained, every source
    cut into chunks; what it made as JSON."""
    django_setup(state)
    import meetings_bench
    import notes_bench
    from django.db import connection
    from search_bench import add_files

    from archive.files.search_index import file_stems_drain
    from archive.meaning.services.cutting import source_cut, sources_due
    from archive.search.services.index import stems_drain, vocabulary_refresh

    out: dict[str, Any] = {}
    started = time.perf_counter()
    if notes:
        lines = notes_bench.corpus()
        folders = notes_bench.folder_paths(random.Random(SEED))  # noqa: S311 - a fixed sample
        notes_bench.our_store(notes_bench.make_notes(notes, lines, folders))
    if meetings:
        lines, nicks = meetings_bench.corpus()
        folder = state / "meeting-files"
        folder.mkdir(exist_ok=True)
        starts = meetings_bench.transcript_starts(meetings, datetime.now(UTC))
        calendars = meetings_bench.write_calendars(folder, meetings, starts, lines, nicks)
        transcripts, _ = meetings_bench.write_transcripts(folder, starts, lines, nicks)
        meetings_bench.our_import(calendars, transcripts)
        shutil.rmtree(folder)
    with connection.cursor() as cursor:
        out["files"] = add_files(cursor, max(1, messages // files)) if files else 0
    file_stems_drain()
    stems_drain()
    vocabulary_refresh(force=True)
    out["fill_seconds"] = time.perf_counter() - started
    started = time.perf_counter()
    due = sources_due()
    out["chunks"] = sum(source_cut(item) for item in due)
    out["sources"] = len(due)
    out["cut_seconds"] = time.perf_counter() - started
    print(json.dumps(out))


def child_embed(state: Path, sample: int) -> None:
    """Embed `sample` chunks taken evenly from all, as `embeddings_refresh` embeds (read
    again, checked fresh, embedded in batches, written); then give every other chunk a copy
    of a sampled vector of its kind. Figures as JSON."""
    django_setup(state)
    import numpy as np
    from django.db import connection

    import wirecat.celery  # noqa: F401 - the worker has its Celery app loaded
    from archive.meaning import jobs  # noqa: F401 - and the job's own modules
    from archive.meaning.model import current_spec, embedder
    from archive.meaning.models import Chunk
    from archive.meaning.services.refresh import EMBED_BATCH
    from archive.meaning.services.vectors import model_row, vectors_write
    from archive.meaning.texts import chunk_texts, fresh

    model = model_row(current_spec())
    total = Chunk.objects.count()
    step = max(1, total // max(sample, 1))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM archive_chunk)"
            " WHERE (n - 1) %% %s = 0 LIMIT %s",
            [step, sample],
        )
        picked = [int(row[0]) for row in cursor.fetchall()]
    began = time.perf_counter()
    model_of = embedder()
    load = time.perf_counter() - began
    started = time.perf_counter()
    chars = embedded = 0
    in_model = 0.0
    real: dict[int, list[np.ndarray]] = {}
    for first in range(0, len(picked), EMBED_BATCH):
        chunks = list(Chunk.objects.filter(pk__in=picked[first : first + EMBED_BATCH]))
        texts = chunk_texts(chunks)
        keyed: dict[tuple[int, bytes], str] = {}
        for chunk in chunks:
            text = texts.get(chunk.pk)
            if fresh(chunk, text):
                keyed.setdefault((chunk.kind, bytes(chunk.sha)), str(text))
        keys = list(keyed)
        began = time.perf_counter()
        numbers = model_of.embed([keyed[key] for key in keys])
        in_model += time.perf_counter() - began
        embedded += vectors_write(model, keys, numbers)
        chars += sum(len(keyed[key]) for key in keys)
        for (kind, _), row in zip(keys, numbers, strict=True):
            real.setdefault(kind, []).append(row)
    seconds = time.perf_counter() - started
    rss = peak_rss_mb()  # before the copies below, which are the benchmark's, not the worker's
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, kind, sha FROM archive_chunk ORDER BY id")
        rows = [(int(pk), int(kind), bytes(sha)) for pk, kind, sha in cursor.fetchall()]
    copied = 0
    chosen = set(picked)
    waiting = [(pk, kind, sha) for pk, kind, sha in rows if kind in real and pk not in chosen]
    seen: set[tuple[int, bytes]] = set()
    for first in range(0, len(waiting), 5_000):
        keys = []
        copies: list[np.ndarray] = []
        for pk, kind, sha in waiting[first : first + 5_000]:
            if (kind, sha) not in seen:
                seen.add((kind, sha))
                keys.append((kind, sha))
                copies.append(real[kind][pk % len(real[kind])])
        if keys:
            copied += vectors_write(model, keys, np.asarray(copies, dtype=np.float32))
    out = {
        "model": model.name,
        "chunks": total,
        "embedded": embedded,
        "chars": chars,
        "seconds": seconds,
        "load_seconds": load,
        "model_seconds": in_model,
        "peak_rss_mb": rss,
        "copied": copied,
        "copy_seconds": time.perf_counter() - started - seconds,
    }
    print(json.dumps(out))


def run_child(args: list[str], state: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", *args, "--state", str(state)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"the {args[0]} child failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def store_made(work: Path, args: argparse.Namespace) -> Path:
    """A fresh copy of the store with every source cut (made once, kept in `work`)."""
    kept = work / f"all-{args.messages}-{args.notes}-{args.meetings}-{args.files}"
    if not (kept / "wirecat.db").exists():
        state = store_ready(work, args.messages, 0)
        built = conversations_build(state, "full")
        print(
            f"conversations: {built['messages']:,} messages of {built['chats']} chats built"
            f" into {built['conversations']:,} conversations in {built['seconds']:,.0f} s"
        )
        what = [str(args.notes), str(args.meetings), str(args.files), str(args.messages)]
        made = run_child(["fill", *what], state)
        print(
            f"filled: notes, meetings, {made['files']:,} file texts, indexes drained in"
            f" {made['fill_seconds']:,.0f} s; {made['sources']:,} sources cut into"
            f" {made['chunks']:,} chunks in {made['cut_seconds']:,.0f} s"
        )
        shutil.rmtree(kept, ignore_errors=True)
        state.rename(kept)
    run = work / "all-run"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(kept, run)
    manage(["migrate", "-v0"], run)
    return run


# -- queries and the baseline ---------------------------------------------------------------


def make_queries(count: int) -> list[tuple[str, str, str]]:
    """(kind, query, the baseline's MATCH string): real words of the store's messages."""
    common, mid, rare, texts = term_tiers(
        "message_fts_vocab", "SELECT text FROM archive_message WHERE id % 997 = 0"
    )
    rng = random.Random(SEED)  # noqa: S311 - a fixed sample
    out: list[tuple[str, str, str]] = []
    while len(out) < count:
        a, b, r = rng.choice(common), rng.choice(mid), rng.choice(rare)
        words = re.findall(r"[a-z]{3,}", rng.choice(texts).lower()) or [a, b]
        pair = " ".join(words[:2])
        first = " ".join(words[:6])
        out += [
            ("common word", a, f'"{a}"'),
            ("mid word", b, f'"{b}"'),
            ("rare word", r, f'"{r}"'),
            ("two words", f"{a} {b}", f'"{a}" "{b}"'),
            ("phrase", f'"{pair}"', f'"{pair}"'),
            ("message's words", first, " ".join(f'"{w}"' for w in first.split())),
        ]
    return out[:count]


def baseline(match: str, text: str, mode: str) -> None:
    """The plainest search of every kind: FTS5 bm25 per words index, and the query
    embedded and one exact KNN per kind of chunk."""
    from django.db import connection

    from archive.meaning.model import current_spec, embedder
    from archive.meaning.models import ChunkKind, VectorModel

    with connection.cursor() as cursor:
        if mode != "meaning":
            for table in WORDS_TABLES:
                cursor.execute(
                    f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH %s"
                    " ORDER BY rank LIMIT 50",
                    [match],
                )
                cursor.fetchall()
        if mode != "words":
            model = VectorModel.objects.get(name=current_spec().name)
            probe = embedder().embed([text])[0].tobytes()
            for kind in ChunkKind:
                cursor.execute(
                    f"SELECT rowid, distance FROM {model.vec_table}"
                    " WHERE embedding MATCH %s AND k = 50 AND kind = %s",
                    [probe, int(kind)],
                )
                cursor.fetchall()


def agent_token() -> str:
    from archive.gateway.models import Agent
    from archive.gateway.services.agents import SCOPES, agent_create

    Agent.objects.filter(name="search-all-bench").delete()
    issued = agent_create(name="search-all-bench", scopes=sorted(SCOPES))
    Agent.objects.filter(pk=issued.agent.pk).update(rate_per_minute=10_000_000)
    return issued.token


def worker_peaks(master: int) -> list[int]:
    """The peak RSS (MB) of gunicorn's workers, from /proc."""
    peaks = []
    children = Path(f"/proc/{master}/task/{master}/children")
    for pid in children.read_text().split() if children.exists() else []:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peaks.append(int(line.split()[1]) // 1024)
    return peaks


def measure(
    state: Path, queries: list[tuple[str, str, str]], requests: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, int], list[int]]:
    """Each mode's request latencies over HTTP and the baseline's, interleaved; the hits
    per mode of the last request seen; the workers' peak RSS."""
    token = agent_token()
    from django.db import connection

    connection.close()
    port = free_port()
    server = serve(state, port, workers=2)
    ours: dict[str, list[float]] = {mode: [] for mode in MODES}
    plain: dict[str, list[float]] = {mode: [] for mode in MODES}
    sizes: dict[str, int] = {}
    try:
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=120) as c:
            for mode in MODES:
                for number in range(WARM + requests):
                    _, text, match = queries[number % len(queries)]
                    started = time.perf_counter()
                    response = c.get("/api/search/all", params={"q": text, "mode": mode})
                    spent = time.perf_counter() - started
                    if response.status_code != 200:
                        raise SystemExit(f"{mode} {text!r}: {response.status_code} {response.text}")
                    started = time.perf_counter()
                    baseline(match, text, mode)
                    spent_plain = time.perf_counter() - started
                    if number >= WARM:
                        ours[mode].append(spent)
                        plain[mode].append(spent_plain)
                    sizes[mode] = sizes.get(mode, 0) + len(response.json().get("items", []))
        peaks = worker_peaks(server.pid)
    finally:
        server.terminate()
        server.wait()
    return ours, plain, sizes, peaks


def knn_at_scale(probes: int) -> tuple[int, list[float], list[float]]:
    """The exact KNN of meaning search (k = 150 per kind of chunk, as `nearest` asks) on
    the store's vectors, and on a scratch vec0 table holding one vector per chunk (copies of
    the store's, by kind): what a store whose chunks all differ in text would scan.
    (vectors in the scratch table, seconds per probe on each)."""
    from django.db import connection

    from archive.meaning.model import current_spec
    from archive.meaning.models import VectorModel

    model = VectorModel.objects.get(name=current_spec().name)
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS bench_vec_scale")
        cursor.execute(
            "CREATE VIRTUAL TABLE bench_vec_scale USING vec0(kind integer partition key,"
            f" embedding float[{int(model.dims)}] distance_metric=cosine)"
        )
        cursor.execute(
            f"INSERT INTO bench_vec_scale (rowid, kind, embedding) SELECT c.id, c.kind,"
            f" t.embedding FROM archive_chunk AS c JOIN archive_vector AS v ON v.kind = c.kind"
            f" AND v.sha = c.sha AND v.model_id = %s JOIN {model.vec_table} AS t ON t.rowid = v.id",
            [model.pk],
        )
        cursor.execute("SELECT count(*) FROM bench_vec_scale")
        scale = int(cursor.fetchone()[0])
        cursor.execute(f"SELECT embedding FROM {model.vec_table} LIMIT %s", [probes])
        vectors = [bytes(row[0]) for row in cursor.fetchall()]
        kinds = [1, 2, 3, 4]
        spent: dict[str, list[float]] = {model.vec_table: [], "bench_vec_scale": []}
        for probe in vectors:
            for table, samples in spent.items():
                started = time.perf_counter()
                for kind in kinds:
                    cursor.execute(
                        f"SELECT rowid, distance FROM {table}"
                        " WHERE embedding MATCH %s AND k = 150 AND kind = %s",
                        [probe, kind],
                    )
                    cursor.fetchall()
                samples.append(time.perf_counter() - started)
        cursor.execute("DROP TABLE bench_vec_scale")
    return scale, spent[model.vec_table], spent["bench_vec_scale"]


def counts() -> dict[str, int]:
    from django.db import connection

    sql = {
        "messages": "SELECT count(*) FROM archive_message",
        "conversations": "SELECT count(*) FROM archive_conversation AS c JOIN"
        " archive_conversationstate AS s ON s.current_id = c.build_id",
        "notes": "SELECT count(*) FROM notes_note",
        "meetings": "SELECT count(*) FROM meetings_meeting",
        "transcripts": "SELECT count(*) FROM meetings_transcript",
        "segments": "SELECT count(*) FROM meetings_segment",
        "file texts": "SELECT count(*) FROM archive_attachmenttext WHERE state = 'done'",
        "chunks": "SELECT count(*) FROM archive_chunk",
        "vectors": "SELECT count(*) FROM archive_vector",
    }
    with connection.cursor() as cursor:
        found = {}
        for name, query in sql.items():
            cursor.execute(query)
            found[name] = int(cursor.fetchone()[0])
    return found


# -- the run --------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--notes", type=int, default=2_000)
    parser.add_argument("--meetings", type=int, default=200, help="one-hour transcripts")
    parser.add_argument("--files", type=int, default=2_000, help="file texts")
    parser.add_argument("--sample", type=int, default=2_000, help="chunks really embedded")
    parser.add_argument("--requests", type=int, default=200, help="timed requests per mode")
    parser.add_argument("--keep", type=Path, help="folder for the export and stores (kept)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--state", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("what", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "fill":
        child_fill(args.state, *(int(value) for value in args.what))
        return
    if args.child == "embed":
        child_embed(args.state, int(args.what[0]))
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="wirecat-search-all-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    state = store_made(work, args)

    got = run_child(["embed", str(args.sample)], state)
    rate = got["embedded"] / max(got["seconds"], 1e-9)
    print(
        f"embedding ({got['model']}, {os.cpu_count()} CPUs): {got['embedded']:,} chunks"
        f" ({got['chars'] / max(got['embedded'], 1):,.0f} characters on average) in"
        f" {got['seconds']:,.1f} s = {rate:,.1f} chunks/s (model loaded in"
        f" {got['load_seconds']:.1f} s, not counted; the model itself"
        f" {got['embedded'] / max(got['model_seconds'], 1e-9):,.1f} chunks/s, the rest is reading"
        f" the chunks from their sources and writing); all {got['chunks']:,} chunks would take"
        f" {got['chunks'] / max(rate, 1e-9) / 3600:,.1f} h"
    )
    print(
        f"embedding worker peak RSS with the model loaded: {got['peak_rss_mb']} MB"
        f" (target <= 600 MB: {'met' if got['peak_rss_mb'] <= 600 else 'NOT met'})"
    )
    print(
        f"COPIED VECTORS: {got['copied']:,} of the {got['chunks']:,} chunks hold a copy of a"
        f" real vector (written in {got['copy_seconds']:,.0f} s), only {got['embedded']:,} were"
        " embedded: the exact scan costs the same whatever the numbers; relevance is"
        " bench/meaning_eval.py's measure, not this one's"
    )

    django_setup(state)
    found = counts()
    print("store: " + ", ".join(f"{value:,} {name}" for name, value in found.items()))
    print(
        f"vectors: {got['embedded']:,} real, {got['copied']:,} copied"
        f" ({found['vectors']:,} in the store: one per distinct text of a kind, and the export"
        " repeats the corpus' logs, so many chunks share a text)"
    )
    queries = make_queries(max(args.requests, 60))
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    ours, plain, sizes, peaks = measure(state, queries, args.requests)
    print(
        f"{args.requests} timed requests per mode (after {WARM} untimed), one client,"
        " GET /api/search/all over HTTP (gunicorn, 2 workers), all kinds; the baseline"
        f" ({' + '.join(WORDS_TABLES)} bm25; query embedded + exact KNN per chunk kind)"
        " in-process right after each request"
    )
    for mode in MODES:
        line = [
            f"{mode:>8}: p50 {pct(ours[mode], 0.5):6.1f} ms  p95 {pct(ours[mode], 0.95):6.1f}"
            f" ms  p99 {pct(ours[mode], 0.99):6.1f} ms",
            f"baseline p50 {pct(plain[mode], 0.5):6.1f} ms  p95"
            f" {pct(plain[mode], 0.95):6.1f} ms  p99 {pct(plain[mode], 0.99):6.1f} ms",
            f"p95 ratio {pct(ours[mode], 0.95) / max(pct(plain[mode], 0.95), 1e-9):.1f}x",
        ]
        if mode in TARGETS:
            met = pct(ours[mode], 0.95) <= TARGETS[mode]
            line.append(f"target p95 <= {TARGETS[mode]:.0f} ms: {'met' if met else 'NOT met'}")
        line.append(f"{sizes.get(mode, 0) / (WARM + args.requests):.1f} items a request")
        print(" | ".join(line))
    print(f"web workers' peak RSS: {', '.join(f'{mb} MB' for mb in peaks) or 'not read'}")
    scale, now, full = knn_at_scale(min(args.requests, 50))
    print(
        f"exact KNN alone (4 kinds, k = 150 each): {found['vectors']:,} vectors p50"
        f" {pct(now, 0.5):.1f} ms p95 {pct(now, 0.95):.1f} ms; {scale:,} vectors (one per"
        f" chunk, as unique texts would hold) p50 {pct(full, 0.5):.1f} ms p95"
        f" {pct(full, 0.95):.1f} ms"
    )
    print(f"load average after: {os.getloadavg()[0]:.1f} (other work on the machine)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
