"""`farm desktop record`: a new linked version per result, and every refusal (exit 2, one line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.desktop.batch import load_batch, sha256_file
from tests.helpers.desktop import REPO, farm, planned_batch, result_data, write_result


def _record_error(tmp_path: Path, **result: object) -> str:
    directory, b0 = planned_batch(tmp_path)
    data = result_data(str(result.pop("status", "success")))
    data.update(result)
    path = directory / "result.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    outcome = farm("desktop", "record", b0, "calculator-add/1", path, directory / "batch-001.json")
    assert outcome.code == 2
    assert len(outcome.stderr.strip().splitlines()) == 1
    assert not (directory / "batch-001.json").exists()
    return outcome.stderr


def test_record_writes_a_new_version_linked_by_hash(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    before = b0.read_bytes()
    result = write_result(directory / "result.json", duration_ms=21_500)
    outcome = farm("desktop", "record", b0, "calculator-add/1", result, directory / "batch-001.json")
    assert outcome.code == 0, outcome.stderr
    b1 = load_batch(directory / "batch-001.json")
    assert b1.sequence == 1 and b1.recordedSlot == "calculator-add/1"
    assert b1.previous is not None
    assert (b1.previous.file, b1.previous.sha256) == ("batch-000.json", sha256_file(b0))
    slot = b1.slot("calculator-add/1")
    assert slot.status == "success" and slot.result is not None and slot.result.duration_ms() == 21_500
    assert slot.resultSha256 == sha256_file(result)
    assert b0.read_bytes() == before  # the old version is kept as it was


def test_record_refuses_a_finished_slot(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    result = write_result(directory / "result.json")
    assert farm("desktop", "record", b0, "calculator-add/1", result, directory / "batch-001.json").code == 0
    outcome = farm("desktop", "record", directory / "batch-001.json", "calculator-add/1", result, directory / "b2.json")
    assert outcome.code == 2
    assert "slot calculator-add/1 is already recorded (success)" in outcome.stderr
    assert not (directory / "b2.json").exists()


def test_record_refuses_an_existing_output(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    result = write_result(directory / "result.json")
    out = directory / "batch-001.json"
    out.write_text("keep me", encoding="utf-8")
    outcome = farm("desktop", "record", b0, "calculator-add/1", result, out)
    assert outcome.code == 2 and "output batch already exists" in outcome.stderr
    assert out.read_text(encoding="utf-8") == "keep me"


def test_record_refuses_overwriting_the_input_batch(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    before = b0.read_bytes()
    outcome = farm("desktop", "record", b0, "calculator-add/1", write_result(directory / "r.json"), b0)
    assert outcome.code == 2 and "already exists" in outcome.stderr
    assert b0.read_bytes() == before


@pytest.mark.parametrize("slot", ["calculator-add/3", "calculator-add/0", "nope/1", "calculator-add"])
def test_record_refuses_an_unknown_slot(tmp_path: Path, slot: str) -> None:
    directory, b0 = planned_batch(tmp_path)
    outcome = farm("desktop", "record", b0, slot, write_result(directory / "r.json"), directory / "b1.json")
    assert outcome.code == 2
    assert f"unknown slot '{slot}'" in outcome.stderr and "repetition 1..2" in outcome.stderr


def test_record_refuses_forking_an_old_version(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    result = write_result(directory / "r.json")
    assert farm("desktop", "record", b0, "calculator-add/1", result, directory / "batch-001.json").code == 0
    outcome = farm("desktop", "record", b0, "calculator-add/2", result, directory / "fork.json")
    assert outcome.code == 2 and "is not the latest version" in outcome.stderr
    assert not (directory / "fork.json").exists()


def test_record_refuses_the_example_result(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    example = REPO / "fixtures/desktop/result.example.json"
    outcome = farm("desktop", "record", b0, "calculator-add/1", example, directory / "b1.json")
    assert outcome.code == 2 and "placeholder" in outcome.stderr


def test_record_refuses_an_unknown_status(tmp_path: Path) -> None:
    assert "field status" in _record_error(tmp_path, status="timeout", reason="timeout")


def test_record_refuses_a_non_utc_timestamp(tmp_path: Path) -> None:
    assert "field startedAt" in _record_error(tmp_path, startedAt="2026-02-03T17:00:00.000+08:00")


def test_record_refuses_a_timestamp_without_zone(tmp_path: Path) -> None:
    assert "field endedAt" in _record_error(tmp_path, endedAt="2026-02-03T09:00:20")


def test_record_refuses_an_end_before_the_start(tmp_path: Path) -> None:
    stderr = _record_error(tmp_path, startedAt="2026-02-03T09:00:20.000Z", endedAt="2026-02-03T09:00:00.000Z")
    assert "endedAt" in stderr and "earlier than startedAt" in stderr


@pytest.mark.parametrize("field", ["humanInterventions", "plannerHandoffs", "actions", "wrongActions"])
def test_record_refuses_a_negative_count(tmp_path: Path, field: str) -> None:
    assert f"field {field}" in _record_error(tmp_path, **{field: -1})


def test_record_refuses_a_fractional_count(tmp_path: Path) -> None:
    assert "field actions" in _record_error(tmp_path, actions=2.5)


def test_record_refuses_more_wrong_actions_than_actions(tmp_path: Path) -> None:
    assert "wrongActions" in _record_error(tmp_path, actions=2, wrongActions=3)


def test_record_refuses_empty_evidence(tmp_path: Path) -> None:
    assert "field evidence" in _record_error(tmp_path, evidence=[])


def test_record_refuses_blank_evidence(tmp_path: Path) -> None:
    assert "field evidence" in _record_error(tmp_path, evidence=["  "])


@pytest.mark.parametrize("status", ["failed", "blocked", "cancelled"])
def test_record_requires_a_reason_unless_success(tmp_path: Path, status: str) -> None:
    stderr = _record_error(tmp_path, status=status, reason="")
    assert "reason" in stderr and f"required when status is {status}" in stderr


@pytest.mark.parametrize("status", ["cancelled", "blocked", "success"])
def test_record_refuses_a_timeout_that_is_not_failed(tmp_path: Path, status: str) -> None:
    stderr = _record_error(tmp_path, status=status, reason="timeout", verification="display empty")
    assert "a timeout is recorded as failed with reason=timeout" in stderr


def test_record_accepts_a_timeout_as_failed(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    result = write_result(directory / "r.json", "failed", duration_ms=180_000, reason="timeout")
    outcome = farm("desktop", "record", b0, "browser-delayed/2", result, directory / "b1.json")
    assert outcome.code == 0, outcome.stderr
    assert load_batch(directory / "b1.json").slot("browser-delayed/2").status == "failed"


def test_record_refuses_a_success_without_verification(tmp_path: Path) -> None:
    assert "verification" in _record_error(tmp_path, verification="")


def test_record_refuses_an_unknown_field(tmp_path: Path) -> None:
    assert "field note" in _record_error(tmp_path, note="extra")


def test_record_refuses_a_success_past_the_budget(tmp_path: Path) -> None:
    # Was accepted with a warning; seed 000 makes a run past the budget a timeout (failed, reason=timeout).
    stderr = _record_error(tmp_path, **result_data(duration_ms=200_000))
    assert "field status" in stderr and "past the 180 s budget" in stderr and "reason=timeout" in stderr


def test_record_refuses_a_missing_result_file(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    outcome = farm("desktop", "record", b0, "calculator-add/1", directory / "none.json", directory / "b1.json")
    assert outcome.code == 2 and "result not found" in outcome.stderr
    assert not (directory / "b1.json").exists()


def test_record_refuses_an_output_inside_a_git_work_tree(tmp_path: Path) -> None:
    directory, b0 = planned_batch(tmp_path)
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    outcome = farm(
        "desktop", "record", b0, "calculator-add/1", write_result(directory / "r.json"), checkout / "b1.json"
    )
    assert outcome.code == 2 and "inside the git work tree" in outcome.stderr
    assert not (checkout / "b1.json").exists()
