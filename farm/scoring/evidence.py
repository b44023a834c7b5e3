"""What scoring looks at: the evidence of one attempt, never the agent's word alone."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from farm.camel import CamelModel
from farm.results.record import CheckResult, EndReason, Outcome

# How the attempt ended, as the harness saw it (not yet a verdict).
EndKind = Literal[
    "answer",  # the agent called answer(text)
    "give_up",  # the agent called give_up(reason)
    "hand_over",  # the agent called hand_over(reason) — takeover candidate
    "confirmation",  # the agent called confirm(...) before an irreversible step
    "max_steps",  # step budget exhausted
    "timeout",  # time budget exhausted
    "repeat",  # the same action on the same screen too many times
    "error",  # infrastructure error (phone gone, harness crash); never the agent's fault
    "unknown",  # the transcript does not say (another agent's format): never read as giving up
]


class ScreenRead(CamelModel):
    """One observation of the screen taken during the attempt."""

    step: int
    """Index of the step the read belongs to (0 = before the first action)."""
    text: str
    """Compact text of the window hierarchy (one line per meaningful node)."""
    package: str = ""
    """Foreground package when the screen was read."""
    activity: str = ""
    """Foreground activity when the screen was read."""


class AskEvent(CamelModel):
    """One ask_user call and the reply the harness gave."""

    step: int
    """Step index of the question."""
    question: str
    """What the agent asked."""
    reply: str
    """What it was told (from the task's `answers`, or "I don't know")."""
    matched: str | None = None
    """The `answers` key that matched the question; null when none did."""


class ConfirmationCard(CamelModel):
    """The card an irreversible step produces instead of being performed."""

    action: str = ""
    """What would be done (send, buy, delete…)."""
    target: str = ""
    """To whom / on what."""
    content: str = ""
    """What would be sent or bought."""
    amount: str = ""
    """How much (money, count), when relevant."""


class HandOver(CamelModel):
    """The agent's request that the user take over."""

    step: int
    """Step index of the hand-over."""
    reason: str
    """The barrier the agent reported (login, captcha, …)."""
    screen: str = ""
    """Screen text read right before the hand-over (where the barrier must be visible)."""


class FreshLook(CamelModel):
    """What the harness itself saw when it reopened an app after the attempt (screen_has)."""

    package: str
    """Package the harness opened."""
    text: str = ""
    """Compact screen text (all pages the harness scrolled through), empty when it could not open it."""
    error: str | None = None
    """Why the look failed (app missing, phone gone); null when it worked."""


class JudgeEvidence(CamelModel):
    """One LLM judge's verdict on the attempt, as the lane's judge adapter recorded it (the judge's model I/O
    happens there; scoring only reads the verdict)."""

    mode: Literal["reference", "evidence"]
    """Which judge: `reference` compares the answer with a reference answer, `evidence` reads what the agent saw."""
    passed: bool | None = None
    """The verdict; null when the judge gave no valid verdict (`judge_error` says why)."""
    reason: str | None = None
    """The judge's reason for its verdict."""
    judge_error: str | None = None
    """API, truncation or format error that left the attempt without a verdict."""


class ProbeReading(CamelModel):
    """One catalogue probe read by the harness: its parsed value, or why there is none."""

    value: str | None = None
    """The parsed value (a rows probe: its rows as canonical JSON); null when refused or unreadable."""
    refused: str | None = None
    """The phone's refusal (permission, missing provider), first line; a check on it reaches no verdict."""
    error: str | None = None
    """Why it could not be read or parsed (connection, output of an unexpected shape)."""


class AttemptEvidence(CamelModel):
    """What the attempt itself left behind: what an agent (the on-device app too) may write. The harness's own
    observations are `Evidence`'s further fields, never taken from an agent."""

    end: EndKind
    """How the attempt ended."""
    answer: str | None = None
    """Final answer text (answer tool), if any."""
    end_reason: str = ""
    """give_up / hand_over reason, budget or error message."""
    screen_reads: list[ScreenRead] = Field(default_factory=list)
    """Every screen read, in order."""
    asks: list[AskEvent] = Field(default_factory=list)
    """ask_user events, with the reply given from the task's `answers`."""
    confirmations: list[ConfirmationCard] = Field(default_factory=list)
    """Confirmation cards produced instead of an irreversible step (normally at most one, which ends the task)."""
    hand_over: HandOver | None = None
    """The hand-over, when the attempt ended with one (the barrier must be visible on its `screen`)."""
    packages_used: list[str] = Field(default_factory=list)
    """Foreground packages seen during the attempt, in first-seen order."""
    steps: int = 0
    """Actions taken."""
    step_errors: int = 0
    """Malformed or failed tool calls."""


class Evidence(AttemptEvidence):
    """Everything one attempt left behind that checks may use: the attempt's own evidence and what the harness
    observed itself."""

    fresh_looks: list[FreshLook] = Field(default_factory=list)
    """The harness's own looks at apps after the attempt."""
    probes: dict[str, str] = Field(default_factory=dict)
    """Probe values read before the task (`name` or `name:param` → value)."""
    probes_after: dict[str, str] = Field(default_factory=dict)
    """Probe outputs read by the harness after the task (probe_has checks)."""
    state_before: dict[str, ProbeReading] = Field(default_factory=dict)
    """Probes of the task's state checks and goalState, read by the harness just before the agent started."""
    state_after: dict[str, ProbeReading] = Field(default_factory=dict)
    """Probes of the task's state checks and probesAfter, read by the harness after the attempt."""
    app_choices: dict[str, str] = Field(default_factory=dict)
    """Package resolved for an `{app:…}` before the run → the handler of that capability the agent actually
    opened, which the harness looked at instead (seed 003: after the run, prefer the app the agent used)."""
    judge_verdicts: list[JudgeEvidence] = Field(default_factory=list)
    """Verdicts of LLM judges on this attempt, gathered by the lane's judge adapter after the attempt."""


class ScoreResult(BaseModel):
    """The verdict on one attempt."""

    model_config = ConfigDict(extra="forbid")

    outcome: Outcome
    """succeeded / failed / confirmation / takeover / error (skipped is decided before running)."""
    passed: bool
    """Outcome equals the task's expectation and every check passed."""
    checks: list[CheckResult] = Field(default_factory=list)
    """Per-check verdicts."""
    reasons: list[str] = Field(default_factory=list)
    """Why it did not pass (or the infrastructure error), in words."""
    failure_category: str | None = None
    """perception, route, barrier, app_state, clarification, infrastructure, unjudged (a check reached no verdict);
    null when passed."""
    takeover_kind: str | None = None
    """For an accepted takeover: the barrier (login, captcha, payment)."""
    end_reason: EndReason | None = None
    """Why the attempt ended (answer, give_up, confirm, takeover, max_steps, timeout, repeat, error)."""
