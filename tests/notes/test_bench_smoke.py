"""The notes benchmark runs end to end at a tiny size and prints every figure it reports:
the store's rate, the baseline's, the search percentiles of both, per kind of query, and
their ratio."""

from __future__ import annotations

import re
from pathlib import Path

from tests.bench_run import bench_run


def test_notes_bench_prints_its_figures(tmp_path: Path) -> None:
    out = bench_run(
        "notes_bench.py",
        "--notes",
        "300",
        "--queries",
        "26",
        "--keep",
        str(tmp_path),
        tmp_path=tmp_path,
        timeout=180,
    )
    assert re.search(
        r"^input: +300 notes \(.* MB of text\) in \d+ folders, [\d,]+ tagged", out, re.M
    )
    assert re.search(r"ubuntu-irc \(CC-BY-4\.0\)", out)
    assert re.search(
        r"^store: +300 notes and [\d,]+ tags in .* notes/s .* stems drained in .* peak RSS \d+ MB",
        out,
        re.M,
    )
    assert re.search(r"^baseline: 300 notes executemany \+ FTS5 rebuild in .* notes/s", out, re.M)
    assert re.search(r"^search: +26 queries over 300 notes", out, re.M)
    for label in ("note_search", "raw MATCH"):
        assert re.search(rf"{label}: p50 +[\d.]+ ms +p95 +[\d.]+ ms +max +[\d.]+ ms", out), out
    # Two rounds of the thirteen kinds: every kind was asked and timed.
    for kind in ("common word", "phrase", "prefix", "word tag:", "in:", "on: \\(a month\\)"):
        assert re.search(rf"^ +{kind}: p50 +[\d.]+ ms", out, re.M), (kind, out)
    assert re.search(r"^ratio: +note_search p95 / raw p95 = [\d.]+", out, re.M)
    # The stores went where --keep said.
    assert (tmp_path / "state").is_dir() and (tmp_path / "baseline.db").is_file()
