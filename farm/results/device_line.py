"""One `scores.jsonl` line in the on-device layout (camelCase), read by the lane, written by the host executor.

The agent app owns this format, so the reading side keeps unknown keys (`model_extra`) and takes
any string for enumerations; normalisation decides what they mean. The host executor writes the
same models, so both executors produce byte-compatible eval trees.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from farm.results.record import RunMetrics


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, alias_generator=to_camel)


class DeviceCheck(_Loose):
    """One check verdict as the app writes it."""

    type: str = "unknown"
    """Check type."""
    passed: bool | None = False
    """Verdict; null when the check reached no verdict (never read as passed)."""
    detail: str = ""
    """Why."""


class DeviceTokens(_Loose):
    """Token usage as the app writes it (`input` = input tokens not served from a cache)."""

    input: int | None = None
    """New input tokens."""
    cache_read: int | None = None
    """Cache-read input tokens."""
    cache_write: int | None = None
    """Cache-write input tokens."""
    output: int | None = None
    """Output tokens."""


class DeviceMetrics(RunMetrics):
    """运行小结 of one task as the app writes it: the record's fields, in camelCase, unknown keys kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, alias_generator=to_camel)

    @classmethod
    def of(cls, metrics: RunMetrics) -> DeviceMetrics:
        """From the record's metrics model."""
        return cls.model_validate(metrics.model_dump())


class DeviceScore(_Loose):
    """One `scores.jsonl` line."""

    id: str
    """Task id."""
    category: str = ""
    """Category (task directory) as the app knows it."""
    partition: str | None = None
    """tune / holdout."""
    expect: str | None = None
    """Expected outcome."""
    outcome: str
    """What happened (succeeded, failed, confirmation, takeover, skipped, error — or anything else)."""
    passed: bool = False
    """Initial verdict."""
    checks: list[DeviceCheck] = Field(default_factory=list)
    """Check verdicts."""
    answer: str | None = None
    """Final answer."""
    reason: str | None = None
    """Why (skip, failure), reasons joined."""
    failure_category: str | None = None
    """Failure category."""
    takeover_kind: str | None = None
    """Barrier at a takeover."""
    end_reason: str | None = None
    """Why the attempt ended (answer, give_up, confirm, takeover, max_steps, timeout, repeat, error)."""
    steps: int | None = None
    """Actions taken."""
    tokens: DeviceTokens = Field(default_factory=DeviceTokens)
    """Token usage."""
    cost_usd: float | None = None
    """Cost in USD; null when unknown."""
    metrics: DeviceMetrics = Field(default_factory=DeviceMetrics)
    """Where the time went."""
    markers: list[str] = Field(default_factory=list)
    """Markers the task created."""
    execution: str | None = None
    """live / controlled / simulated."""
    started_at: str | None = None
    """ISO-8601 start."""
    ended_at: str | None = None
    """ISO-8601 end."""


class WrittenScore(DeviceScore):
    """A line the harness itself writes: same fields, but a misspelt field is an error, not an extra."""

    model_config = ConfigDict(extra="forbid")

    app_package: str | None = None
    """Package the agent actually used (for `{app:…}` resolution after the run)."""
