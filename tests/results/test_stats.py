"""Statistics against values computed by hand."""

from __future__ import annotations

import math

import pytest

from farm.results.stats import mcnemar_exact, median, nearest_rank, paired_bootstrap, wilson


def test_wilson_interval_of_8_out_of_10() -> None:
    # p = 0.8, z² = 3.8415: centre = (0.8 + 0.19207)/1.38415 = 0.71674,
    # half = 1.96·sqrt(0.016 + 0.0096037)/1.38415 = 0.22657 → [0.4902, 0.9433]
    r = wilson(8, 10)
    assert r.rate == 0.8
    assert r.low == pytest.approx(0.4902, abs=1e-4)
    assert r.high == pytest.approx(0.9433, abs=1e-4)


def test_wilson_edges() -> None:
    assert wilson(0, 0).rate is None
    zero = wilson(0, 5)
    assert zero.low == 0.0 and zero.high == pytest.approx(3.8415 / (5 + 3.8415), abs=1e-4)
    full = wilson(5, 5)
    assert full.high == 1.0 and full.low == pytest.approx(5 / (5 + 3.8415), abs=1e-4)


def test_mcnemar_exact_by_hand() -> None:
    # b=1, c=5: 2·(C(6,0)+C(6,1))/2^6 = 2·7/64
    assert mcnemar_exact(1, 5) == pytest.approx(14 / 64)
    assert mcnemar_exact(5, 1) == pytest.approx(14 / 64)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == 1.0
    # b=0, c=10: 2/1024
    assert mcnemar_exact(0, 10) == pytest.approx(2 / 1024)


def test_paired_bootstrap_is_reproducible_and_centred_on_the_difference() -> None:
    a = [True] * 6 + [False] * 4
    b = [True] * 9 + [False] * 1
    one = paired_bootstrap(a, b)
    two = paired_bootstrap(a, b)
    assert one == two
    assert one.diff == pytest.approx(0.3)
    assert one.low is not None and one.high is not None
    assert one.low <= 0.3 <= one.high
    # Every unit differs by 0 or +1, so no resample can go below 0 or above 0.3·(10/3).
    assert one.low >= 0.0 and one.high <= 1.0


def test_paired_bootstrap_identical_arms_gives_a_zero_width_interval() -> None:
    a = [True, False, True]
    r = paired_bootstrap(a, a)
    assert (r.diff, r.low, r.high) == (0.0, 0.0, 0.0)


def test_percentiles() -> None:
    values = [float(v) for v in range(1, 11)]
    assert median(values) == 5.5
    assert nearest_rank(values, 90) == 9.0
    assert nearest_rank([3.0], 90) == 3.0
    assert nearest_rank([], 90) is None and median([]) is None
    assert math.isclose(median([1.0, 2.0, 10.0]) or 0, 2.0)


def test_paired_bootstrap_in_blocks_equals_one_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    from farm.results import stats

    a = [i % 3 == 0 for i in range(50)]
    b = [i % 2 == 0 for i in range(50)]
    whole = paired_bootstrap(a, b, resamples=500)
    monkeypatch.setattr(stats, "_BOOTSTRAP_BLOCK", 120)
    assert paired_bootstrap(a, b, resamples=500) == whole


def test_mcnemar_for_many_pairs_matches_the_exact_sum(monkeypatch: pytest.MonkeyPatch) -> None:
    from farm.results import stats

    exact = [mcnemar_exact(a, b) for a, b in ((40, 70), (300, 330), (1, 999))]
    monkeypatch.setattr(stats, "_EXACT_MCNEMAR_N", 10)
    for (a, b), p in zip(((40, 70), (300, 330), (1, 999)), exact, strict=True):
        assert mcnemar_exact(a, b) == pytest.approx(p, rel=1e-9)


def test_paired_bootstrap_for_many_units_draws_counts_with_the_same_distribution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from farm.results import stats

    a = [i % 3 == 0 for i in range(3000)]
    b = [i % 2 == 0 for i in range(3000)]
    by_index = paired_bootstrap(a, b)
    monkeypatch.setattr(stats, "_BOOTSTRAP_INDEX_N", 10)
    by_count = paired_bootstrap(a, b)
    assert by_count.diff == by_index.diff
    assert by_count.low is not None and by_index.low is not None and by_count.high is not None
    assert by_count.low == pytest.approx(by_index.low, abs=0.005)
    assert by_count.high == pytest.approx(by_index.high, abs=0.005)
