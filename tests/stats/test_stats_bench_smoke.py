"""The statistics benchmark runs end to end at a tiny size and prints every figure it
reports: the store it shaped, each selector's p50/p95 beside its baseline's for every
scope, and the verdict on the target."""

from __future__ import annotations

import re
from pathlib import Path

from tests.bench_run import bench_run

SELECTORS = ("volume", "heatmap", "top_chats", "top_people", "unanswered", "responses")


def test_stats_bench_prints_its_figures(tmp_path: Path) -> None:
    out = bench_run(
        "stats_bench.py",
        *("--messages", "3000", "--big-chat", "500", "--runs", "3", "--keep", str(tmp_path)),
        tmp_path=tmp_path,
        timeout=300,
    )
    assert re.search(
        r"^store: 3,500 messages \([\d,]+ the owner's\), \d+ chats \(\d+ direct\)", out, re.M
    ), out
    scopes = re.findall(r"^(whole store|busiest chat|whole history), .*:$", out, re.M)
    assert scopes == ["whole store", "busiest chat", "whole history"], out
    for name in SELECTORS:
        lines = re.findall(
            rf"^ +{name}: p50 +[\d.]+ ms +p95 +[\d.]+ ms \| baseline p50 +[\d.]+ ms +p95 +[\d.]+"
            r" ms \| p95 ratio [\d.]+x \| cpu p95 +[\d.]+ ms, baseline +[\d.]+ ms$",
            out,
            re.M,
        )
        assert len(lines) == 3, (name, out)
    assert re.search(
        r"^target p95 <= 500 ms for a year's range: (met|NOT met) \(slowest", out, re.M
    )
    # The imported store was kept where --keep said, for the next run.
    assert (tmp_path / "store-3000-500" / "wirecat.db").is_file()
