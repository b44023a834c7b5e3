"""Statistics shared by every lane's reports: Wilson intervals, exact McNemar, paired bootstrap intervals of
differences and ratios, nearest-rank percentiles, the median and null-safe ratios.

numpy and scipy are imported inside the functions that use them, so importing this module stays cheap for
commands that never compute an interval.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

Z95 = 1.959963984540054
"""The standard normal 97.5 % quantile: z of a two-sided 95 % interval."""
BOOTSTRAP_SEED = 20260101
"""Default seed of the paired bootstraps: the same inputs always give the same interval."""
BOOTSTRAP_RESAMPLES = 10_000
"""Default number of bootstrap resamples."""
_BOOTSTRAP_BLOCK = 1 << 22
_BOOTSTRAP_INDEX_N = 100_000

_V = TypeVar("_V", bound=float)


@dataclass(frozen=True)
class Rate:
    """A pass rate with its Wilson 95 % interval; `rate` is None when nothing was attempted."""

    passed: int
    attempted: int
    rate: float | None
    low: float | None
    high: float | None

    @property
    def interval(self) -> tuple[float, float] | None:
        """(low, high), or None when nothing was attempted."""
        return None if self.low is None or self.high is None else (self.low, self.high)


def wilson(passed: int, attempted: int, z: float = Z95) -> Rate:
    """Wilson score interval for `passed` successes out of `attempted` trials."""
    if attempted <= 0:
        return Rate(passed, attempted, None, None, None)
    p = passed / attempted
    denom = 1 + z * z / attempted
    centre = (p + z * z / (2 * attempted)) / denom
    half = z * math.sqrt(p * (1 - p) / attempted + z * z / (4 * attempted * attempted)) / denom
    # With no (or only) successes the bound is exactly 0 (or 1); centre ∓ half leaves a rounding residue
    # such as 5.6e-17 or 0.9999999999999999 there.
    low = 0.0 if passed <= 0 else max(0.0, centre - half)
    high = 1.0 if passed >= attempted else min(1.0, centre + half)
    return Rate(passed, attempted, p, low, high)


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pair counts (binomial test at p = ½); 1.0 without
    discordant pairs."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    from scipy.stats import binomtest

    # scipy evaluates the binomial tails through the incomplete beta function: within 2e-14 (relative) of the
    # exact integer sum, and as fast for a billion pairs as for ten, so no big-integer or log-space path is needed.
    return float(binomtest(min(only_a, only_b), n, 0.5).pvalue)


@dataclass(frozen=True)
class PairedDiff:
    """Difference of means (B − A, e.g. of pass rates) over paired units with a bootstrap interval."""

    n: int
    diff: float | None
    low: float | None
    high: float | None
    resamples: int
    seed: int


@dataclass(frozen=True)
class PairedRatio:
    """Ratio B / A over paired units with a bootstrap interval: of geometric means when `geometric`
    (the geometric mean of the per-pair ratios), else of arithmetic means."""

    n: int
    ratio: float | None
    low: float | None
    high: float | None
    geometric: bool
    resamples: int
    seed: int

    @property
    def interval(self) -> tuple[float, float] | None:
        """(low, high), or None without pairs."""
        return None if self.low is None or self.high is None else (self.low, self.high)


def _resampled_means(
    columns: Sequence[NDArray[np.float64]], resamples: int, seed: int
) -> list[NDArray[np.float64]]:
    """For each column, its mean in each of `resamples` resamples of the n units drawn with replacement — the
    same unit indices for every column, which is what makes the bootstrap paired."""
    import numpy as np

    n = len(columns[0])
    rng = np.random.default_rng(seed)
    # Indices are drawn in blocks (the same stream as one (resamples, n) draw) so memory stays bounded.
    block = max(1, _BOOTSTRAP_BLOCK // n)
    parts: list[list[NDArray[np.float64]]] = [[] for _ in columns]
    for start in range(0, resamples, block):
        idx = rng.integers(0, n, size=(min(block, resamples - start), n))
        for part, column in zip(parts, columns, strict=True):
            part.append(column[idx].mean(axis=1))
    return [np.concatenate(part) for part in parts]


def paired_bootstrap(
    a: Sequence[float] | NDArray[np.bool_] | NDArray[np.float64],
    b: Sequence[float] | NDArray[np.bool_] | NDArray[np.float64],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> PairedDiff:
    """Percentile 95 % interval of mean(B) − mean(A) (booleans count as 0/1), resampling the same unit indices
    for both arms; ValueError when the arms differ in length."""
    import numpy as np

    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    n = len(a)
    if n == 0:
        return PairedDiff(0, None, None, None, resamples, seed)
    delta = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    if n > _BOOTSTRAP_INDEX_N and np.isin(delta, (-1.0, 0.0, 1.0)).all():
        # Pass/fail units differ by -1, 0 or +1, so a resample's mean only depends on how many of each it drew:
        # multinomial counts have exactly the distribution of n index draws, at a fraction of the cost.
        up, down = int(np.count_nonzero(delta > 0)), int(np.count_nonzero(delta < 0))
        rng = np.random.default_rng(seed)
        draws = rng.multinomial(n, [up / n, down / n, (n - up - down) / n], size=resamples)
        means = (draws[:, 0] - draws[:, 1]) / n
    else:
        (means,) = _resampled_means([delta], resamples, seed)
    low, high = np.percentile(means, [2.5, 97.5])
    return PairedDiff(n, float(delta.mean()), float(low), float(high), resamples, seed)


def paired_ratio_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    geometric: bool,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> PairedRatio:
    """B / A with the percentile 95 % interval of the same statistic over resampled pairs (the same indices for
    both arms). `geometric`: ratio of geometric means, for latencies (values must be positive); else ratio of
    arithmetic means. ValueError when the arms differ in length."""
    import numpy as np

    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    n = len(a)
    if n == 0:
        return PairedRatio(0, None, None, None, geometric, resamples, seed)
    xa, xb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if geometric:
        log_a, log_b = np.log(xa), np.log(xb)
        ratio = float(np.exp(np.mean(log_b - log_a)))
        mean_log_a, mean_log_b = _resampled_means([log_a, log_b], resamples, seed)
        ratios = np.exp(mean_log_b - mean_log_a)
    else:
        # Plain sequential sums: the point estimate the web report has always published, bit for bit.
        ratio = (sum(b) / n) / (sum(a) / n)
        mean_a, mean_b = _resampled_means([xa, xb], resamples, seed)
        ratios = mean_b / mean_a
    low, high = np.percentile(ratios, [2.5, 97.5])
    return PairedRatio(n, ratio, float(low), float(high), geometric, resamples, seed)


def _check_percent(percent: int | Fraction) -> None:
    if isinstance(percent, float) or not isinstance(percent, int | Fraction):
        # A float percent would bring back the rounding that integer arithmetic is here to avoid.
        raise TypeError("percent must be an int or a Fraction")
    if not 0 <= percent <= 100:
        raise ValueError("percent must be in 0..100")


def nearest_rank_position(n: int, percent: int | Fraction) -> int:
    """1-based rank ⌈percent/100 · n⌉ (at least 1) of the nearest-rank percentile among n ≥ 1 sorted values;
    percent is an int or Fraction in 0..100, and 0 gives the smallest value."""
    _check_percent(percent)
    if n < 1:
        raise ValueError("a percentile needs at least one value")
    # Exact rational arithmetic: in floats 7 / 100 · 100 is 7.000000000000001, whose ceiling is rank 8, not 7.
    return max(1, math.ceil(Fraction(percent) * n / 100))


def nearest_rank(values: Sequence[_V], percent: int | Fraction, *, min_samples: int = 1) -> _V | None:
    """Nearest-rank percentile (always an observed value) of the values; None with fewer than `min_samples`
    values (never fewer than one), since a high percentile of a handful of samples is false precision."""
    _check_percent(percent)  # also when there are no values: a bad percent is a bug either way
    if len(values) < max(1, min_samples):
        return None
    ordered = sorted(values)
    return ordered[nearest_rank_position(len(ordered), percent) - 1]


def median(values: Sequence[float]) -> float | None:
    """The median (mean of the middle two for an even count); None when empty."""
    return statistics.median(values) if values else None


def ratio(numerator: int, denominator: int) -> float | None:
    """numerator / denominator; None when there is nothing to divide by (a rate without samples is unknown,
    not 0)."""
    return numerator / denominator if denominator > 0 else None
