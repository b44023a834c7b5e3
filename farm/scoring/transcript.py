"""The transcript files of one attempt (`<id>/run/steps.jsonl`, `final.json`) and re-scoring from them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import Field, JsonValue, ValidationError

from farm.camel import CamelModel
from farm.errors import FarmError
from farm.results.record import CheckResult, RunMetrics, Tokens
from farm.scoring.evidence import EndKind, Evidence, HandOver, ScoreResult, ScreenRead
from farm.scoring.score import score
from farm.taskset.model import Task


class ObservationLine(CamelModel):
    """The screen as the agent saw it before a step."""

    digest: str
    """SHA-1 of the observation text (equal digests = same screen)."""
    text: str
    """Compact hierarchy text (kept whole: scoring re-reads it)."""
    package: str = ""
    """Foreground package."""
    activity: str = ""
    """Foreground activity."""
    screenshot: str | None = None
    """File name of the JPEG taken with this observation, next to steps.jsonl (`shot-<sha256 prefix>.jpg`);
    `screenshot omitted: cap` once the attempt's screenshot budget was spent."""


class ActionLine(CamelModel):
    """The tool call of a step."""

    tool: str
    """Tool name as called (may be unknown: then the step has an error)."""
    args: dict[str, JsonValue] = Field(default_factory=dict)
    """Parsed arguments (empty when they did not parse)."""
    raw: str | None = None
    """Raw argument text when it did not parse."""
    message: str | None = None
    """Free text the model wrote along with the call (null for scripts and when it wrote none)."""


class ResultLine(CamelModel):
    """What performing the action gave."""

    ok: bool
    """Whether the action was performed."""
    text: str = ""
    """What the agent was told."""
    error: str | None = None
    """Step error (malformed call, unknown ref, failed action)."""


class StepTimings(CamelModel):
    """Where the time of a step went (ms)."""

    screen_read_ms: float = 0.0
    """Hierarchy dump, foreground query, screenshot, text conversion."""
    model_ms: float = 0.0
    """Waiting on the policy (model call; ~0 for scripts)."""
    action_ms: float = 0.0
    """Performing the action on the phone."""
    other_ms: float = 0.0
    """Everything else in the step."""


class StepLine(CamelModel):
    """One line of `steps.jsonl`."""

    step: int
    """Step index from 1."""
    at_ms: float
    """Time since the task started when the step began."""
    observation: ObservationLine
    """The screen before the action."""
    action: ActionLine | None = None
    """The action taken (null when the policy produced none)."""
    result: ResultLine
    """Its result."""
    timings: StepTimings = Field(default_factory=StepTimings)
    """Step timings."""
    tokens: Tokens | None = None
    """Token usage of the model call behind this step, when there was one."""


class FinalFile(CamelModel):
    """`final.json`: the end of the attempt, its evidence and its verdict."""

    task_id: str
    """Task id."""
    run: str
    """Run id."""
    executor: Literal["host", "instrument"] = "host"
    """Which executor wrote it."""
    evidence: Evidence
    """Everything the checks used (re-scoring reads this)."""
    outcome: str
    """Outcome at the time of scoring."""
    passed: bool
    """Verdict at the time of scoring."""
    checks: list[CheckResult] = Field(default_factory=list)
    """Per-check verdicts."""
    reasons: list[str] = Field(default_factory=list)
    """Reasons."""
    failure_category: str | None = None
    """Failure category."""
    takeover_kind: str | None = None
    """Accepted takeover kind."""
    metrics: RunMetrics = Field(default_factory=RunMetrics)
    """运行小结 of the attempt."""
    tokens: Tokens = Field(default_factory=Tokens)
    """Token totals."""
    cost_usd: float | None = None
    """Cost; null when unknown."""


def read_steps(path: Path) -> list[StepLine]:
    """Parse steps.jsonl; FarmError naming the line on a bad one."""
    steps: list[StepLine] = []
    if not path.exists():
        return steps
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            steps.append(StepLine.model_validate_json(line))
        except ValidationError as exc:
            raise FarmError(f"{path}:{n}: not a transcript step ({exc.errors()[0]['msg']})") from None
    return steps


# A transcript's own `endReason` (record vocabulary) → how the harness names the end.
_REASON_END: dict[str, EndKind] = {
    "answer": "answer", "give_up": "give_up", "confirm": "confirmation", "takeover": "hand_over",
    "max_steps": "max_steps", "timeout": "timeout", "repeat": "repeat", "error": "error",
}


def _end_of(raw: dict[str, object], answer: object) -> EndKind:
    """How a transcript without harness evidence ended, from what it shows — never from its verdict.

    The phone's `outcome: failed` does not say whether the agent gave up or ran out of budget, so
    without an `endReason` it is `unknown` (which never counts as declaring a task impossible).
    """
    said = raw.get("endReason")
    if isinstance(said, str) and said in _REASON_END:
        return _REASON_END[said]
    if isinstance(answer, str) and answer.strip():
        return "answer"
    outcome = raw.get("outcome")
    if outcome == "takeover":
        return "hand_over"
    if outcome == "error":
        return "error"
    if outcome == "confirmation":
        return "confirmation"
    return "unknown"


def load_evidence(run_dir: Path) -> Evidence:
    """The evidence of a transcript directory (`<id>/run/`).

    Uses `final.json`'s evidence when present; otherwise rebuilds what it can from the steps
    (screen reads) and the final answer, as other agents' transcripts carry less.
    """
    final_path = run_dir / "final.json"
    if not final_path.exists():
        raise FarmError(f"{run_dir}: no final.json", hint="re-scoring needs a transcript (<id>/run/final.json)")
    try:
        raw = json.loads(final_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FarmError(f"{final_path}: unreadable ({exc})") from None
    if not isinstance(raw, dict):
        raise FarmError(f"{final_path}: not a JSON object")
    reads = screen_reads(run_dir / "steps.jsonl")
    if isinstance(raw.get("evidence"), dict):
        try:
            evidence = Evidence.model_validate(raw["evidence"])
        except ValidationError as exc:
            raise FarmError(f"{final_path}: evidence: {exc.errors()[0]['msg']}") from None
        if not evidence.screen_reads and reads:
            evidence = evidence.model_copy(update={"screen_reads": reads})
        return evidence
    answer = raw.get("answer")
    end = _end_of(raw, answer)
    reason = str(raw.get("reason") or "")
    hand_over = None
    if end == "hand_over":
        # The barrier must be visible on the last screen read; a transcript without screens cannot show it.
        kind = str(raw.get("takeoverKind") or reason or "unknown")
        hand_over = HandOver(step=reads[-1].step if reads else 0, reason=kind, screen=reads[-1].text if reads else "")
    steps = raw.get("steps")
    return Evidence(
        end=end,
        answer=answer if isinstance(answer, str) else None,
        end_reason=reason,
        screen_reads=reads,
        hand_over=hand_over,
        steps=steps if isinstance(steps, int) else len(reads),
    )


def screen_reads(path: Path) -> list[ScreenRead]:
    """Screen texts of a steps.jsonl, tolerant of other agents' step formats (lines without text are skipped)."""
    reads: list[ScreenRead] = []
    if not path.exists():
        return reads
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict):
            continue
        obs = item.get("observation")
        text = obs.get("text") if isinstance(obs, dict) else obs if isinstance(obs, str) else item.get("screen")
        if isinstance(text, str) and text:
            step = item.get("step")
            package = obs.get("package", "") if isinstance(obs, dict) else ""
            reads.append(ScreenRead(step=step if isinstance(step, int) else n, text=text,
                                    package=package if isinstance(package, str) else ""))
    return reads


def rescore_run_dir(task: Task, run_dir: Path) -> ScoreResult:
    """Score again from a transcript directory with today's checks (same functions as live scoring)."""
    return score(task, load_evidence(run_dir))
