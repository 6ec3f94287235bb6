"""The in-domain retrieval evaluation runs end to end on the end of one log and three queries, and
prints every figure it reports: the store's counts, the embedding rate, and nDCG@10 and
recall@50 for words, meaning, hybrid and the FTS5 baseline; its gold set and measures on
cases worked out by hand."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from archive.conversations.rules.corpus import Sample, log_line
from bench.meaning_eval import components, ndcg, queries_of, recall, safe_query
from tests.bench_run import bench_run


def test_meaning_eval_prints_its_table(tmp_path: Path) -> None:
    out = bench_run(
        "meaning_eval.py",
        "--logs",
        "1",
        "--lines",
        "200",
        "--queries",
        "3",
        tmp_path=tmp_path,
        timeout=300,
    )
    assert re.search(r"^embed: +[\d,]+ chunks in [\d.]+ s = [\d.]+ chunks/s", out, re.M), out
    assert re.search(r"^input: +1 held-out logs .* 200 messages, [\d,]+ chunks", out, re.M)
    assert re.search(r"^queries: +3 of the report half \(1 logs\)", out, re.M), out
    assert re.search(r"nDCG@10 +recall@50", out)
    for label in ("words", "meaning", "hybrid", "baseline: FTS5 bm25, words OR"):
        found = re.search(rf"^  {re.escape(label)} +([\d.]+) +([\d.]+) +[\d.]+$", out, re.M)
        assert found, (label, out)
        assert 0 <= float(found.group(1)) <= 100 and 0 <= float(found.group(2)) <= 100


def _sample(lines: list[str], links: list[tuple[int, int]]) -> Sample:
    sample = Sample(
        "2020-01-01", "2020-01-01", 0, [log_line(n, raw) for n, raw in enumerate(lines)]
    )
    for parent, child in links:
        sample.parents.setdefault(child, set()).add(parent)
    return sample


def test_a_question_that_starts_a_conversation_is_a_query() -> None:
    sample = _sample(
        [
            "[10:00] <ann> how do I mount an ntfs disk (read-only)?",
            "[10:00] <bob> anyone around?",
            "[10:01] <cid> ann: ntfs-3g",
            "=== dan joined",
            "[10:02] <ann> cid: thanks, and at boot?",
            "[10:03] <cid> ann: fstab",
            "[10:04] <bob> hello?",
        ],
        [(0, 0), (1, 1), (0, 2), (3, 3), (2, 4), (4, 5), (1, 6)],
    )
    assert components(sample) == [[0, 2, 4, 5], [1, 6], [3]]
    (query,) = queries_of(sample)
    assert (query.line, query.text) == (0, "how do I mount an ntfs disk (read-only)?")
    assert query.relevant == {("2020-01-01", 2), ("2020-01-01", 4), ("2020-01-01", 5)}
    # The words only, lower-cased (no `OR` or field of the query language), each once.
    assert safe_query("OR is -this from:x (read-only)? or this") == (
        "or OR is OR this OR from OR x OR read OR only"
    )


def test_ndcg_and_recall_by_hand() -> None:
    relevant = frozenset({("a", 1), ("a", 2)})
    ranked = [("a", 9), ("a", 1), ("a", 8), ("a", 2)]
    ideal = 1 + 1 / math.log2(3)
    assert ndcg(ranked, relevant) == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)
    assert ndcg([("a", 2), ("a", 1)], relevant) == pytest.approx(1.0)
    assert recall(ranked, relevant) == 1.0
    assert recall(ranked, relevant, depth=2) == 0.5
