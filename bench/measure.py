"""What the benchmarks share to measure: peak memory, percentiles, the median of runs.

Imported by the bench scripts as `measure` (a script's own folder is first on its path)."""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

RUNS = 3  # each query is timed this many times; the median run counts


def peak_rss_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    """p50, p95 and the max of samples in seconds, in milliseconds."""
    ordered = sorted(samples)

    def at(share: float) -> float:
        return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] * 1000

    return at(0.50), at(0.95), ordered[-1] * 1000


def timed(call: Callable[[], Any], runs: int = RUNS) -> float:
    """The median of `runs` timings of `call`, in seconds."""
    spent = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        spent.append(time.perf_counter() - started)
    return statistics.median(spent)


def term_tiers(
    vocab_table: str, texts_sql: str
) -> tuple[list[str], list[str], list[str], list[str]]:
    """Common, mid-frequency and rare words of an FTS5 vocabulary table (4 to 12 lowercase
    letters, by how many documents hold them), and sample texts (`texts_sql`, one column)
    for phrases: the terms a benchmark's queries are drawn from."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT term, doc FROM {vocab_table} WHERE length(term) BETWEEN 4 AND 12"
            " AND term NOT GLOB '*[^a-z]*' ORDER BY doc DESC"
        )
        vocab = cursor.fetchall()
        cursor.execute(texts_sql)
        texts = [row[0] for row in cursor.fetchall()]
    common = [term for term, _ in vocab[:300]]
    mid = [term for term, doc in vocab if 100 <= doc <= 2_000] or common
    rare = [term for term, doc in vocab if 2 <= doc <= 30] or mid
    return common, mid, rare, texts
