"""Search measured in its own domain: questions asked in the Ubuntu IRC logs (Kummerfeld et
al., ACL 2019, CC-BY-4.0), each looked for among every message of the logs, by words, by
meaning and by both (hybrid), and scored against the gold conversation it started.

    python bench/meaning_eval.py [--logs 20] [--queries 300] [--half report|tune]
                                 [--withhold] [--lines N] [--keep DIR]

1. The first `--logs` held-out logs of the train split (never read by the conversation
   rules' training) are written as Telegram exports and imported into a fresh store, and our
   builder builds their conversations (bench/conversations_eval.py: the same exports, the
   same commands); then `embeddings_refresh` runs until nothing waits (timed: chunks/s).
2. Gold conversations: the connected components of each log's annotated reply links. A
   component is a query when it starts a conversation (its first line links to itself), has
   at least 4 non-system lines, and that first line holds a "?" and at least 4 words; the
   query is that line's text, the relevant set the component's other non-system lines. Every
   other message of the store is a distractor.
3. Logs alternate between two halves: the first, third, ... log's queries are reported
   (`--half report`, the default), the others' (`--half tune`) are for trying choices on.
   Both halves' messages are in the one store. At most `--queries` queries, drawn with a
   fixed seed.
4. Each query's text becomes a safe query for the query language: its letters-and-digits
   words, lower-cased (so none reads as `OR` or a field), each once, at most `MAX_WORDS`,
   joined by ` OR `. Every mode gets that query (`search_all(kinds=["message"], limit=50)`).
5. Per mode: nDCG@10 (binary relevance; the ideal over min(|relevant|, 10)) and recall@50,
   on the list with the query's own message taken out; the mean over queries. Beside them the
   plainest baseline, in the same run: SQLite FTS5 bm25 over a table of the same messages'
   text with the same words ORed.

The query's own line is in the store (as the question was asked): its chunk is usually the
nearest to it, so meaning is helped by finding the thread the question starts, as our
builder cut it. `--withhold` leaves every query's line out of the store instead: a question
never seen, whose thread is found by its answers alone. `--lines N` keeps only each log's
last N lines (the smoke test's tiny run); `--keep DIR` keeps the exports and the store, and
a run with the same DIR and options uses that store again.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from archive.conversations.rules.corpus import Sample, samples  # noqa: E402
from bench.conversations_eval import CORPUS, export_write, wirecat  # noqa: E402

ACCOUNT = "Ubuntu IRC held-out"
SEED = 20261202
MAX_WORDS = 24  # the query language allows 64 nodes; a question rarely has more words
MIN_MESSAGES = 4
MIN_WORDS = 4
TOP = 50
MODES = ("words", "meaning", "hybrid")
_WORD = re.compile(r"[^\W_]+")

Line = tuple[str, int]  # (log stem, line number)


# --- the gold set -----------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    stem: str
    line: int
    text: str
    relevant: frozenset[Line]


def components(sample: Sample) -> list[list[int]]:
    """The annotated reply graph's connected components, each as its sorted lines."""
    parent_of: dict[int, int] = {}

    def root(line: int) -> int:
        while parent_of.setdefault(line, line) != line:
            parent_of[line] = parent_of[parent_of[line]]
            line = parent_of[line]
        return line

    for child, parents in sample.parents.items():
        for parent in parents:
            parent_of[root(child)] = root(parent)
    groups: dict[int, list[int]] = {}
    for line in parent_of:
        groups.setdefault(root(line), []).append(line)
    return sorted(sorted(group) for group in groups.values())


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def queries_of(sample: Sample) -> list[Query]:
    """The log's queries: see the module's step 2."""
    found: list[Query] = []
    kept = {line.number: line for line in sample.lines}
    for group in components(sample):
        lines = [n for n in group if n in kept and not kept[n].system]
        first = group[0]
        if len(lines) < MIN_MESSAGES or first not in kept or sample.parents.get(first) != {first}:
            continue
        text = kept[first].text
        if "?" not in text or len(words(text)) < MIN_WORDS:
            continue
        relevant = frozenset((sample.stem, n) for n in lines if n != first)
        found.append(Query(sample.stem, first, text, relevant))
    return found


def trimmed(sample: Sample, *, last: int | None, without: set[int]) -> Sample:
    """The log's `last` lines (all when None; its annotated lines come last), without the
    lines in `without`; every line keeps its number."""
    start = 0 if last is None else max(len(sample.lines) - last, 0)
    lines = [line for line in sample.lines[start:] if line.number not in without]
    kept = {line.number for line in lines}
    parents = {child: set(p) for child, p in sample.parents.items() if child in kept}
    return Sample(sample.stem, sample.date, sample.hour, lines, parents)


def safe_query(text: str) -> str:
    """The text's words, lower-cased, each once, ORed (see the module's step 4)."""
    return " OR ".join(list(dict.fromkeys(words(text)))[:MAX_WORDS])


# --- the measures -----------------------------------------------------------------------


def ndcg(ranked: Sequence[Line], relevant: frozenset[Line], depth: int = 10) -> float:
    """Binary-relevance nDCG of the first `depth` of `ranked`."""
    gain = sum(1 / math.log2(i + 2) for i, found in enumerate(ranked[:depth]) if found in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), depth)))
    return gain / ideal if ideal else 0.0


def recall(ranked: Sequence[Line], relevant: frozenset[Line], depth: int = TOP) -> float:
    return len(set(ranked[:depth]) & relevant) / len(relevant) if relevant else 0.0


@dataclass
class Scores:
    ndcg: float = 0.0
    recall: float = 0.0
    found: float = 0.0  # results per query
    queries: int = 0

    def add(self, ranked: Sequence[Line], query: Query) -> None:
        self.ndcg += ndcg(ranked, query.relevant)
        self.recall += recall(ranked, query.relevant)
        self.found += len(ranked)
        self.queries += 1

    def row(self, label: str) -> str:
        n = max(self.queries, 1)
        return (
            f"  {label:<30} {100 * self.ndcg / n:7.1f} {100 * self.recall / n:9.1f}"
            f" {self.found / n:8.1f}"
        )


# --- the baseline -----------------------------------------------------------------------


def fts_baseline(messages: Sequence[tuple[Line, str]]) -> Callable[[str], list[Line]]:
    """Plain SQLite FTS5 over the messages' text (default tokenizer, bm25): a function from
    a safe query to its first results."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE raw USING fts5(text)")
    db.executemany("INSERT INTO raw(rowid, text) VALUES (?, ?)", enumerate(t for _, t in messages))
    lines = [line for line, _ in messages]

    def search(safe: str) -> list[Line]:
        match = " OR ".join(f'"{word}"' for word in safe.split(" OR "))
        rows = db.execute(
            "SELECT rowid FROM raw WHERE raw MATCH ? ORDER BY bm25(raw) LIMIT ?",
            (match, TOP + 1),
        ).fetchall()
        return [lines[rowid] for (rowid,) in rows]

    return search


# --- the store --------------------------------------------------------------------------


def django_setup(state: Path) -> None:
    """This process on the store in `state` (after the commands made it)."""
    os.environ["WIRECAT_STATE_DIR"] = str(state)
    os.environ["CELERY_BROKER_URL"] = "memory://"  # effects asked for go nowhere slow
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wirecat.settings")
    import django

    django.setup()


def embed_all() -> tuple[int, float]:
    """`embeddings_refresh` until nothing waits: (chunks embedded, seconds)."""
    from archive.meaning.services.refresh import embeddings_refresh

    began = time.perf_counter()
    embedded = 0
    while True:
        run = embeddings_refresh()
        embedded += run.embedded
        if not run.more:
            return embedded, time.perf_counter() - began


def stored_messages() -> dict[str, tuple[Line, str]]:
    """Every stored message by its public id: its log line and text."""
    from archive.store.models import Message

    rows = Message.objects.values_list("public_id", "chat__title", "external_id", "text")
    return {public: ((stem, int(external) - 1), text) for public, stem, external, text in rows}


def search(safe: str, mode: str) -> list[str]:
    """The public ids of the messages `search_all` finds for `safe` by `mode`, best first."""
    from archive.search.everything import search_all

    page = search_all(query=safe, mode=mode, kinds=["message"], limit=TOP)
    return [item.ref.removeprefix("message:") for item in page.items]


# --- running ----------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=20, help="held-out logs in the store")
    parser.add_argument("--queries", type=int, default=300, help="at most this many queries")
    parser.add_argument("--half", choices=("report", "tune"), default="report")
    parser.add_argument("--lines", type=int, help="only each log's last N lines (tests)")
    parser.add_argument(
        "--withhold",
        action="store_true",
        help="leave every query's own line out of the store (a question never seen)",
    )
    parser.add_argument("--keep", type=Path, help="folder for the exports and store (kept)")
    args = parser.parse_args()
    began = time.perf_counter()
    logs = [
        trimmed(sample, last=args.lines, without=set())
        for sample in list(samples(CORPUS, part="held-out"))[: args.logs]
    ]
    if not logs:
        raise SystemExit(f"no held-out logs in {CORPUS}")
    asked = logs[0 if args.half == "report" else 1 :: 2]
    queries = [query for sample in asked for query in queries_of(sample)]
    if args.withhold:  # both halves' query lines, so the halves share one store
        logs = [
            trimmed(sample, last=None, without={query.line for query in queries_of(sample)})
            for sample in logs
        ]
    if len(queries) > args.queries:
        queries = random.Random(SEED).sample(queries, args.queries)  # noqa: S311 - a fixed sample
    if not queries:
        raise SystemExit(f"no queries in the {args.half} half of {len(logs)} logs")
    work = args.keep or Path(tempfile.mkdtemp(prefix="wirecat-meaning-eval-"))
    work.mkdir(parents=True, exist_ok=True)
    state = work / "state"
    # A kept store made with the same options is used again (trying choices on it).
    made = state / ".eval-made"
    options = f"logs={args.logs} lines={args.lines} withhold={args.withhold}"
    reuse = args.keep is not None and made.exists() and made.read_text() == options
    try:
        if not reuse:
            shutil.rmtree(state, ignore_errors=True)
            exports = [export_write(sample, work / "exports") for sample in logs]
            wirecat(["migrate", "-v0"], state)
            seconds, _, _ = wirecat(["import", "--account", ACCOUNT, *map(str, exports)], state)
            print(f"import:   {len(logs)} logs in {seconds:.1f} s")
            seconds, _, _ = wirecat(["conversations", "build"], state)
            print(f"build:    conversations in {seconds:.1f} s")
        django_setup(state)
        from archive.meaning.models import Chunk

        embedded, seconds = embed_all()
        chunks = Chunk.objects.count()
        chars = sum(Chunk.objects.values_list("chars", flat=True))
        print(
            f"embed:    {embedded:,} chunks in {seconds:.1f} s ="
            f" {embedded / max(seconds, 1e-9):.1f} chunks/s (mean {chars / max(chunks, 1):.0f}"
            " chars; cutting included)"
        )
        if args.keep is not None:
            made.write_text(options)
        messages = stored_messages()
        line_of = {public: line for public, (line, _) in messages.items()}
        baseline = fts_baseline(list(messages.values()))
        scores = {label: Scores() for label in (*MODES, "baseline")}
        asked_at = time.perf_counter()
        for query in queries:
            safe = safe_query(query.text)
            own = (query.stem, query.line)
            for mode in MODES:
                ranked = [line_of[p] for p in search(safe, mode) if p in line_of]
                scores[mode].add([line for line in ranked if line != own], query)
            scores["baseline"].add([line for line in baseline(safe) if line != own], query)
        asked_for = time.perf_counter() - asked_at
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    relevant = sum(len(query.relevant) for query in queries)
    print(
        f"input:    {len(logs)} held-out logs of ubuntu-irc (Kummerfeld et al. 2019, CC-BY-4.0),"
        f" {len(messages):,} messages, {chunks:,} chunks"
    )
    where = "left out of" if args.withhold else "kept in"
    print(
        f"queries:  {len(queries)} of the {args.half} half ({len(asked)} logs),"
        f" {relevant / len(queries):.1f} relevant messages each, their lines {where} the"
        f" store; search_all(kinds=['message'], limit=50),"
        f" {1000 * asked_for / len(queries) / (len(MODES) + 1):.0f} ms a search"
    )
    print(f"  {'':<30} {'nDCG@10':>7} {'recall@50':>9} {'results':>8}")
    for mode in MODES:
        print(scores[mode].row(mode))
    print(scores["baseline"].row("baseline: FTS5 bm25, words OR"))
    print(f"took:     {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
