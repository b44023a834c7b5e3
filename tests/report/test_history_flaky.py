"""Flaky tasks in `farm history`: judged units that both passed and failed over the last K nights."""

from __future__ import annotations

import pytest

from farm.report.history_data import DEFAULT_FLAKY_NIGHTS, FlakyTask, History, build_history
from farm.report.history_grid import MAX_TASK_ROWS
from tests.helpers.history_nights import SIX, history, mem_night, name, on_phones, passes


def _flaky(h: History) -> list[tuple[str, bool, int, int, int]]:
    return [(f.task_id, f.new, f.nights_mixed, f.nights_passed, f.nights_failed) for f in h.flaky]


def _only(h: History) -> FlakyTask:
    (f,) = h.flaky
    return f


def test_a_task_passing_on_3_of_6_phones_both_nights_is_listed_persistently_flaky_not_new() -> None:
    h = history(passes("read/system", 3), passes("read/system", 3))
    assert _flaky(h) == [("read/system", False, 2, 0, 0)]


def test_phones_that_disagree_steadily_flake_the_task_but_no_pair() -> None:
    f = _only(history(passes("t", 3), passes("t", 3)))
    assert f.phones == []


def test_the_phones_whose_own_verdicts_changed_are_named() -> None:
    f = _only(history(passes("t", 3), passes("t", 5)))
    assert f.phones == [name("S4"), name("S5")]


def test_a_task_mixed_on_one_night_only_is_flaky_with_that_one_night_counted() -> None:
    h = history(passes("t", 6), passes("t", 3), passes("t", 6))
    assert _flaky(h) == [("t", False, 1, 2, 0)]


def test_a_task_that_failed_everywhere_every_night_is_not_flaky() -> None:
    assert history(passes("t", 0), passes("t", 0), passes("t", 0)).flaky == []


def test_a_task_that_passed_everywhere_every_night_is_not_flaky() -> None:
    assert history(passes("t", 6), passes("t", 6)).flaky == []


def test_errors_and_skips_never_make_a_task_flaky() -> None:
    night = on_phones("t", [True, "error", "skipped", True])
    h = history(night, night, on_phones("t", ["error", "skipped", True, [True, "error"]]))
    assert h.flaky == []


def test_errors_beside_failures_never_make_a_task_flaky() -> None:
    assert history(on_phones("t", [False, "error"]), on_phones("t", ["error", False])).flaky == []


def test_a_verdict_that_changed_from_one_night_to_the_next_is_newly_flaky() -> None:
    h = history(passes("t", 6), passes("t", 6), passes("t", 0))
    assert _flaky(h) == [("t", True, 0, 2, 1)]


def test_repeats_that_disagree_make_a_newly_flaky_task() -> None:
    h = history({("t", "S1"): [False, False, False]}, {("t", "S1"): [True, False, True]})
    assert _flaky(h) == [("t", True, 1, 0, 1)]
    assert _only(h).phones == [name("S1")]


def test_a_task_mixed_on_both_nights_is_flaky_not_new() -> None:
    h = history({("t", "S1"): [True, False]}, {("t", "S1"): [False, True]})
    assert _flaky(h) == [("t", False, 2, 0, 0)]
    assert (h.regressions, h.fixes) == ([], [])


def test_a_task_first_seen_mixed_on_the_newest_night_is_newly_flaky() -> None:
    h = history(passes("old", 6), {**passes("old", 6), **passes("new", 2)})
    assert _flaky(h) == [("new", True, 1, 0, 0)]


def test_flakiness_older_than_the_last_k_nights_is_forgotten() -> None:
    nights = [passes("t", 3), passes("t", 6), passes("t", 6), passes("t", 6)]
    assert history(*nights, flaky_nights=3).flaky == []
    assert _flaky(history(*nights, flaky_nights=4)) == [("t", False, 1, 3, 0)]


def test_a_task_flaky_long_ago_and_again_on_the_newest_night_is_new() -> None:
    # Night 1's flake is outside both the last 5 nights and the 5 before the newest.
    h = history(passes("t", 3), *[passes("t", 6)] * 5, passes("t", 3))
    assert _flaky(h) == [("t", True, 1, 4, 0)]


def test_a_task_flaky_within_the_k_nights_before_the_newest_is_not_new() -> None:
    # Night 2's flake is outside the last 5 nights but inside the 5 ending with the previous one.
    h = history(passes("t", 6), passes("t", 3), *[passes("t", 6)] * 4, passes("t", 3))
    assert _flaky(h) == [("t", False, 1, 4, 0)]


def test_k_defaults_to_5_and_is_at_most_the_nights_read() -> None:
    assert DEFAULT_FLAKY_NIGHTS == 5
    assert history(*[passes("t", 3)] * 7).flaky_nights == 5
    h = history(passes("t", 3), passes("t", 3), flaky_nights=30)
    assert h.flaky_nights == 2 and [c.run_id for c in _only(h).cells] == ["n1", "n2"]


def test_k_below_2_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        history(passes("t", 3), flaky_nights=1)


def test_the_cells_count_each_night_of_the_window() -> None:
    h = history(on_phones("t", [True, False, "error", "skipped"]), passes("t", 6), passes("t", 2), flaky_nights=2)
    assert [(c.run_id, c.passed, c.judged, c.errors, c.skipped) for c in _only(h).cells] == [
        ("n2", 6, 6, 0, 0), ("n3", 2, 6, 0, 0)]
    h = history(on_phones("t", [True, False, "error", "skipped"]), passes("t", 6))
    assert [(c.passed, c.judged, c.errors, c.skipped) for c in _only(h).cells] == [(1, 2, 1, 1), (6, 6, 0, 0)]


def test_flaky_tasks_are_newly_flaky_first_then_by_task() -> None:
    h = history({**passes("b-old", 3), **passes("a-old", 3), **passes("z-new", 6), **passes("c-new", 6)},
                {**passes("b-old", 3), **passes("a-old", 3), **passes("z-new", 3), **passes("c-new", 0)})
    assert [(f.task_id, f.new) for f in h.flaky] == [("c-new", True), ("z-new", True), ("a-old", False),
                                                    ("b-old", False)]


def test_a_task_is_lane_task_and_instance() -> None:
    nights = [mem_night(f"n{d}", passes("t", 3), day=d, instance=seed) for d, seed in ((1, "1"), (2, "2"))]
    h = build_history(nights)
    # Instance 2 first appears on the newest night: new, listed first.
    assert [(f.task_id, f.instance, f.new) for f in h.flaky] == [("t", "2", True), ("t", "1", False)]


def test_the_category_is_the_newest_nights() -> None:
    nights = [mem_night(f"n{d}", passes("t", 3), day=d, category=c) for d, c in ((1, "read/system"), (2, "write"))]
    assert _only(build_history(nights)).category == "write"


def test_at_most_max_task_rows_flaky_tasks_are_listed_and_the_rest_counted() -> None:
    verdicts = {(f"t{i:04d}", serial): i % 2 == 0 for i in range(MAX_TASK_ROWS + 3) for serial, _m in SIX[:1]}
    flipped = {key: not v for key, v in verdicts.items()}
    h = history(verdicts, flipped)
    assert (len(h.flaky), h.flaky_more) == (MAX_TASK_ROWS, 3)
    assert h.flaky[0].task_id == "t0000"
