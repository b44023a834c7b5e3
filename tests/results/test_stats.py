"""The shared statistics (every lane's reports use them) against published and hand-computed values."""

from __future__ import annotations

import math
from dataclasses import astuple
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from farm.results import stats
from farm.results.stats import (
    mcnemar_exact,
    median,
    nearest_rank,
    nearest_rank_position,
    paired_bootstrap,
    paired_ratio_bootstrap,
    ratio,
    wilson,
)

# --- Wilson ------------------------------------------------------------------------------------------------


def test_wilson_interval_of_8_out_of_10() -> None:
    # p = 0.8, z² = 3.8415: centre = (0.8 + 0.19207)/1.38415 = 0.71674,
    # half = 1.96·sqrt(0.016 + 0.0096037)/1.38415 = 0.22657 → [0.4902, 0.9433]
    r = wilson(8, 10)
    assert r.rate == 0.8
    assert r.low == pytest.approx(0.4902, abs=1e-4)
    assert r.high == pytest.approx(0.9433, abs=1e-4)


@pytest.mark.parametrize(
    ("passed", "low", "high"),
    [(0, 0.0, 0.2775), (5, 0.2366, 0.7634), (10, 0.7225, 1.0)],
)
def test_wilson_published_values_for_ten_trials(passed: int, low: float, high: float) -> None:
    # The tabulated 95 % Wilson score intervals (no continuity correction) for 0, 5 and 10 successes out of 10.
    r = wilson(passed, 10)
    assert r.interval == (pytest.approx(low, abs=1e-4), pytest.approx(high, abs=1e-4))


def test_wilson_edges() -> None:
    assert wilson(0, 0).rate is None and wilson(0, 0).interval is None
    zero = wilson(0, 5)
    assert zero.low == 0.0 and zero.high == pytest.approx(3.8415 / (5 + 3.8415), abs=1e-4)
    full = wilson(5, 5)
    assert full.high == 1.0 and full.low == pytest.approx(5 / (5 + 3.8415), abs=1e-4)


def test_wilson_bound_is_exactly_0_without_successes_and_exactly_1_with_all() -> None:
    # Both former copies returned centre ∓ half here: 5.6e-17 for 0/3, 0.9999999999999999 for 10/10.
    for n in range(1, 201):
        assert wilson(0, n).low == 0.0
        assert wilson(n, n).high == 1.0


def test_wilson_agrees_with_scipy() -> None:
    for n in range(1, 61):
        for k in range(n + 1):
            ci = binomtest(k, n).proportion_ci(method="wilson")
            assert wilson(k, n).interval == (pytest.approx(ci.low, abs=1e-12), pytest.approx(ci.high, abs=1e-12))


# --- exact McNemar -----------------------------------------------------------------------------------------


def _exact_two_sided(b: int, c: int) -> float:
    """2 · P(X ≤ min(b, c)) for X ~ Binomial(b + c, ½), capped at 1, in exact rational arithmetic."""
    n, k = b + c, min(b, c)
    return float(min(Fraction(1), Fraction(2 * sum(math.comb(n, i) for i in range(k + 1)), 2**n)))


def test_mcnemar_exact_by_hand() -> None:
    # b=0, c=5: 2·C(5,0)/2^5 = 2/32
    assert mcnemar_exact(0, 5) == pytest.approx(0.0625)
    # b=1, c=5: 2·(C(6,0)+C(6,1))/2^6 = 2·7/64
    assert mcnemar_exact(1, 5) == pytest.approx(14 / 64)
    assert mcnemar_exact(5, 1) == pytest.approx(14 / 64)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(2, 3) == 1.0  # the two tails overlap: capped at 1
    # b=0, c=10: 2/1024
    assert mcnemar_exact(0, 10) == pytest.approx(2 / 1024)


def test_mcnemar_matches_the_exact_binomial_sum() -> None:
    for n in range(1, 81):
        for b in range(n + 1):
            assert mcnemar_exact(b, n - b) == pytest.approx(_exact_two_sided(b, n - b), rel=1e-12)


def test_mcnemar_for_many_pairs_matches_the_exact_sum() -> None:
    # Large and lopsided counts: far tails (1.9e-298 for 1 vs 999) must not underflow or lose precision.
    for b, c in ((40, 70), (300, 330), (1, 999), (4000, 4400)):
        assert mcnemar_exact(b, c) == pytest.approx(_exact_two_sided(b, c), rel=1e-12)


def test_mcnemar_for_a_billion_pairs() -> None:
    # z = 6 standard deviations below the mean: about 2e-9 by the normal approximation.
    n, b = 10**9, 10**9 // 2 - 6 * 15_812
    p = mcnemar_exact(b, n - b)
    assert 1e-9 < p < 3e-9
    assert mcnemar_exact(n // 2, n // 2) == 1.0


# --- paired bootstrap of a difference ------------------------------------------------------------------------


def test_paired_bootstrap_is_reproducible_and_its_interval_contains_the_difference() -> None:
    a = [True] * 6 + [False] * 4
    b = [True] * 9 + [False] * 1
    one = paired_bootstrap(a, b)
    two = paired_bootstrap(a, b)
    assert one == two
    assert (one.seed, one.resamples) == (stats.BOOTSTRAP_SEED, stats.BOOTSTRAP_RESAMPLES)
    assert one.diff == pytest.approx(0.3)
    assert one.low is not None and one.high is not None
    assert one.low <= 0.3 <= one.high
    # Every unit differs by 0 or +1, so no resample can go below 0 or above 1.
    assert one.low >= 0.0 and one.high <= 1.0
    assert paired_bootstrap(a, b, seed=1) != one


def test_paired_bootstrap_identical_arms_gives_a_zero_width_interval() -> None:
    a = [True, False, True]
    r = paired_bootstrap(a, a)
    assert (r.diff, r.low, r.high) == (0.0, 0.0, 0.0)


def test_paired_bootstrap_of_real_values() -> None:
    a = [1.0, 2.0, 3.0, 4.0]
    b = [1.5, 2.5, 3.5, 4.5]  # every pair differs by exactly 0.5
    assert astuple(paired_bootstrap(a, b))[1:4] == (0.5, 0.5, 0.5)


def test_paired_bootstrap_edges() -> None:
    empty = paired_bootstrap([], [])
    assert (empty.n, empty.diff, empty.low, empty.high) == (0, None, None, None)
    with pytest.raises(ValueError, match="same length"):
        paired_bootstrap([True], [True, False])


def test_paired_bootstrap_in_blocks_equals_one_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    a = [i % 3 == 0 for i in range(50)]
    b = [i % 2 == 0 for i in range(50)]
    whole = paired_bootstrap(a, b, resamples=500)
    monkeypatch.setattr(stats, "_BOOTSTRAP_BLOCK", 120)
    assert paired_bootstrap(a, b, resamples=500) == whole


def test_paired_bootstrap_for_many_units_draws_counts_with_the_same_distribution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = [i % 3 == 0 for i in range(3000)]
    b = [i % 2 == 0 for i in range(3000)]
    by_index = paired_bootstrap(a, b)
    monkeypatch.setattr(stats, "_BOOTSTRAP_INDEX_N", 10)
    by_count = paired_bootstrap(a, b)
    assert by_count.diff == by_index.diff
    assert by_count.low is not None and by_index.low is not None and by_count.high is not None
    assert by_count.low == pytest.approx(by_index.low, abs=0.005)
    assert by_count.high == pytest.approx(by_index.high, abs=0.005)


def test_paired_bootstrap_counts_only_pass_fail_units(monkeypatch: pytest.MonkeyPatch) -> None:
    # Real-valued differences cannot be summarised by counts of -1/0/+1: many units still resample indices.
    a = [float(i % 7) for i in range(40)]
    b = [float(i % 5) for i in range(40)]
    by_index = paired_bootstrap(a, b)
    monkeypatch.setattr(stats, "_BOOTSTRAP_INDEX_N", 10)
    assert paired_bootstrap(a, b) == by_index


# --- paired bootstrap of a ratio ----------------------------------------------------------------------------


def test_ratio_bootstrap_uses_the_same_indices_for_both_arms() -> None:
    # B = 2·A pair by pair: every resample (same indices in both arms) has ratio exactly 2.
    a = [10.0, 1000.0, 50.0, 7.0, 300.0]
    for geometric in (True, False):
        r = paired_ratio_bootstrap(a, [2 * x for x in a], geometric=geometric)
        assert r.ratio == pytest.approx(2.0)
        assert r.interval == pytest.approx((2.0, 2.0))


def test_ratio_point_estimates_by_hand() -> None:
    # per-pair ratios 2 and ½: geometric mean 1; ratio of means (2+2)/2 ÷ (1+4)/2 = 0.8
    a, b = [1.0, 4.0], [2.0, 2.0]
    assert paired_ratio_bootstrap(a, b, geometric=True).ratio == pytest.approx(1.0)
    assert paired_ratio_bootstrap(a, b, geometric=False).ratio == pytest.approx(0.8)


def test_ratio_bootstrap_is_reproducible_and_its_interval_contains_the_ratio() -> None:
    a, b = [100.0, 200.0, 150.0, 120.0, 90.0], [130.0, 190.0, 260.0, 100.0, 95.0]
    for geometric in (True, False):
        one = paired_ratio_bootstrap(a, b, geometric=geometric)
        assert one == paired_ratio_bootstrap(a, b, geometric=geometric)
        assert one.seed == stats.BOOTSTRAP_SEED and one.geometric is geometric
        assert one.low is not None and one.ratio is not None and one.high is not None
        assert one.low <= one.ratio <= one.high
        assert paired_ratio_bootstrap(a, b, geometric=geometric, seed=7) != one


def test_ratio_bootstrap_edges() -> None:
    empty = paired_ratio_bootstrap([], [], geometric=True)
    assert (empty.n, empty.ratio, empty.interval) == (0, None, None)
    with pytest.raises(ValueError, match="same length"):
        paired_ratio_bootstrap([1.0], [1.0, 2.0], geometric=False)


def test_ratio_bootstrap_in_blocks_equals_one_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    a = [float(10 + i % 7) for i in range(30)]
    b = [float(12 + i % 5) for i in range(30)]
    whole = paired_ratio_bootstrap(a, b, geometric=True, resamples=500)
    monkeypatch.setattr(stats, "_BOOTSTRAP_BLOCK", 100)
    assert paired_ratio_bootstrap(a, b, geometric=True, resamples=500) == whole


# --- nearest rank, median, ratio ----------------------------------------------------------------------------


def test_nearest_rank_of_nothing_is_none() -> None:
    assert nearest_rank([], 50) is None
    assert nearest_rank([], 0) is None
    assert nearest_rank([], 100) is None


def test_nearest_rank_one_sample_is_that_sample() -> None:
    for percent in (0, 1, 50, 95, 100):
        assert nearest_rank([4200], percent) == 4200


def test_nearest_rank_0_is_the_minimum_and_100_the_maximum() -> None:
    values = [7.0, 3.0, 9.0, 1.0]
    assert nearest_rank(values, 0) == 1.0
    assert nearest_rank(values, 100) == 9.0


def test_p90_of_ten_values_is_the_ninth() -> None:
    values = [float(v) for v in range(100, 1001, 100)]
    assert nearest_rank(values, 90) == 900


def test_nearest_rank_is_exact_where_floats_round_up() -> None:
    # In floats 7 / 100 · 100 = 7.000000000000001, so the ceiling picked rank 8: the android and web copies
    # disagreed with the desktop copy here (and at 14, 17, 27, … percent for some n).
    values = list(range(1, 101))
    assert nearest_rank(values, 7) == 7
    assert nearest_rank_position(100, 7) == 7
    assert nearest_rank_position(50, 14) == 7
    # 0.95 · 20 is 19 exactly: rank 19, not 20.
    assert nearest_rank(list(range(1, 21)), 95) == 19


def test_median_of_odd_count_is_the_middle_value() -> None:
    # n=3: rank ⌈1.5⌉ = 2; n=5: rank ⌈2.5⌉ = 3
    assert nearest_rank([30, 10, 20], 50) == 20
    assert nearest_rank([50, 10, 40, 20, 30], 50) == 30


def test_p50_of_even_count_is_the_lower_middle_value() -> None:
    # n=4: rank ⌈2⌉ = 2, no averaging of the two middle values
    assert nearest_rank([40, 10, 30, 20], 50) == 20


def test_ties_keep_their_value() -> None:
    # sorted [5, 5, 5, 7]: P50 rank 2 → 5, P95 rank ⌈3.8⌉ = 4 → 7
    assert nearest_rank([5, 7, 5, 5], 50) == 5
    assert nearest_rank([5, 7, 5, 5], 95) == 7


def test_small_sample_p95_is_the_maximum() -> None:
    # n=2: ⌈1.9⌉ = 2; n=10: ⌈9.5⌉ = 10
    assert nearest_rank([200, 100], 95) == 200
    assert nearest_rank(list(range(1, 11)), 95) == 10


def test_nearest_rank_takes_fractions_and_refuses_floats_and_out_of_range() -> None:
    assert nearest_rank(list(range(1, 1001)), Fraction(999, 10)) == 999
    with pytest.raises(TypeError):
        nearest_rank([1.0], 90.0)  # type: ignore[arg-type]
    for percent in (-1, 101):
        with pytest.raises(ValueError, match="0..100"):
            nearest_rank([1.0], percent)
        with pytest.raises(ValueError, match="0..100"):
            nearest_rank([], percent)
    with pytest.raises(ValueError, match="at least one"):
        nearest_rank_position(0, 50)


def test_nearest_rank_min_samples() -> None:
    values = [float(v) for v in range(100, 1001, 100)]
    assert nearest_rank(values, 90, min_samples=10) == 900
    assert nearest_rank(values[:9], 90, min_samples=10) is None


@given(
    st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=60),
    st.integers(min_value=0, max_value=100),
)
def test_nearest_rank_matches_its_definition(values: list[int], percent: int) -> None:
    # The smallest sample with at least ⌈p·n⌉ (at least one) samples at or below it.
    value = nearest_rank(values, percent)
    assert value is not None
    needed = max(1, math.ceil(Fraction(percent, 100) * len(values)))
    assert value in values
    assert sum(1 for v in values if v <= value) >= needed
    assert sum(1 for v in values if v < value) < needed


def test_median() -> None:
    values = [float(v) for v in range(1, 11)]
    assert median(values) == 5.5
    assert median([3.0]) == 3.0
    assert median([]) is None
    assert median([1.0, 2.0, 10.0]) == 2.0


def test_ratio_is_none_without_a_denominator() -> None:
    assert ratio(3, 4) == 0.75
    assert ratio(0, 4) == 0.0
    assert ratio(0, 0) is None
