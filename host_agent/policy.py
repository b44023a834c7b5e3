"""What a phone policy is told: the task, the apps, the first screen.

Phone policies (`host_agent.model_policy.ModelPolicy`, `host_agent.scripted.ScriptedPolicy`) implement the one
policy protocol, `farm.llm.loop.Policy[PhoneBrief]`, and are driven by `farm.llm.loop.run_tool_loop`
(see `host_agent.loop.run_attempt`). Besides the protocol they carry `wants_screenshots`: whether the lane's
screen reads attach a JPEG for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from farm.taskset.model import Task
from host_agent.observation import Observation


class PolicyUnavailable(Exception):
    """The policy cannot drive this task at all (no script, no model): a harness problem, not the agent's."""


@dataclass(frozen=True)
class TaskContext:
    """What a policy knows about the task it is driving."""

    task: Task
    """The resolved task (placeholders filled)."""
    apps: Mapping[str, str] = field(default_factory=dict)
    """Capability → package on this phone."""


@dataclass(frozen=True)
class PhoneBrief:
    """The brief a phone policy begins with: the task, and the screen read before its first step."""

    ctx: TaskContext
    """The task and the phone's apps."""
    screen: Observation
    """The first screen (later screens come with each call's result, `host_agent.session.PhoneResult`)."""
