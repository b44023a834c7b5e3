"""The transcript files of one attempt (`<id>/run/steps.jsonl`, `final.json`, and for an on-device agent's
attempt the harness's own `harness-look.json`) and re-scoring from them.

They come from the phone, so they are read within the caps of `farm.android.pull_limits`: a JSON file past its size
is not read at all (its size is looked at first), and steps.jsonl is read line by line, each line and the number
of lines capped. What a cap keeps out is said: in the error that refuses a file, or in the notes of what was read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field, JsonValue, ValidationError

from farm.android.pull_limits import (
    MAX_FINAL_JSON_BYTES,
    MAX_HARNESS_LOOK_BYTES,
    MAX_LINE_BYTES,
    MAX_STEP_LINES,
    TooLong,
    bounded_lines,
    count_lines,
    read_at_most,
    size_text,
)
from farm.camel import CamelModel
from farm.errors import FarmError
from farm.results.record import CheckResult, RunMetrics, Tokens
from farm.scoring.evidence import EndKind, Evidence, FreshLook, HandOver, ProbeReading, ScoreResult, ScreenRead
from farm.scoring.score import score
from farm.taskset.model import ProbeHas, ScreenHas, StateCheck, Task


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


HARNESS_LOOK_FILE = "harness-look.json"
"""In `<id>/run/`, beside an on-device agent's transcript: the harness's own look after the attempt."""

HARNESS_ONLY = {"fresh_looks": "freshLooks", "probes": "probes", "probes_after": "probesAfter",
                "app_choices": "appChoices", "judge_verdicts": "judgeVerdicts", "state_before": "stateBefore",
                "state_after": "stateAfter"}
"""Evidence fields only the harness fills (field name → its key in final.json). A phone's final.json never
supplies them: an app that could write its own fresh look could pass every write task on its word."""


class HarnessLook(CamelModel):
    """`<id>/run/harness-look.json`: what the harness itself saw on the phone after an on-device agent's attempt.

    Written by farm (`farm.android.harness_look`) after `am instrument` ended and the phone's tree was pulled,
    never by the app: it is the only source of an instrument attempt's fresh looks and after-probes. With several
    tasks in one `am instrument` call (`--batch`), the look comes after the whole call, so a task that ran later in
    the same call may have changed what this task left (`later_in_call`); what it shows is still the harness's
    own look at the phone, never the app's word.
    """

    written_by: Literal["harness"] = "harness"
    """Always `harness`: farm wrote this file, after the attempt, from its own look at the phone."""
    at: str
    """When the harness began this look (ISO-8601 UTC), after the `am instrument` call ended."""
    looks: list[FreshLook] = Field(default_factory=list)
    """The apps the harness reopened for screen_has checks (force-stop, launch, read and scroll), with their
    visible text or why a look failed."""
    probes_after: dict[str, str] = Field(default_factory=dict)
    """Output of each catalogue probe the task's probe_has checks name (`name` or `name:param` → output), run by
    the harness after the attempt."""
    app_choices: dict[str, str] = Field(default_factory=dict)
    """Package resolved before the run → the handler of that capability the attempt opened (from the transcript's
    packages), which the harness looked at instead."""
    state_before: dict[str, ProbeReading] = Field(default_factory=dict)
    """The task's state probes (`host_agent.state_probes`) as the harness read them just before the `am instrument`
    call started."""
    state_after: dict[str, ProbeReading] = Field(default_factory=dict)
    """The task's state probes and probesAfter as the harness read them after the call."""
    later_in_call: list[str] = Field(default_factory=list)
    """Tasks that ended after this one in the same `am instrument` call, before the look: they may have changed
    the screens this look saw."""
    error: str | None = None
    """Why the harness could not look (phone gone, uiautomator2 down): the attempt is then an infrastructure
    error, never scored on the app's word."""
    app_file_replaced: bool = False
    """The pulled tree already held a `harness-look.json` (the app wrote it): farm removed it before looking."""


def needs_look(task: Task) -> bool:
    """Whether the task has a check only the harness's look after the attempt can decide (screen_has,
    probe_has, state), or probes it reads after."""
    return any(isinstance(c, ScreenHas | ProbeHas | StateCheck) for c in task.checks) or bool(task.probes_after)


def read_harness_look(run_dir: Path) -> HarnessLook:
    """The harness's look of a transcript directory; FarmError when it is missing or unreadable."""
    path = run_dir / HARNESS_LOOK_FILE
    try:
        data = read_at_most(path, MAX_HARNESS_LOOK_BYTES)
        if data is None:
            raise FarmError(f"{path}: larger than {size_text(MAX_HARNESS_LOOK_BYTES)}: not read")
        return HarnessLook.model_validate_json(data)
    except OSError as exc:
        raise FarmError(f"{path}: {exc.strerror or exc}") from None
    except ValidationError as exc:
        raise FarmError(f"{path}: not a harness look ({exc.errors()[0]['msg']})") from None


def with_look(evidence: Evidence, look: HarnessLook) -> Evidence:
    """The attempt's evidence completed with the harness's own look (its only fresh looks and after-probes)."""
    if look.error is not None:
        # As the host executor does when its verification fails: the phone, not the agent, failed.
        return evidence.model_copy(update={"end": "error",
                                           "end_reason": f"phone (the harness's look after the run): {look.error}"})
    return evidence.model_copy(update=look_fields(look))


def look_fields(look: HarnessLook) -> dict[str, object]:
    """The evidence fields a harness look fills (every reader of a look takes exactly these)."""
    return {"fresh_looks": list(look.looks), "probes_after": dict(look.probes_after),
            "app_choices": dict(look.app_choices), "state_before": dict(look.state_before),
            "state_after": dict(look.state_after)}


@dataclass(frozen=True)
class PhoneEvidence:
    """A phone's transcript read as evidence: what the app wrote, without the fields only the harness fills."""

    evidence: Evidence
    """The evidence, harness-only fields empty."""
    ignored: tuple[str, ...] = ()
    """The harness-only keys (camelCase) the app wrote anyway, which were dropped."""
    unread: tuple[str, ...] = ()
    """What the caps kept out of the transcript (`StepRefusals.notes`): one line each, with the counts."""

    def note(self) -> str | None:
        """One line saying what was dropped, for the record's reasons; None when the app wrote none."""
        if not self.ignored:
            return None
        return (f"the app wrote {', '.join(self.ignored)} in final.json; ignored — only the harness looks, probes "
                "and judges")

    def notes(self) -> list[str]:
        """Every note for the record's reasons: what was dropped (`note`), then what the caps kept out."""
        dropped = self.note()
        return [*([dropped] if dropped else []), *self.unread]


@dataclass
class StepRefusals:
    """Lines of one steps.jsonl that a cap kept out (`farm.android.pull_limits`)."""

    too_long: int = 0
    """Lines longer than `MAX_LINE_BYTES`: skipped in bounded reads, never held whole."""
    longest: int = 0
    """Bytes of the longest of them."""
    past_lines: int = 0
    """Lines after the first `MAX_STEP_LINES`: counted, never read."""

    def notes(self, file: str = "steps.jsonl") -> list[str]:
        """One line per cap that refused lines, with the counts; empty when none did."""
        out: list[str] = []
        if self.too_long:
            out.append(f"{file}: {self.too_long} line(s) longer than {size_text(MAX_LINE_BYTES)} not read "
                       f"(the longest {self.longest:,} bytes)")
        if self.past_lines:
            out.append(f"{file}: {self.past_lines:,} line(s) past the first {MAX_STEP_LINES:,} not read")
        return out


def _step_lines(path: Path, refusals: StepRefusals) -> Iterator[tuple[int, bytes]]:
    """(line number, line without its newline) of a steps.jsonl within the caps, streaming: one line of at most
    `MAX_LINE_BYTES` held at a time; the lines a cap refuses are counted in `refusals`. Lines end at b"\\n" only."""
    with path.open("rb") as handle:
        for number, line in enumerate(bounded_lines(handle, MAX_LINE_BYTES), 1):
            if number > MAX_STEP_LINES:
                refusals.past_lines += 1 + count_lines(handle)
                return
            if isinstance(line, TooLong):
                refusals.too_long += 1
                refusals.longest = max(refusals.longest, line.size)
                continue
            yield number, line


def read_steps(path: Path) -> list[StepLine]:
    """Parse steps.jsonl; FarmError naming the line on a bad one, and naming the caps when one refused lines."""
    steps: list[StepLine] = []
    if not path.exists():
        return steps
    refusals = StepRefusals()
    for n, line in _step_lines(path, refusals):
        if not line.strip():
            continue
        try:
            steps.append(StepLine.model_validate_json(line))
        except ValidationError as exc:
            raise FarmError(f"{path}:{n}: not a transcript step ({exc.errors()[0]['msg']})") from None
    if refusals.too_long or refusals.past_lines:
        # Strict like a bad line: a step list with holes is not the transcript.
        raise FarmError("; ".join(refusals.notes(str(path))),
                        hint=f"keep each step under {size_text(MAX_LINE_BYTES)} and a transcript under "
                             f"{MAX_STEP_LINES:,} lines")
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


def load_evidence(run_dir: Path, *, look: HarnessLook | None = None) -> Evidence:
    """The evidence of a phone's transcript directory (`<id>/run/`), with `look` (the harness's own) merged in.

    The fields only the harness fills are never taken from the phone (`read_phone_evidence`); `look` is their only
    source. Without it, screen_has and probe_has checks find no look.
    """
    evidence = read_phone_evidence(run_dir).evidence
    return with_look(evidence, look) if look is not None else evidence


def read_phone_evidence(run_dir: Path) -> PhoneEvidence:
    """The evidence a phone's transcript directory (`<id>/run/`) gives, harness-only fields dropped.

    Uses `final.json`'s evidence when present; otherwise rebuilds what it can from the steps (screen reads) and
    the final answer, as other agents' transcripts carry less. Fresh looks, probes, app choices and judge
    verdicts are the harness's (docs/agent-app.md): whatever the app wrote there is dropped and named in
    `ignored`. FarmError when there is no readable transcript.
    """
    final_path = run_dir / "final.json"
    if not final_path.exists():
        raise FarmError(f"{run_dir}: no final.json", hint="re-scoring needs a transcript (<id>/run/final.json)")
    try:
        data = read_at_most(final_path, MAX_FINAL_JSON_BYTES)
        raw = json.loads(data.decode("utf-8")) if data is not None else None
    except (OSError, ValueError) as exc:
        raise FarmError(f"{final_path}: unreadable ({exc})") from None
    if data is None:
        raise FarmError(f"{run_dir}: final.json larger than {size_text(MAX_FINAL_JSON_BYTES)}: not read",
                        hint="write the attempt's end and evidence in final.json; screens go in steps.jsonl")
    if not isinstance(raw, dict):
        raise FarmError(f"{final_path}: not a JSON object")
    found = read_screen_reads(run_dir / "steps.jsonl")
    reads, unread = found.reads, tuple(found.unread)
    if isinstance(raw.get("evidence"), dict):
        try:
            evidence = Evidence.model_validate(raw["evidence"])
        except ValidationError as exc:
            raise FarmError(f"{final_path}: evidence: {exc.errors()[0]['msg']}") from None
        written = raw["evidence"]
        # Named when the app filled one (either spelling); an empty list or object claims nothing.
        ignored = tuple(camel for name, camel in HARNESS_ONLY.items()
                        if written.get(camel) or written.get(name))
        evidence = evidence.model_copy(update={name: type(getattr(evidence, name))() for name in HARNESS_ONLY})
        if not evidence.screen_reads and reads:
            evidence = evidence.model_copy(update={"screen_reads": reads})
        return PhoneEvidence(_with_packages(evidence), ignored, unread)
    answer = raw.get("answer")
    end = _end_of(raw, answer)
    reason = str(raw.get("reason") or "")
    hand_over = None
    if end == "hand_over":
        # The barrier must be visible on the last screen read; a transcript without screens cannot show it.
        kind = str(raw.get("takeoverKind") or reason or "unknown")
        hand_over = HandOver(step=reads[-1].step if reads else 0, reason=kind, screen=reads[-1].text if reads else "")
    steps = raw.get("steps")
    return PhoneEvidence(_with_packages(Evidence(
        end=end,
        answer=answer if isinstance(answer, str) else None,
        end_reason=reason,
        screen_reads=reads,
        hand_over=hand_over,
        steps=steps if isinstance(steps, int) else len(reads),
    )), unread=unread)


def _with_packages(evidence: Evidence) -> Evidence:
    """Packages used, from the screen reads when the transcript does not list them: where an `{app:…}` look goes
    (the look itself, not this list, decides the check)."""
    if evidence.packages_used:
        return evidence
    used = list(dict.fromkeys(r.package for r in evidence.screen_reads if r.package))
    return evidence.model_copy(update={"packages_used": used}) if used else evidence


@dataclass(frozen=True)
class ScreenReads:
    """The screen texts of a steps.jsonl and what the caps kept out of it."""

    reads: list[ScreenRead] = field(default_factory=list)
    """One per line with screen text, in the file's order."""
    unread: list[str] = field(default_factory=list)
    """`StepRefusals.notes`: one line per cap that refused lines, with the counts; empty when none did."""


def read_screen_reads(path: Path) -> ScreenReads:
    """Screen texts of a steps.jsonl, tolerant of other agents' step formats (lines without text, and lines that
    are not UTF-8 JSON, are skipped), read streaming within the caps (`StepRefusals`)."""
    reads: list[ScreenRead] = []
    if not path.exists():
        return ScreenReads()
    refusals = StepRefusals()
    for n, line in _step_lines(path, refusals):
        try:
            item = json.loads(line.decode("utf-8"))
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
    return ScreenReads(reads, refusals.notes(path.name))


def rescore_run_dir(task: Task, run_dir: Path, *, look: HarnessLook | None = None) -> ScoreResult:
    """Score again from a transcript directory with today's checks (same functions as live scoring).

    The transcript is read as a phone's (`load_evidence`): its fresh looks and after-probes come from `look`
    only."""
    return score(task, load_evidence(run_dir, look=look))
