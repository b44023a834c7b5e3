"""Statistics of the paired backend comparison (pure functions, unit-tested by hand-computed cases)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

BOOTSTRAP_SEED = 20260601
BOOTSTRAP_RESAMPLES = 10_000
P90_MIN_SAMPLES = 10


def nearest_rank(values: Sequence[float], pct: float) -> float | None:
    """Nearest-rank percentile (always an observed value); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def p90(values: Sequence[float]) -> float | None:
    """P90, only from at least ten samples (fewer gives false precision)."""
    return nearest_rank(values, 90) if len(values) >= P90_MIN_SAMPLES else None


def wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float] | None:
    """Wilson score 95 % interval of a success rate; None for n = 0."""
    if n == 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def geo_ratio(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Geometric mean of the per-pair ratios b/a; None without pairs."""
    if not a:
        return None
    return float(np.exp(np.mean(np.log(np.asarray(b, float)) - np.log(np.asarray(a, float)))))


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], *, geometric: bool,
    resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """95 % percentile interval of b/a over pairs resampled with replacement — the same indices
    for both arms. `geometric`: ratio of geometric means (latency); else ratio of means (penalty)."""
    n = len(a)
    if n == 0 or n != len(b):
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))
    xa, xb = np.asarray(a, float), np.asarray(b, float)
    if geometric:
        stats = np.exp(np.log(xb)[idx].mean(axis=1) - np.log(xa)[idx].mean(axis=1))
    else:
        stats = xb[idx].mean(axis=1) / xa[idx].mean(axis=1)
    low, high = np.percentile(stats, [2.5, 97.5])
    return float(low), float(high)
