"""Statistics for reports: Wilson intervals, exact McNemar, paired bootstrap, percentiles."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

Z95 = 1.959963984540054
BOOTSTRAP_SEED = 20260101
BOOTSTRAP_RESAMPLES = 10_000
_BOOTSTRAP_BLOCK = 1 << 22
_EXACT_MCNEMAR_N = 5000
_BOOTSTRAP_INDEX_N = 100_000


@dataclass(frozen=True)
class Rate:
    """A pass rate with its Wilson 95 % interval; `rate` is None when nothing was attempted."""

    passed: int
    attempted: int
    rate: float | None
    low: float | None
    high: float | None


def wilson(passed: int, attempted: int, z: float = Z95) -> Rate:
    """Wilson score interval for `passed` successes out of `attempted` trials."""
    if attempted <= 0:
        return Rate(passed, attempted, None, None, None)
    p = passed / attempted
    denom = 1 + z * z / attempted
    centre = (p + z * z / (2 * attempted)) / denom
    half = z * math.sqrt(p * (1 - p) / attempted + z * z / (4 * attempted * attempted)) / denom
    return Rate(passed, attempted, p, max(0.0, centre - half), min(1.0, centre + half))


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pair counts (binomial, p = 0.5)."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    if n <= _EXACT_MCNEMAR_N:
        tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
        return min(1.0, 2 * tail)
    # Big integers get slow for large n: the same binomial tail summed in log space.
    base = math.lgamma(n + 1) - n * math.log(2)
    logs = [base - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(k + 1)]
    top = max(logs)
    return min(1.0, 2 * math.exp(top) * math.fsum(math.exp(x - top) for x in logs))


@dataclass(frozen=True)
class PairedDiff:
    """Difference of pass rates (B − A) over paired units with a bootstrap interval."""

    n: int
    diff: float | None
    low: float | None
    high: float | None
    resamples: int
    seed: int


def paired_bootstrap(
    a: Sequence[bool] | NDArray[np.bool_],
    b: Sequence[bool] | NDArray[np.bool_],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> PairedDiff:
    """Percentile 95 % interval of rate(B) − rate(A), resampling the same unit indices for both arms."""
    import numpy as np

    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    n = len(a)
    if n == 0:
        return PairedDiff(0, None, None, None, resamples, seed)
    delta = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    rng = np.random.default_rng(seed)
    if n > _BOOTSTRAP_INDEX_N:
        # Each unit differs by -1, 0 or +1, so a resample's mean only depends on how many of each it drew:
        # multinomial counts have exactly the distribution of n index draws, at a fraction of the cost.
        up, down = int(np.count_nonzero(delta > 0)), int(np.count_nonzero(delta < 0))
        draws = rng.multinomial(n, [up / n, down / n, (n - up - down) / n], size=resamples)
        means = (draws[:, 0] - draws[:, 1]) / n
        low, high = np.percentile(means, [2.5, 97.5])
        return PairedDiff(n, float(delta.mean()), float(low), float(high), resamples, seed)
    # Resamples are drawn in blocks (the same stream as one (resamples, n) draw) so memory stays bounded.
    block = max(1, _BOOTSTRAP_BLOCK // n)
    means = np.concatenate(
        [
            delta[rng.integers(0, n, size=(min(block, resamples - i), n))].mean(axis=1)
            for i in range(0, resamples, block)
        ]
    )
    low, high = np.percentile(means, [2.5, 97.5])
    return PairedDiff(n, float(delta.mean()), float(low), float(high), resamples, seed)


def nearest_rank(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of the known values; None when there are none."""
    data = sorted(values)
    if not data:
        return None
    rank = max(1, math.ceil(q / 100 * len(data)))
    return data[rank - 1]


def median(values: Sequence[float]) -> float | None:
    """The median (mean of the middle two for an even count); None when empty."""
    data = sorted(values)
    if not data:
        return None
    mid = len(data) // 2
    return data[mid] if len(data) % 2 else (data[mid - 1] + data[mid]) / 2
