"""The LLM judge check: the recorded verdict of one judge, read as a check, never a guess."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from farm.results.record import CheckResult
from farm.scoring.evidence import Evidence, JudgeEvidence
from farm.scoring.judge import JudgeMode, LlmJudge, llm_judge
from farm.scoring.registry import CheckContext, evaluate


def _verdict(passed: bool | None, mode: JudgeMode = "reference", *, reason: str | None = "names the recipe",
             error: str | None = None) -> JudgeEvidence:
    return JudgeEvidence(mode=mode, passed=passed, reason=reason, judge_error=error)


def _through_registry(mode: JudgeMode, *verdicts: JudgeEvidence) -> CheckResult:
    evidence = Evidence(end="answer", answer="Easy pancakes", judge_verdicts=list(verdicts))
    return evaluate(LlmJudge(mode=mode), CheckContext(evidence=evidence))


def test_a_passing_verdict_passes_with_its_reason() -> None:
    result = llm_judge([_verdict(True)], "reference")
    assert (result.type, result.passed, result.detail) == ("llm_judge", True, "reference judge: names the recipe")


def test_a_failing_verdict_fails_with_its_reason() -> None:
    result = llm_judge([_verdict(False, reason="wrong recipe")], "reference")
    assert (result.passed, result.detail) == (False, "reference judge: wrong recipe")


def test_a_verdict_without_a_reason_still_says_which_judge() -> None:
    assert llm_judge([_verdict(True, reason=None)], "reference").detail == "reference judge: (no reason given)"


def test_a_judge_error_leaves_the_check_unjudged_with_the_error() -> None:
    result = llm_judge([_verdict(None, reason=None, error="reply truncated at max_tokens")], "reference")
    assert (result.passed, result.detail) == (None, "reference judge: reply truncated at max_tokens")


def test_a_null_verdict_without_an_error_is_unjudged() -> None:
    result = llm_judge([_verdict(None, "evidence", reason=None)], "evidence")
    assert (result.passed, result.detail) == (None, "evidence judge: no verdict")


def test_no_verdict_at_all_is_unjudged() -> None:
    result = llm_judge([], "reference")
    assert (result.passed, result.detail) == (None, "reference judge: no reference verdict was recorded")


def test_a_verdict_of_the_other_judge_is_never_used() -> None:
    result = llm_judge([_verdict(True, "evidence")], "reference")
    assert (result.passed, result.detail) == (None, "reference judge: no reference verdict was recorded")


def test_the_verdict_of_the_named_judge_is_picked_beside_the_other() -> None:
    verdicts = [_verdict(True, "evidence"), _verdict(False, "reference", reason="wrong")]
    assert llm_judge(verdicts, "reference").passed is False
    assert llm_judge(verdicts, "evidence").passed is True


@pytest.mark.parametrize("second", [True, False, None])
def test_two_verdicts_of_one_judge_are_never_picked_from(second: bool | None) -> None:
    result = llm_judge([_verdict(True), _verdict(second)], "reference")
    assert result.passed is None
    assert result.detail == "reference judge: 2 reference verdicts were recorded for one attempt; none is used"


@pytest.mark.parametrize("verdict", [_verdict(False), _verdict(None, error="HTTP 500"), _verdict(None)])
def test_a_failed_or_unjudged_judge_never_makes_the_check_pass(verdict: JudgeEvidence) -> None:
    assert llm_judge([verdict], "reference").passed is not True
    assert _through_registry("reference", verdict).passed is not True


def test_the_registry_reads_the_verdicts_from_the_evidence() -> None:
    passed = _through_registry("reference", _verdict(True))
    unjudged = _through_registry("evidence", _verdict(True), _verdict(None, "evidence", error="no JSON in reply"))
    assert (passed.type, passed.passed, passed.detail) == ("llm_judge", True, "reference judge: names the recipe")
    assert (unjudged.passed, unjudged.detail) == (None, "evidence judge: no JSON in reply")


def test_the_registry_without_verdicts_is_unjudged() -> None:
    result = _through_registry("evidence")
    assert (result.passed, result.detail) == (None, "evidence judge: no evidence verdict was recorded")


def test_the_check_model_refuses_an_unknown_mode_and_extra_fields() -> None:
    with pytest.raises(ValidationError):
        LlmJudge.model_validate({"mode": "vibes"})
    with pytest.raises(ValidationError):
        LlmJudge.model_validate({"mode": "reference", "passed": True})


def test_judge_evidence_keeps_null_apart_from_false() -> None:
    text = Evidence(end="answer", judge_verdicts=[_verdict(None), _verdict(False, "evidence")]).model_dump_json(
        by_alias=True)
    back = Evidence.model_validate_json(text)
    assert [v.passed for v in back.judge_verdicts] == [None, False] and '"judgeVerdicts"' in text
