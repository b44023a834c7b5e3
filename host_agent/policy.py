"""What drives the agent: a policy turns the current screen into the next tool call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from farm.results.record import Tokens
from farm.taskset.model import Task
from host_agent.observation import Observation


class PolicyUnavailable(Exception):
    """The policy cannot drive this task at all (no script, no model): a harness problem, not the agent's."""


class ModelUnavailable(PolicyUnavailable):
    """The model could not be reached after retries: an infrastructure error, not the agent's choice."""


@dataclass(frozen=True)
class TaskContext:
    """What a policy knows about the task it is driving."""

    task: Task
    """The resolved task (placeholders filled)."""
    apps: Mapping[str, str] = field(default_factory=dict)
    """Capability → package on this phone."""


@dataclass
class Decision:
    """The policy's next move: one tool call (maybe malformed), plus what producing it cost."""

    tool: str
    """Tool name as the policy gave it."""
    arguments: str
    """Arguments as the policy gave them (JSON text; may be malformed)."""
    text: str | None = None
    """Free text the model wrote along with the call."""
    error: str | None = None
    """Set when the policy produced no usable call at all (e.g. the model wrote text only)."""
    tokens: Tokens | None = None
    """Token usage of the model call behind this decision."""
    cost_usd: float | None = None
    """Cost of that call; null when unknown."""
    model_ms: float = 0.0
    """Time spent waiting for the decision."""
    round_trips: int = 0
    """Model requests made for it (0 for scripts)."""


class Policy(Protocol):
    """A model or a script."""

    name: str
    """`model` or `scripted`."""
    wants_screenshots: bool
    """Whether observations should carry a JPEG."""

    def begin(self, ctx: TaskContext) -> None:
        """Start a new task (fresh conversation or script)."""

    def decide(self, obs: Observation, feedback: str | None) -> Decision:
        """The next call, given the screen and what the previous call did (None before the first)."""
        ...
