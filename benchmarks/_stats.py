"""Small statistics shared by the benchmarks: medians and percentiles in milliseconds, and the
tests that tell a difference between rankers from a question or two moving."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary_ms(seconds: Sequence[float]) -> dict[str, float]:
    ms = [s * 1000 for s in seconds]
    return {
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 4),
        "p95_ms": round(percentile(ms, 95), 4),
        "p99_ms": round(percentile(ms, 99), 4),
        "max_ms": round(max(ms), 4),
    }


def sign_test_p(better: int, worse: int) -> float:
    """Exact two-sided sign test: how likely a split at least this uneven is between two
    rankers that are equally good, ties left out. Paired per question, it tells a real
    difference from one or two questions moving (2 losses and no win: p = 0.5)."""
    n = better + worse
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(better, worse) + 1))
    return min(1.0, 2 * tail / 2**n)


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95% by default) of a proportion: where a recall measured
    on ``n`` questions may lie on other questions drawn the same way."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))
