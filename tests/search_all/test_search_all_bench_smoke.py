"""The search-all benchmark runs end to end at a tiny size and prints every figure it
reports: the store's counts, the embedding rate and the worker's peak memory, the copied
vectors said plainly, and each mode's latency over HTTP beside the baseline's."""

from __future__ import annotations

import re
from pathlib import Path

from tests.bench_run import bench_run


def test_search_all_bench_prints_its_figures(tmp_path: Path) -> None:
    out = bench_run(
        "search_all_bench.py",
        *("--messages", "3000", "--notes", "20", "--meetings", "1", "--files", "20"),
        *("--sample", "20", "--requests", "10", "--keep", str(tmp_path)),
        tmp_path=tmp_path,
        timeout=240,
    )
    assert re.search(r"^conversations: 3,000 messages of \d+ chats built", out, re.M), out
    assert re.search(
        r"^store: 3,000 messages, [\d,]+ conversations, 20 notes, \d+ meetings, 1 transcripts,"
        r" [\d,]+ segments, 20 file texts, [\d,]+ chunks, [\d,]+ vectors",
        out,
        re.M,
    ), out
    assert re.search(r"^embedding \(.*\): [\d,]+ chunks .* = [\d.]+ chunks/s", out, re.M), out
    assert re.search(r"^embedding worker peak RSS with the model loaded: \d+ MB", out, re.M)
    assert re.search(r"^COPIED VECTORS: [\d,]+ of the [\d,]+ chunks hold a copy", out, re.M)
    assert re.search(r"^vectors: [\d,]+ real, [\d,]+ copied", out, re.M), out
    for mode in ("words", "meaning", "hybrid"):
        assert re.search(
            rf"^ *{mode}: p50 +[\d.]+ ms +p95 +[\d.]+ ms +p99 +[\d.]+ ms \| baseline p50 +[\d.]+"
            r" ms +p95 +[\d.]+ ms +p99 +[\d.]+ ms \| p95 ratio [\d.]+x",
            out,
            re.M,
        ), (mode, out)
    assert re.search(r"^web workers' peak RSS: \d+ MB, \d+ MB", out, re.M), out
    # The store was made once, where --keep said, and kept for the next run.
    assert (tmp_path / "all-3000-20-1-20" / "wirecat.db").is_file()
