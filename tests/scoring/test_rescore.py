"""The host's verdict on a phone's attempt: re-scored from the transcript, the phone's word kept apart."""

import json
from pathlib import Path

from farm.results.device_line import DeviceScore
from farm.results.normalise import Context, score_to_record
from farm.scoring.rescore import NO_TRANSCRIPT, host_rescore, rescore_records
from tests.helpers.host import make_task
from tests.helpers.records import score_line

_CTX = Context(run="r", device="S1", executor="instrument")
_TASK = make_task(id="calc-multiply", checks=[{"type": "answer_regex", "pattern": "56,?088"},
                                              {"type": "answer_grounded", "minItems": 1}])


def _record(**line: object):  # type: ignore[no-untyped-def]
    return score_to_record(DeviceScore.model_validate(score_line(**line)), _CTX, "scores.jsonl:1")


def _transcript(tmp_path: Path, answer: str | None, screen: str, **final: object) -> Path:
    run_dir = tmp_path / "calc-multiply" / "run"
    run_dir.mkdir(parents=True)
    step = {"step": 1, "observation": {"text": screen}}
    (run_dir / "steps.jsonl").write_text(json.dumps(step, ensure_ascii=False) + "\n", encoding="utf-8")
    (run_dir / "final.json").write_text(json.dumps({"answer": answer, **final}, ensure_ascii=False), "utf-8")
    return run_dir


def test_phone_saying_passed_with_a_failed_check_does_not_pass(tmp_path: Path) -> None:
    rec = _record(outcome="failed", passed=True,
                  checks=[{"type": "answer_regex", "passed": False, "detail": "no match"}], answer="我不知道")
    run_dir = _transcript(tmp_path, "我不知道", '[1] TextView "0"', outcome="failed")
    out = host_rescore(rec, _TASK, run_dir)
    assert (out.passed, out.outcome) == (False, "failed")
    assert out.device_verdict is not None and out.device_verdict.passed is True


def test_host_passes_an_attempt_its_evidence_supports(tmp_path: Path) -> None:
    run_dir = _transcript(tmp_path, "结果是 56088", '[1] TextView "56,088"')
    out = host_rescore(_record(), _TASK, run_dir)
    assert (out.passed, out.outcome, out.end_reason) == (True, "succeeded", "answer")


def test_answer_not_on_screen_fails_on_the_host(tmp_path: Path) -> None:
    run_dir = _transcript(tmp_path, "结果是 56088", '[1] TextView "123×456"')
    out = host_rescore(_record(), _TASK, run_dir)
    assert not out.passed and out.failure_category == "perception"


def test_missing_transcript_is_an_infrastructure_error_never_a_pass(tmp_path: Path) -> None:
    out = host_rescore(_record(), _TASK, tmp_path / "calc-multiply" / "run")
    assert (out.outcome, out.passed, out.failure_kind) == ("error", False, "infrastructure")
    assert out.reasons[0].startswith(NO_TRANSCRIPT)


def test_phone_outcome_failed_without_end_reason_is_not_a_give_up(tmp_path: Path) -> None:
    task = make_task(id="calc-multiply", category="impossible", expect="failed")
    run_dir = _transcript(tmp_path, None, '[1] TextView "home"', outcome="failed")
    out = host_rescore(_record(outcome="failed", expect="failed", passed=True, answer=None), task, run_dir)
    assert not out.passed and out.end_reason is None


def test_give_up_stated_by_the_transcript_passes_an_impossible_task(tmp_path: Path) -> None:
    task = make_task(id="calc-multiply", category="impossible", expect="failed")
    run_dir = _transcript(tmp_path, None, '[1] TextView "home"', outcome="failed", endReason="give_up")
    out = host_rescore(_record(outcome="failed", expect="failed", passed=True, answer=None), task, run_dir)
    assert (out.passed, out.end_reason) == (True, "give_up")


def test_unplanned_task_from_the_phone_is_an_error(tmp_path: Path) -> None:
    (out,) = rescore_records([_record()], {}, tmp_path)
    assert (out.outcome, out.passed) == ("error", False)
    assert "not planned" in out.reasons[0]


def test_skips_keep_the_phone_reason(tmp_path: Path) -> None:
    rec = _record(outcome="skipped", passed=False, reason="未登录")
    assert host_rescore(rec, _TASK, tmp_path) == rec
