import json
from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.scoring import rescore_run_dir, score
from farm.scoring.transcript import FinalFile, ObservationLine, ResultLine, StepLine
from host_agent.transcript import TranscriptWriter
from tests.helpers.host import make_evidence, make_task

_SCREEN = '[1] TextView "56088" (result)'


def _write_run(run_dir: Path, task_regex: str = "56,?088") -> None:
    task = make_task(checks=[{"type": "answer_regex", "pattern": task_regex}, {"type": "answer_grounded"}])
    evidence = make_evidence(_SCREEN, answer="56,088", steps=1)
    result = score(task, evidence)
    writer = TranscriptWriter(run_dir)
    writer.step(StepLine(step=1, at_ms=0, observation=ObservationLine(digest="d", text=_SCREEN),
                         result=ResultLine(ok=True, text="answer recorded")))
    writer.final(FinalFile(task_id=task.id, run="r1", evidence=evidence, outcome=result.outcome,
                           passed=result.passed, checks=result.checks))


def test_rescoring_a_host_transcript_gives_the_live_verdict(tmp_path: Path) -> None:
    _write_run(tmp_path)
    task = make_task(checks=[{"type": "answer_regex", "pattern": "56,?088"}, {"type": "answer_grounded"}])
    assert rescore_run_dir(task, tmp_path).passed


def test_rescoring_applies_todays_checks(tmp_path: Path) -> None:
    _write_run(tmp_path)
    stricter = make_task(checks=[{"type": "answer_regex", "pattern": "^56088$"}])
    assert not rescore_run_dir(stricter, tmp_path).passed


def test_on_device_transcript_without_evidence_is_rebuilt_from_steps(tmp_path: Path) -> None:
    step = {"step": 1, "atMs": 5, "observation": {"digest": "x", "text": _SCREEN}, "result": {"ok": True}}
    (tmp_path / "steps.jsonl").write_text(json.dumps(step) + "\n", encoding="utf-8")
    (tmp_path / "final.json").write_text(json.dumps({"outcome": "succeeded", "answer": "是 56088"}), "utf-8")
    result = rescore_run_dir(make_task(checks=[{"type": "answer_grounded"}]), tmp_path)
    assert (result.outcome, result.passed) == ("succeeded", True)


def test_missing_final_json_is_a_farm_error(tmp_path: Path) -> None:
    with pytest.raises(FarmError, match="no final.json"):
        rescore_run_dir(make_task(), tmp_path)


def test_sim_agent_transcript_without_screen_text_is_read_tolerantly(tmp_path: Path) -> None:
    step = {"step": 1, "at": "2026-01-01T00:00:00Z", "observation": {"digest": "ab", "chars": 900},
            "action": {"type": "tap"}, "result": "ok"}
    (tmp_path / "steps.jsonl").write_text(json.dumps(step) + "\n", encoding="utf-8")
    final = {"id": "t-read", "outcome": "succeeded", "answer": "56088", "steps": 1}
    (tmp_path / "final.json").write_text(json.dumps(final), encoding="utf-8")
    grounded = rescore_run_dir(make_task(checks=[{"type": "answer_grounded"}]), tmp_path)
    regex = rescore_run_dir(make_task(checks=[{"type": "answer_regex", "pattern": "56,?088"}]), tmp_path)
    assert (grounded.passed, regex.passed) == (False, True)


def test_takeover_in_a_transcript_needs_the_barrier_on_its_last_screen(tmp_path: Path) -> None:
    step = {"step": 1, "atMs": 1, "observation": {"digest": "x", "text": '[1] Button "登录"'}, "result": {"ok": True}}
    (tmp_path / "steps.jsonl").write_text(json.dumps(step) + "\n", encoding="utf-8")
    (tmp_path / "final.json").write_text(json.dumps({"outcome": "takeover", "takeoverKind": "login"}), "utf-8")
    result = rescore_run_dir(make_task(expect="takeover"), tmp_path)
    assert (result.outcome, result.takeover_kind, result.passed) == ("takeover", "login", True)
