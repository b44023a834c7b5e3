"""The run matrix, its parsers and the run-length event encoding."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from farm.errors import FarmError
from web_bench.paired.matrix import pair_order, parse_backends, parse_seeds, parse_tasks, plan
from web_bench.paired.results import expand, run_length
from web_bench.paired.site.catalog import TASK_NAMES


def test_default_matrix_is_sixty_runs_in_pairs() -> None:
    runs = plan(parse_tasks(None), parse_seeds("1-5"), 1, parse_backends(None))
    assert len(runs) == 60
    pairs: dict[str, list[str]] = {}
    for r in runs:
        pairs.setdefault(r.pair_id, []).append(r.backend)
    assert len(pairs) == 30 and all(sorted(b) == ["extension", "playwright"] for b in pairs.values())


def test_pair_order_is_deterministic_and_alternates() -> None:
    backends = parse_backends(None)
    firsts = [pair_order(t, s, 1, backends)[0] for t in TASK_NAMES for s in range(1, 6)]
    assert firsts == [pair_order(t, s, 1, backends)[0] for t in TASK_NAMES for s in range(1, 6)]
    assert set(firsts) == {"playwright", "extension"}


def test_runs_of_a_pair_are_adjacent_and_ordered() -> None:
    runs = plan(["order_lookup"], [1, 2, 3], 2, parse_backends(None))
    for first, second in zip(runs[::2], runs[1::2], strict=True):
        assert first.pair_id == second.pair_id
        assert (first.order_in_pair, second.order_in_pair) == (1, 2)
        assert first.backend == first.first_backend == second.first_backend


def test_seed_forms() -> None:
    assert parse_seeds("1-5") == [1, 2, 3, 4, 5]
    assert parse_seeds("3") == [3]
    assert parse_seeds("1-3,7") == [1, 2, 3, 7]


@pytest.mark.parametrize("bad", ["", "a", "5-1", "1-", "-3", "1..3", "1-2000000", "1,,2", "\u0663", "1-" + "9" * 5000])
def test_bad_seed_ranges_are_refused(bad: str) -> None:
    with pytest.raises(FarmError, match="--seeds"):
        parse_seeds(bad)


def test_too_many_seeds_are_refused_at_once() -> None:
    # A million seeds would plan 12 million runs; the refusal comes before the list is built.
    with pytest.raises(FarmError, match="more than 100000 seeds"):
        parse_seeds("1-1000000")
    with pytest.raises(FarmError, match="more than 100000 seeds"):
        parse_seeds("1-60000,60001-120000")


def test_overlapping_seed_ranges_count_each_seed_once() -> None:
    assert len(parse_seeds("1-60000,1-60000")) == 60000


def test_plan_over_the_run_limit_is_refused() -> None:
    with pytest.raises(FarmError, match=r"--trials/--seeds: 120000 runs planned, more than 100000"):
        plan(["order_lookup"], list(range(1, 61)), 1000, parse_backends(None))


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(FarmError, match="unknown backend 'firefox'"):
        parse_backends("playwright,firefox")


@pytest.mark.parametrize("trials", [0, -1])
def test_fewer_than_one_trial_is_refused(trials: int) -> None:
    with pytest.raises(FarmError, match="--trials: must be at least 1"):
        plan(["order_lookup"], [1], trials, ["playwright"])


@given(st.lists(st.sampled_from(["tool/call", "tool/result", "model/response", "turn/end"]), max_size=40))
def test_event_run_length_is_lossless(events: list[str]) -> None:
    runs = run_length(events)
    assert expand(runs) == events
    assert all(a.type != b.type for a, b in zip(runs, runs[1:], strict=False))
