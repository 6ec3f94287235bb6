"""The meetings benchmark runs end to end at a tiny size and prints every figure it reports:
the import rates, the baseline, the search percentiles and both ratios."""

from __future__ import annotations

import re
from pathlib import Path

from tests.bench_run import bench_run


def test_meetings_bench_prints_its_figures(tmp_path: Path) -> None:
    out = bench_run(
        "meetings_bench.py",
        "--events",
        "40",
        "--hours",
        "1",
        "--queries",
        "12",
        "--keep",
        str(tmp_path),
        tmp_path=tmp_path,
        timeout=120,
    )
    assert re.search(r"^import: +40 events \([\d,]+ occurrences\) in .* events/s", out, re.M)
    assert re.search(r"occurrences/s", out)
    # One one-hour transcript, a cue every 3-5 s: between 720 and 1,200 segments.
    found = re.search(r"^import: +([\d,]+) segments in .* segments/s", out, re.M)
    assert found and 720 <= int(found.group(1).replace(",", "")) <= 1_200, out
    assert re.search(r"peak RSS \d+ MB", out)
    assert re.search(
        rf"^baseline: {found.group(1)} segments executemany \+ FTS5 rebuild", out, re.M
    )
    assert re.search(r"^search: +12 queries", out, re.M)
    for label in ("meeting_search", "raw MATCH"):
        assert re.search(rf"{label}: p50 +[\d.]+ ms +p95 +[\d.]+ ms +max +[\d.]+ ms", out), out
    assert re.search(r"^ratio: +meeting_search p95 / raw p95 = [\d.]+", out, re.M)
    # The files and stores went where --keep said.
    assert list((tmp_path / "files").glob("*.ics")) and (tmp_path / "state").is_dir()
