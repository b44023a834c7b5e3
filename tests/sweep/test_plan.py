"""Sweep units: spreads, repeats, skips, longest first from history."""

from farm.sweep.plan import UNKNOWN_FIRST, Estimates, PhonePlan, plan_units

_A = PhonePlan("A", "Pixel 7", frozenset({"t1", "t2"}), {"t3": "未安装 dev.shop"})
_B = PhonePlan("B", "Pixel 8", frozenset({"t1", "t3"}), {"t2": "未登录"})


def test_every_phone_pins_each_eligible_task_to_each_phone() -> None:
    units, skips = plan_units(["t1", "t2", "t3"], [_A, _B], spread="every-phone", repeats=2, estimates=Estimates())
    assert sorted((u.task_id, u.pin, u.repeat) for u in units) == sorted(
        [(t, p, r) for t, p in (("t1", "A"), ("t2", "A"), ("t1", "B"), ("t3", "B")) for r in (1, 2)]
    )
    assert sorted((s.task_id, s.device, s.reason) for s in skips if s.repeat == 1) == [
        ("t2", "B", "未登录"), ("t3", "A", "未安装 dev.shop")]


def test_shard_runs_each_task_and_repeat_once_on_any_phone() -> None:
    units, skips = plan_units(["t1", "t2", "t3", "t4"], [_A, _B], spread="shard", repeats=3, estimates=Estimates())
    assert sorted((u.task_id, u.repeat) for u in units) == [(t, r) for t in ("t1", "t2", "t3") for r in (1, 2, 3)]
    assert {u.pin for u in units} == {""}
    assert {(s.task_id, s.device) for s in skips} == {("t4", "any")}


def test_unit_ids_are_unique() -> None:
    units, _ = plan_units(["t1", "t2"], [_A, _B], spread="every-phone", repeats=3, estimates=Estimates())
    assert len({u.unit_id for u in units}) == len(units)


def test_longest_first_and_unknown_before_all() -> None:
    est = Estimates(by_model={("t1", "Pixel 7"): 1000.0}, by_task={"t1": 900.0, "t2": 5000.0})
    units, _ = plan_units(["t1", "t2", "t3"], [PhonePlan("A", "Pixel 7", frozenset({"t1", "t2", "t3"}))],
                          spread="every-phone", repeats=1, estimates=est)
    order = [u.task_id for u in sorted(units, key=lambda u: u.priority)]
    assert order == ["t3", "t2", "t1"]
    assert next(u for u in units if u.task_id == "t3").priority == UNKNOWN_FIRST


def test_model_estimate_wins_over_the_task_median() -> None:
    est = Estimates(by_model={("t1", "Pixel 7"): 10.0}, by_task={"t1": 99.0})
    assert est.of("t1", "Pixel 7") == 10.0 and est.of("t1", "Pixel 8") == 99.0 and est.of("t9", None) is None


def test_history_estimates_are_medians_per_model_and_per_task(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from farm.results.record import RunMetrics
    from farm.sweep.plan import history_estimates
    from tests.helpers.records import record, write_run

    def rec(task: str, device: str, ms: float, **kw: object):  # type: ignore[no-untyped-def]
        return record(task, run="old", device=device, metrics=RunMetrics(total_ms=ms), **kw)

    run = write_run(tmp_path, "old", [
        rec("t1", "S1", 100), rec("t1", "S1", 300, attempt=2), rec("t1", "S2", 1000),
        rec("t1", "S2", 9999, outcome="error", passed=False), rec("t2", "S1", 50, outcome="skipped", passed=False),
    ], [("S1", "Pixel 7"), ("S2", "Pixel 8")])
    est = history_estimates([run])
    assert est.by_model == {("t1", "Pixel 7"): 200.0, ("t1", "Pixel 8"): 1000.0}
    assert est.by_task == {"t1": 300.0}


def test_a_sweeps_generated_run_id_keeps_within_the_name_bound_whatever_the_label() -> None:
    from farm.names import MAX_NAME, check_name
    from farm.sweep.request import SweepRequest
    from farm.sweep.sweep import _default_run_id

    ids = {label: _default_run_id(SweepRequest(label=label), []) for label in
           ("n" * MAX_NAME, "a" * 83 + "." + "b" * 16, "nightly")}
    for run_id in ids.values():
        check_name(run_id, "--run-id")  # a refused name raises
    assert len(ids["n" * MAX_NAME]) == MAX_NAME
    assert ids["a" * 83 + "." + "b" * 16].endswith("-" + "a" * 83)  # cut, and no trailing dot
    assert ids["nightly"].endswith("-nightly")
