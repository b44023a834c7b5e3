"""The one record schema every lane writes: one JSON line per task attempt."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

RECORD_SCHEMA_VERSION: Literal[1] = 1

Outcome = Literal["succeeded", "failed", "confirmation", "takeover", "skipped", "error"]
Expect = Literal["succeeded", "confirmation", "failed", "takeover"]
Execution = Literal["live", "controlled", "simulated"]
Lane = Literal["android", "web", "webvoyager", "desktop"]
Executor = Literal["instrument", "host"]
Partition = Literal["tune", "holdout"]
# Infrastructure errors are kept apart from agent failures but stay in the denominator.
FailureKind = Literal["agent", "infrastructure"]
# Why an attempt ended — kept apart from the outcome, so running out of budget is never read as
# "the agent declared the task impossible".
EndReason = Literal["answer", "give_up", "confirm", "takeover", "max_steps", "timeout", "repeat", "error"]


class CheckResult(BaseModel):
    """The verdict of one check of a task on one attempt."""

    model_config = ConfigDict(extra="forbid")

    type: str
    """Check type, e.g. `answer_regex`, `screen_has`."""
    passed: bool
    """Whether the evidence satisfied the check."""
    detail: str = ""
    """Why: what was looked for and what the evidence showed."""


class Tokens(BaseModel):
    """Token usage of an attempt, split the way providers bill it; null when unknown."""

    model_config = ConfigDict(extra="forbid")

    input_new: int | None = None
    """Input tokens not served from a prompt cache."""
    cache_read: int | None = None
    """Input tokens read from a prompt cache."""
    cache_write: int | None = None
    """Input tokens written to a prompt cache."""
    output: int | None = None
    """Output tokens (including reasoning)."""


class RunMetrics(BaseModel):
    """Seed 003's 运行小结 for one attempt: where the time went. Milliseconds; null when unknown."""

    model_config = ConfigDict(extra="forbid")

    first_feedback_ms: float | None = None
    """Time from the start of the task to the agent's first visible feedback."""
    round_trips: int | None = None
    """Model round trips (requests) made during the task."""
    model_ms: float | None = None
    """Time spent waiting on the model."""
    screen_read_ms: float | None = None
    """Time spent reading the screen (hierarchy dumps, screenshots)."""
    action_ms: float | None = None
    """Time spent performing actions on the device."""
    other_ms: float | None = None
    """Everything else (harness, waits)."""
    total_ms: float | None = None
    """Wall time of the attempt."""


class DeviceVerdict(BaseModel):
    """What the phone's own scorer said about an attempt (kept beside the host's verdict, never trusted)."""

    model_config = ConfigDict(extra="forbid")

    outcome: str
    """Outcome the phone reported (as written, even when it is not a known outcome)."""
    passed: bool
    """Verdict the phone reported."""
    failure_category: str | None = None
    """Failure category the phone reported."""


class Record(BaseModel):
    """One task attempt on one device (or browser/desktop) in one run."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = RECORD_SCHEMA_VERSION
    """Version of this schema; readers refuse versions they do not know."""
    run: str
    """Run id (`runs/<run>/`)."""
    lane: Lane
    """Which lane produced the record."""
    device: str
    """Device serial (android), backend name (web) or machine label (desktop)."""
    task_id: str
    """Task id (the task file's name)."""
    instance: str = ""
    """Task instance within the unit (the web lane's data seed); empty when a task has one instance."""
    repeat: int = 1
    """Repeat index of the unit (1…K with `--repeats K`, the web lane's trial); repeats are distinct units."""
    category: str = ""
    """Task directory/category, e.g. `read/system`."""
    partition: Partition | None = None
    """Pool the task belongs to."""
    expect: Expect | None = None
    """The outcome the task expects."""
    outcome: Outcome
    """What happened; `error` is an infrastructure error, never an agent failure."""
    end_reason: EndReason | None = None
    """Why the attempt ended (answer, give_up, confirm, takeover, max_steps, timeout, repeat, error); null for
    skips and for records that did not say."""
    passed: bool
    """Final verdict before human re-judgement."""
    checks: list[CheckResult] = Field(default_factory=list)
    """Per-check verdicts."""
    answer: str | None = None
    """The agent's final answer, when it gave one."""
    reasons: list[str] = Field(default_factory=list)
    """Skip reason, failure reasons, or the infrastructure error, in words."""
    failure_category: str | None = None
    """perception, route, barrier, app_state, infrastructure… (seed 003)."""
    failure_kind: FailureKind | None = None
    """Whether a non-pass is the agent's fault or the infrastructure's."""
    takeover_kind: str | None = None
    """For takeovers: the barrier reported (login, captcha…)."""
    metrics: RunMetrics = Field(default_factory=RunMetrics)
    """Where the time went."""
    steps: int | None = None
    """Actions taken."""
    tokens: Tokens = Field(default_factory=Tokens)
    """Token usage."""
    cost_usd: float | None = None
    """Cost in USD; null when unknown — never 0 for unknown."""
    attempt: int = 1
    """1 for the first attempt; retries of infrastructure errors count up (same unit, next try)."""
    device_verdict: DeviceVerdict | None = None
    """The phone's own verdict when the host re-scored the attempt (instrument executor); null otherwise."""
    execution: Execution
    """live (real device and model), controlled, or simulated (the virtual phone)."""
    executor: Executor | None = None
    """How an android task was driven."""
    split: str | None = None
    """The split the run selected (tune/holdout/all)."""
    started_at: str | None = None
    """ISO-8601 UTC start."""
    ended_at: str | None = None
    """ISO-8601 UTC end."""
    source: str | None = None
    """Provenance: the file (and line) this record was normalised from."""
    evidence: str | None = None
    """This attempt's run record (`<id>/run/`: transcript, screens, final answer), relative to the run directory;
    what re-judgement may quote. The lane that wrote the record says where it is; results never guess."""
    markers: list[str] = Field(default_factory=list)
    """Markers the task created on the device (for the clean-up list)."""
    extra: dict[str, JsonValue] = Field(default_factory=dict)
    """Fields the device reported that this schema does not model; kept, not dropped."""

    def unit_key(self) -> tuple[str, str, str, str, str, int]:
        """The unit this attempt belongs to: (run, lane, device or backend, task, instance, repeat)."""
        return (self.run, self.lane, self.device, self.task_id, self.instance, self.repeat)

    def attempt_key(self) -> tuple[str, str, str, str, str, int, int]:
        """The unit plus the attempt number: two records with the same key are one attempt written twice."""
        return (*self.unit_key(), self.attempt)
