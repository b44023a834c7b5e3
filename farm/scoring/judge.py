"""LLM judge checks: the verdict a lane's judge adapter recorded, read as a check.

The judge's model I/O is the lane's (it gathers evidence, like probes and fresh looks on the phone); this module
only turns the recorded verdicts into a check result, and never picks a verdict when it cannot tell which one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from farm.results.record import CheckResult
from farm.scoring.evidence import JudgeEvidence

JudgeMode = Literal["reference", "evidence"]

LANE_CHECK_TYPES: tuple[str, ...] = ("llm_judge",)
"""Check types a lane attaches to its own tasks; task YAML cannot name them (they are not in `CHECK_TYPES`)."""


class LlmJudge(BaseModel):
    """The attempt passes when the LLM judge of `mode` said so."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["llm_judge"] = "llm_judge"
    """Check type."""
    mode: JudgeMode
    """Which judge's verdict decides: `reference` or `evidence`."""


def llm_judge(verdicts: Sequence[JudgeEvidence], mode: JudgeMode) -> CheckResult:
    """The check result of the judge of `mode`: its verdict, or null (unjudged) when there is none, when the judge
    gave none, or when two verdicts of that mode were recorded (neither is picked)."""
    prefix = f"{mode} judge: "
    mine = [v for v in verdicts if v.mode == mode]
    if not mine:
        return CheckResult(type="llm_judge", passed=None, detail=f"{prefix}no {mode} verdict was recorded")
    if len(mine) > 1:
        return CheckResult(type="llm_judge", passed=None,
                           detail=f"{prefix}{len(mine)} {mode} verdicts were recorded for one attempt; none is used")
    verdict = mine[0]
    if verdict.passed is None:
        return CheckResult(type="llm_judge", passed=None, detail=prefix + (verdict.judge_error or "no verdict"))
    return CheckResult(type="llm_judge", passed=verdict.passed, detail=prefix + (verdict.reason or "(no reason given)"))
