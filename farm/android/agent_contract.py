"""The agent-app contract (docs/agent-app.md, contract version 1) as pydantic models, and their JSON Schemas.

The agent app is not ours: it reads the bundle the harness pushes and writes the `eval/<run>/` tree the harness
pulls. Each file has one model here, matching what the harness reads (`farm.results.device_line`,
`farm.scoring.transcript`, `farm.view.trajectory`), with the values the harness understands as `Literal`s. The
reading side stays lenient (it keeps unknown keys, takes unknown words as errors); these models are what an app
should write, so `farm agent check` and the shipped schemas (`farm.android.agent_schemas`) hold an app to them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, RootModel, field_validator
from pydantic.alias_generators import to_camel

from farm.camel import CamelModel
from farm.results.device_line import DeviceMetrics
from farm.results.record import (
    CostUsd,
    Count,
    EndReason,
    Execution,
    Expect,
    Millis,
    Ordinal,
    Outcome,
    Partition,
    TokenCount,
)
from farm.scoring.evidence import AttemptEvidence
from farm.taskset.model import Task

CONTRACT_VERSION: Literal[1] = 1
"""Version of the contract in docs/agent-app.md; it goes up whenever a file or an argument changes meaning."""
SCREENSHOT_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.([Pp][Nn][Gg]|[Jj][Pp][Ee]?[Gg]|[Ww][Ee][Bb][Pp]|[Gg][Ii][Ff])$"
"""A screenshot file name the viewer shows: one plain component next to steps.jsonl, with an image suffix."""


class _AppFile(BaseModel):
    """A file the app writes: camelCase keys; keys the harness does not know are allowed (and ignored or kept)."""

    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True)


class BundleTask(Task):
    """One task of the bundle: the task file's object with every placeholder the harness could fill filled
    (`{run}` in `marker` included), plus `directory`."""

    directory: str
    """The task file's directory under tasks/ (`read/system`); what `evalSet` selects by."""

    @field_validator("marker")
    @classmethod
    def _marker_has_run(cls, value: str | None) -> str | None:
        # Overrides Task's rule: in the bundle `{run}` is already filled, so a marker no longer holds it.
        return value


class Bundle(CamelModel):
    """The task bundle the harness pushes before `am instrument` (`-e evalTasks <path>`), bundleVersion 1."""

    bundle_version: Literal[1]
    """Layout version of this file."""
    run: str
    """The `evalRun` the bundle was pushed for."""
    tasks: list[BundleTask]
    """The tasks to run, resolved for this phone; tasks the harness skipped are not in it."""


class ScoreCheck(_AppFile):
    """One check verdict as the app judged it (kept beside the host's own, never trusted)."""

    type: str
    """The check's `type` from the task (`answer_regex`, `screen_has`…)."""
    passed: bool | None = False
    """The app's verdict; null when it reached none."""
    detail: str = ""
    """Why, in words."""


class ScoreTokens(_AppFile):
    """Token usage of the whole attempt; a count is null when unknown (never 0 for unknown)."""

    input: TokenCount | None = None
    """Input tokens not served from a prompt cache."""
    cache_read: TokenCount | None = None
    """Input tokens read from a prompt cache."""
    cache_write: TokenCount | None = None
    """Input tokens written to a prompt cache."""
    output: TokenCount | None = None
    """Output tokens (reasoning included)."""


class ScoreLine(_AppFile):
    """One line of `scores.jsonl`: one task attempt as the app saw it. Only `id` and `outcome` are required; the
    host re-scores the attempt from `<id>/run/`, and keeps the app's `outcome`/`passed` as its `device_verdict`."""

    id: str = Field(min_length=1, max_length=200)
    """The task id, as in the bundle (also the name of the task's `<id>/run/` directory)."""
    category: str = ""
    """The task's directory (`read/system`); the harness prefers its own."""
    partition: Partition | None = None
    """`tune` or `holdout`, from the bundle; the record's pool (reports split on it)."""
    expect: Expect | None = None
    """The task's `expect`, from the bundle."""
    outcome: Outcome
    """What happened in the app's view; `skipped` (not run, say why in `reason`), `error` (the app's own failure)."""
    passed: bool = False
    """The app's own verdict (kept as `device_verdict`)."""
    checks: list[ScoreCheck] = Field(default_factory=list)
    """The app's per-check verdicts."""
    answer: str | None = None
    """The final answer, whole."""
    reason: str | None = None
    """Why it was skipped or failed, in words."""
    failure_category: str | None = None
    """perception, route, barrier, app_state, clarification… (the app's view)."""
    takeover_kind: str | None = None
    """The barrier of a takeover: login, captcha, payment."""
    end_reason: EndReason | None = None
    """Why the attempt ended (the record's vocabulary)."""
    steps: Count | None = None
    """Actions taken."""
    tokens: ScoreTokens = Field(default_factory=ScoreTokens)
    """Token usage of the attempt."""
    cost_usd: CostUsd | None = None
    """Cost in USD from the `evalPrice*` extras; null when unknown (no prices given)."""
    metrics: DeviceMetrics = Field(default_factory=DeviceMetrics)
    """运行小结 of the attempt (milliseconds; the report's 运行小结 is built from these)."""
    markers: list[str] = Field(default_factory=list)
    """Markers of the data the attempt created (the task's resolved `marker`), for the clean-up list."""
    execution: Execution | None = None
    """`live` for a real agent; `simulated` only for the virtual phone's agent."""
    started_at: str | None = None
    """ISO-8601 UTC start (`2026-12-01T03:00:00.000Z`)."""
    ended_at: str | None = None
    """ISO-8601 UTC end."""
    app_package: str | None = None
    """The package the agent actually used (kept in the record's `extra`)."""


class MetricsFile(RootModel[dict[str, DeviceMetrics]]):
    """`metrics.json`: task id → the 运行小结 of its attempt (the same object as the scores line's `metrics`)."""


class StepObservation(_AppFile):
    """What the agent read before the step."""

    text: str | None = None
    """The screen as text (see docs/agent-app.md: `[ref] Class "text" desc="…" (id) flags` lines, or plain lines);
    scoring reads it (answer_grounded, takeovers, re-judgement evidence) and the viewer shows it."""
    screenshot: str | None = None
    """File name of the screen's PNG/JPEG next to steps.jsonl (`shot-<sha256 prefix>.png`), or a short note saying
    why none was kept (`screenshot omitted: cap`)."""
    package: str = ""
    """Foreground package."""
    activity: str = ""
    """Foreground activity."""
    digest: str | None = None
    """A hash of `text` (equal digests = the same screen)."""
    chars: Count | None = None
    """Length of the screen text when `text` is not recorded (the viewer says how much is missing)."""


class StepAction(_AppFile):
    """The tool call of the step."""

    tool: str = Field(min_length=1)
    """Tool name (`tap`, `type`, `swipe`, `launch`, `ask_user`, `answer`, `give_up`, `hand_over`, `confirm`…)."""
    args: dict[str, JsonValue] = Field(default_factory=dict)
    """The call's arguments as parsed (`{"ref": 12}`, `{"x": 540, "y": 1200}`, `{"text": "…"}`)."""
    raw: str | None = None
    """The argument text as the model wrote it, when it did not parse."""
    message: str | None = None
    """Free text the model wrote with the call."""


class StepResult(_AppFile):
    """What performing the action gave."""

    ok: bool
    """Whether the action was performed."""
    text: str = ""
    """What the agent was told (the reply to `ask_user` included)."""
    error: str | None = None
    """The step's error (malformed call, failed action)."""


class StepTimings(_AppFile):
    """Where the step's time went (milliseconds)."""

    screen_read_ms: Millis | None = None
    """Reading the screen (hierarchy, screenshot)."""
    model_ms: Millis | None = None
    """Waiting on the model."""
    action_ms: Millis | None = None
    """Performing the action."""
    other_ms: Millis | None = None
    """Everything else."""


class AgentStep(_AppFile):
    """One line of `<id>/run/steps.jsonl`, written as the step ends (a crash keeps the steps before it)."""

    step: Ordinal
    """Step number from 1."""
    at_ms: Millis | None = None
    """Milliseconds since the task started when the step began."""
    at: str | None = None
    """ISO-8601 UTC time the step began (shown when `atMs` is absent)."""
    observation: StepObservation
    """The screen before the action."""
    action: StepAction | None = None
    """The tool call; null when the model produced none."""
    result: StepResult | None = None
    """Its result."""
    timings: StepTimings | None = None
    """Where the step's time went."""
    tokens: ScoreTokens | None = None
    """Tokens of the model call behind this step (same keys as the scores line)."""


class AppEvidence(AttemptEvidence):
    """What the attempt left that checks use, as the app may write it: `farm.scoring.evidence.Evidence` without
    the fields only the harness fills (fresh looks, probes, app choices, judge verdicts)."""


class AgentFinal(_AppFile):
    """`<id>/run/final.json`, written once when the attempt ends: what the host re-scores from."""

    evidence: AppEvidence | None = None
    """The full evidence (needed for `asked_user` and `confirmation_shows`); without it the host rebuilds the end,
    the answer and the screen reads from the keys below and steps.jsonl."""
    answer: str | None = None
    """The final answer."""
    end_reason: EndReason | None = None
    """Why the attempt ended (the record's vocabulary); without it the end is read from `answer` and `outcome`."""
    reason: str | None = None
    """The give-up or hand-over reason, or why it failed."""
    takeover_kind: str | None = None
    """The barrier of a hand-over (login, captcha, payment)."""
    outcome: Outcome | None = None
    """The app's outcome (shown, never trusted)."""
    passed: bool | None = None
    """The app's verdict (shown, never trusted)."""
    steps: Count | None = None
    """Actions taken."""
