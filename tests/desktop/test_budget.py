"""The slot budget (180 s wall clock, 30 actions) of seed 000: a run past it is never a success, and a run past
the time budget is a timeout (failed, reason=timeout)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.desktop.batch import load_batch
from farm.desktop.result import RunResult
from tests.desktop.fs_snapshot import assert_refused, snapshot
from tests.helpers.desktop import FarmRun, farm, planned_batch, result_data, run


def _record(tmp_path: Path, status: str = "success", **fields: object) -> tuple[Path, Path, FarmRun]:
    """(results dir, output path, outcome) of recording one result built from `fields`."""
    directory, b0 = planned_batch(tmp_path)
    result = directory / "result.json"
    result.write_text(json.dumps(result_data(status, **fields)), encoding="utf-8")
    out = directory / "batch-001.json"
    return directory, out, farm("desktop", "record", b0, "calculator-add/1", result, out)


def _refused(tmp_path: Path, status: str = "success", **fields: object) -> str:
    directory, b0 = planned_batch(tmp_path)
    result = directory / "result.json"
    result.write_text(json.dumps(result_data(status, **fields)), encoding="utf-8")
    before = snapshot(tmp_path)
    line = assert_refused(farm("desktop", "record", b0, "calculator-add/1", result, directory / "b1.json"), result)
    assert snapshot(tmp_path) == before
    return line


def test_record_refuses_the_over_budget_success_of_the_issue(tmp_path: Path) -> None:
    line = _refused(tmp_path, duration_ms=240_000, actions=31)
    assert "field status" in line and "past the 180 s budget" in line and "reason=timeout" in line


def test_record_refuses_a_success_one_millisecond_past_the_time_budget(tmp_path: Path) -> None:
    assert "past the 180 s budget" in _refused(tmp_path, duration_ms=180_001)


def test_record_refuses_a_success_past_the_action_budget(tmp_path: Path) -> None:
    line = _refused(tmp_path, actions=31)
    assert "field actions" in line and "31 exceed the 30-action budget" in line and "not a success" in line


def test_record_accepts_a_success_exactly_at_both_budgets(tmp_path: Path) -> None:
    _, out, outcome = _record(tmp_path, duration_ms=180_000, actions=30)
    assert outcome.code == 0, outcome.stderr
    assert outcome.stderr == ""
    assert load_batch(out).slot("calculator-add/1").status == "success"


def test_record_accepts_a_run_past_the_time_budget_as_a_timeout(tmp_path: Path) -> None:
    _, out, outcome = _record(tmp_path, "failed", duration_ms=240_000, actions=31, reason="timeout")
    assert outcome.code == 0, outcome.stderr
    assert load_batch(out).slot("calculator-add/1").status == "failed"


@pytest.mark.parametrize(
    ("status", "reason"), [("failed", "wrong value"), ("blocked", "permission refused"), ("cancelled", "stopped")]
)
def test_record_refuses_a_run_past_the_time_budget_that_is_not_a_timeout(
    tmp_path: Path, status: str, reason: str
) -> None:
    line = _refused(tmp_path, status, duration_ms=200_000, reason=reason)
    assert "field reason" in line and "record it as failed with reason=timeout" in line


def test_record_accepts_a_cancelled_run_past_the_action_budget_with_a_warning(tmp_path: Path) -> None:
    _, out, outcome = _record(tmp_path, "cancelled", actions=31, reason="action budget reached")
    assert outcome.code == 0, outcome.stderr
    assert "31 actions exceed the 30-action budget" in outcome.stderr
    assert load_batch(out).slot("calculator-add/1").status == "cancelled"


def test_an_over_budget_success_never_validates_as_a_result() -> None:
    # The rule lives in the format, so a batch version edited to hold such a success fails to load anywhere.
    with pytest.raises(ValueError, match="past the 180 s budget"):
        RunResult.model_validate(result_data(duration_ms=240_000))
    assert run(duration_ms=180_000).status == "success"


def test_report_refuses_a_batch_edited_to_hold_an_over_budget_success(tmp_path: Path) -> None:
    _, out, outcome = _record(tmp_path, "failed", duration_ms=240_000, reason="timeout")
    assert outcome.code == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    slot = data["slots"][0]
    slot["status"] = slot["result"]["status"] = "success"
    slot["result"]["reason"], slot["result"]["verification"] = "", "display shows 30244"
    out.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    line = assert_refused(farm("desktop", "report", out, "--json"), out)
    assert "field slots.0.result.status" in line and "past the 180 s budget" in line
