"""The web lane's JSONL: one `WebRun` line per run, appended as soon as the run ends."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from farm.camel import CamelModel
from farm.errors import FarmError

TurnStatus = Literal["completed", "timeout", "max_steps", "error"]
PolicyName = Literal["model", "scripted"]


class Timings(CamelModel):
    """Where the time of a run went, in milliseconds; null when not measured."""

    completion_ms: float
    """Prompt sent → turn end (the report's main metric)."""
    state_reached_ms: float | None = None
    """Prompt sent → the state API first showed the goal state (50 ms polling); null for read tasks
    and runs that never reached it."""
    ttft_ms: float | None = None
    """Prompt sent → first non-empty model output (the first model reply; replies are not streamed);
    null without a model."""
    tool_wall_ms: float = 0.0
    """Sum of tool call → tool result times."""


class TokenCounts(CamelModel):
    """Tokens summed over every model step of the turn; null when no step reported them."""

    new_input: int | None = None
    """Input tokens not served from a prompt cache."""
    cache_read: int | None = None
    """Input tokens read from a prompt cache."""
    cache_write: int | None = None
    """Input tokens written to a prompt cache."""
    output: int | None = None
    """Output tokens."""

    def prompt(self) -> int | None:
        """Prompt tokens = new input + cache read + cache write (null when none is known)."""
        parts = [p for p in (self.new_input, self.cache_read, self.cache_write) if p is not None]
        return sum(parts) if parts else None


class EventRun(CamelModel):
    """A run of consecutive events of one type."""

    type: str
    """Event type, e.g. `tool/call`."""
    count: int = Field(ge=1)
    """How many in a row."""


class Diagnostics(CamelModel):
    """What happened during the turn, for finding out why a run failed."""

    event_type_runs: list[EventRun] = Field(default_factory=list)
    """Lossless run-length encoding of the event sequence (expand `{type, count}` to restore it)."""
    tool_calls: int = 0
    """Tool calls made."""
    model_calls: int = 0
    """Model requests made."""
    disallowed_tools: list[str] = Field(default_factory=list)
    """Names of non-`browser_*` tools the model called (any makes the run fail)."""
    tool_errors: int = 0
    """Tool calls that returned an error."""


class Validation(CamelModel):
    """The validator's decision (from the state API and the answer)."""

    passed: bool
    """State and answer both satisfied the task."""
    state_ok: bool
    """Server state satisfied the task."""
    answer_ok: bool
    """The answer contained what it must."""
    detail: str
    """What was checked and found."""


class WebRun(CamelModel):
    """One run: one task instance on one backend."""

    benchmark_suite_version: int
    """Task suite version (`web_bench.site.SUITE_VERSION`) the run used."""
    run_id: str
    """Run id (`runs/<id>/`)."""
    task: str
    """Task name."""
    seed: int
    """Data seed."""
    trial: int
    """Trial number (1-based) of the (task, seed) pair."""
    pair_id: str
    """`task:seed:trial`, shared by the runs of one pair."""
    backend: str
    """Browser backend (`playwright` or `android-chrome`)."""
    order_in_pair: int = Field(ge=1)
    """1 when this backend ran first in its pair."""
    first_backend: str
    """The backend that ran first in this pair."""
    device: str | None = None
    """Phone serial for android-chrome."""
    simulated_device: bool = False
    """The phone was a virtual phone (its Chrome a local Chromium): not a real-device result."""
    policy: PolicyName
    """Who chose the tool calls."""
    provider: str | None = None
    """Model provider (model policy)."""
    model: str | None = None
    """Model name (model policy)."""
    reasoning_effort: str | None = None
    """Reasoning effort sent (model policy)."""
    success: bool
    """Validator passed, answer given when needed, only browser tools used, turn completed."""
    status: TurnStatus
    """How the turn ended."""
    error: str | None = None
    """One-line error, when the turn or the infrastructure failed."""
    infrastructure_error: bool = False
    """The run failed before the agent could act (site, browser or phone problem)."""
    answer: str | None = None
    """The final answer text."""
    validation: Validation
    """Validator output."""
    timeout_ms: int
    """The run's time limit (a failure counts 2 × this in the failure-penalty metric)."""
    timings: Timings
    """Timings."""
    tokens: TokenCounts = Field(default_factory=TokenCounts)
    """Token usage."""
    cost_usd: float | None = None
    """Cost, null when unknown."""
    diagnostics: Diagnostics = Field(default_factory=Diagnostics)
    """Event summary."""
    started_at: str
    """ISO-8601 UTC start."""
    ended_at: str
    """ISO-8601 UTC end."""


def run_length(events: Iterable[str]) -> list[EventRun]:
    """Lossless run-length encoding of an event-type sequence."""
    runs: list[EventRun] = []
    for event in events:
        if runs and runs[-1].type == event:
            runs[-1].count += 1
        else:
            runs.append(EventRun(type=event, count=1))
    return runs


def expand(runs: Iterable[EventRun]) -> list[str]:
    """The event sequence back from its run-length encoding."""
    return [r.type for r in runs for _ in range(r.count)]


def append_run(path: Path, run: WebRun) -> None:
    """Append one line and flush it to disk (a crash loses at most the run in flight)."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(run.model_dump_json(by_alias=True) + "\n")
        handle.flush()


def read_runs(path: Path) -> list[WebRun]:
    """Every line of a results file; FarmError naming the line on a bad one."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise FarmError(f"{path}: no such results file", hint="pass the JSONL written by `farm web run`") from None
    runs = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            runs.append(WebRun.model_validate_json(line))
        except ValidationError as exc:
            err = exc.errors(include_input=False, include_url=False)[0]
            where = ".".join(str(p) for p in err["loc"]) or "line"
            if where == "benchmarkSuiteVersion" and err["type"] == "missing":
                raise FarmError(f"{path}:{number}: no benchmarkSuiteVersion",
                                hint="results from before suite versioning are not comparable; "
                                     "report them separately") from None
            raise FarmError(f"{path}:{number}: {where}: {err['msg']}",
                            hint="is this a `farm web run` results file?") from None
    return runs
