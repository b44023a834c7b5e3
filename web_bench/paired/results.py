"""The web lane's JSONL: one `WebRun` line per run, appended as soon as the run ends.

Nothing a results file says is trusted: every field has its exact JSON type (no `"yes"` for a bool, no
`"1"` for a number), every number its range (the same bounds as the farm `Record`, so an accepted line
always becomes a record), and a line that breaks any of it is rejected by number while the others are kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    WrapSerializer,
    model_validator,
)
from pydantic_core import ErrorDetails

from farm.camel import CamelModel
from farm.errors import FarmError
from farm.results.record import CAMEL_KEYS, CostUsd, Count, Millis, Ordinal, Tokens

TurnStatus = Literal["completed", "timeout", "max_steps", "error"]
PolicyName = Literal["model", "scripted"]

MAX_SEED = 1_000_000
"""Largest data seed (`--seeds`)."""
MAX_TIMEOUT_MS = 86_400_000
"""Longest time limit of one run: a day. Far above any real run; a failure counts twice this in the
failure-penalty metric, so it also keeps that sum finite."""

RunIdentity = tuple[str, str, str, int, int]
"""(run id, backend, task, seed, trial): which run a line is."""


class _Strict(CamelModel):
    """A results-file model: JSON types exact, nothing coerced (a string is never read as a bool or number)."""

    model_config = ConfigDict(strict=True)


class Timings(_Strict):
    """Where the time of a run went, in milliseconds (finite, 0…MAX_MS); null when not measured."""

    completion_ms: Millis
    """Prompt sent → turn end (the report's main metric)."""
    state_reached_ms: Millis | None = None
    """Prompt sent → the state API first showed the goal state (50 ms polling); null for read tasks
    and runs that never reached it."""
    ttft_ms: Millis | None = None
    """Prompt sent → first non-empty model output (the first model reply; replies are not streamed);
    null without a model."""
    tool_wall_ms: Millis = 0.0
    """Sum of tool call → tool result times."""


def _camel_keys(tokens: Tokens, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> object:
    data = handler(tokens)
    # Seed 001's keys (`newInput`…) when the file's own keys are camelCase; the field names otherwise.
    return {CAMEL_KEYS[k]: v for k, v in data.items()} if info.by_alias and isinstance(data, dict) else data


def _bounded(tokens: Tokens) -> Tokens:
    return tokens.check_counts(camel=True)


CamelTokens = Annotated[Tokens, WrapSerializer(_camel_keys)]
"""Token usage written with seed 001's camelCase keys in web results and the web report's JSON."""
RunTokens = Annotated[CamelTokens, AfterValidator(_bounded)]
"""A run's token usage summed over every model step of its turn: each count 0…MAX_TOKENS (the `Record`'s bound),
null when unknown (no model step, or a step that did not report it)."""


class EventRun(_Strict):
    """A run of consecutive events of one type."""

    type: str
    """Event type, e.g. `tool/call`."""
    count: Ordinal
    """How many in a row (1…MAX_COUNT)."""


class Diagnostics(_Strict):
    """What happened during the turn, for finding out why a run failed. Counts are 0…MAX_COUNT."""

    event_type_runs: list[EventRun] = Field(default_factory=list)
    """Lossless run-length encoding of the event sequence (expand `{type, count}` to restore it)."""
    tool_calls: Count = 0
    """Tool calls made."""
    model_calls: Count = 0
    """Model requests made."""
    disallowed_tools: list[str] = Field(default_factory=list)
    """Names of non-`browser_*` tools the model called (any makes the run fail)."""
    tool_errors: Count = 0
    """Tool calls that returned an error."""


class Validation(_Strict):
    """The validator's decision (from the state API and the answer)."""

    passed: bool
    """State and answer both satisfied the task."""
    state_ok: bool
    """Server state satisfied the task."""
    answer_ok: bool
    """The answer contained what it must."""
    detail: str
    """What was checked and found."""


class WebRun(_Strict):
    """One run: one task instance on one backend. A line that contradicts itself (success without a passed,
    completed turn; a pair id that is not its task, seed and trial; a run order that disagrees with the
    first backend) is refused like a malformed one."""

    benchmark_suite_version: int = Field(ge=1)
    """Task suite version (`web_bench.paired.site.SUITE_VERSION`) the run used."""
    run_id: str
    """Run id (`runs/<id>/`)."""
    task: str
    """Task name."""
    seed: int = Field(ge=0, le=MAX_SEED)
    """Data seed (0…MAX_SEED)."""
    trial: Ordinal
    """Trial number (1-based) of the (task, seed) pair."""
    pair_id: str
    """`task:seed:trial`, shared by the runs of one pair."""
    backend: str
    """Browser backend (`playwright` or `android-chrome`)."""
    order_in_pair: Ordinal
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
    timeout_ms: int = Field(ge=1, le=MAX_TIMEOUT_MS)
    """The run's time limit, 1…MAX_TIMEOUT_MS (a failure counts 2 × this in the failure-penalty metric)."""
    timings: Timings
    """Timings."""
    tokens: RunTokens = Field(default_factory=Tokens)
    """Token usage (keys `newInput`, `cacheRead`, `cacheWrite`, `output`)."""
    cost_usd: CostUsd | None = None
    """Cost (finite, 0…MAX_COST_USD), null when unknown."""
    diagnostics: Diagnostics = Field(default_factory=Diagnostics)
    """Event summary."""
    started_at: str
    """ISO-8601 UTC start."""
    ended_at: str
    """ISO-8601 UTC end."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        expected_pair = f"{self.task}:{self.seed}:{self.trial}"
        if self.pair_id != expected_pair:
            raise ValueError(f"pairId {self.pair_id!r} is not task:seed:trial ({expected_pair!r})")
        if (self.order_in_pair == 1) != (self.first_backend == self.backend):
            raise ValueError(f"orderInPair {self.order_in_pair} disagrees with firstBackend {self.first_backend!r}")
        if self.success:
            # The report's success rate is the headline number: a line may not claim what its own fields deny.
            denied = [why for why, bad in (
                (f"status is {self.status}", self.status != "completed"),
                ("validation did not pass", not self.validation.passed),
                ("infrastructureError is set", self.infrastructure_error),
                ("a forbidden tool was used", bool(self.diagnostics.disallowed_tools)),
            ) if bad]
            if denied:
                raise ValueError(f"success is true but {'; '.join(denied)}")
        return self

    def identity(self) -> RunIdentity:
        """Which run this line is: (run id, backend, task, seed, trial) — its `Record`'s unit (run, device,
        task, instance, repeat). Two lines with one identity are the same run written twice."""
        return (self.run_id, self.backend, self.task, self.seed, self.trial)


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


@dataclass
class ResultLines:
    """The readable lines of a results file and the ones refused."""

    runs: list[WebRun] = field(default_factory=list)
    """Every accepted line, in file order (duplicates included: the report counts each run once)."""
    line_numbers: list[int] = field(default_factory=list)
    """The line each of `runs` came from."""
    rejected: list[str] = field(default_factory=list)
    """One `file:line: why` per refused line."""


_NOT_RESULTS = "is this a `farm web run` results file?"


def _open_results(path: Path) -> None:
    # Checked before opening: a directory or a FIFO would raise or block on read, and /dev/zero never ends.
    if path.is_dir():
        raise FarmError(f"{path}: is a directory, not a results file",
                        hint="pass the JSONL written by `farm web run`, e.g. runs/<id>/web/results.jsonl")
    if not path.exists():
        raise FarmError(f"{path}: no such results file", hint="pass the JSONL written by `farm web run`")
    if not path.is_file():
        raise FarmError(f"{path}: not a regular file", hint="pass the JSONL written by `farm web run`")


def _problem(errors: list[ErrorDetails]) -> str:
    err = errors[0]
    where = ".".join(str(p) for p in err["loc"])
    # A validator's own message already names the value; pydantic's "Value error, " prefix adds nothing.
    msg = str(err["ctx"]["error"]) if err["type"] == "value_error" and "ctx" in err else err["msg"]
    if err["type"] not in ("missing", "value_error", "json_invalid") and "input" in err:
        msg += f" (got {repr(err['input'])[:40]})"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {msg}{more}" if where else f"{msg}{more}"


def read_results(path: Path) -> ResultLines:
    """Every line of a results file, each accepted or rejected on its own (bad bytes, bad JSON, a wrong type
    or an out-of-range number reject that line only). FarmError when the file cannot be read at all, or
    for a line from before suite versioning."""
    _open_results(path)
    read = ResultLines()
    try:
        # Split on LF only, in bytes: `str.splitlines` also splits on U+2028 and friends, which JSON strings
        # carry unescaped, and one bad byte must cost its line, not the file.
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if raw.strip():
                    _read_line(path, number, raw, read)
    except OSError as exc:
        raise FarmError(f"{path}: cannot read ({exc.strerror or exc})", hint="check the file's permissions") from None
    return read


def _read_line(path: Path, number: int, raw: bytes, read: ResultLines) -> None:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        read.rejected.append(f"{path}:{number}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})")
        return
    try:
        # pydantic's own JSON parser: it stops at a fixed nesting depth with an error instead of recursing
        # until the stack runs out. Strict reaches nested models too: a token count of "5" or 5.0 is refused.
        run = WebRun.model_validate_json(line, strict=True)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        if len(errors) == 1 and errors[0]["type"] == "missing" and errors[0]["loc"] == ("benchmarkSuiteVersion",):
            raise FarmError(f"{path}:{number}: no benchmarkSuiteVersion",
                            hint="results from before suite versioning are not comparable; "
                                 "report them separately") from None
        read.rejected.append(f"{path}:{number}: {_problem(errors)}")
        return
    read.runs.append(run)
    read.line_numbers.append(number)


def read_runs(path: Path) -> list[WebRun]:
    """Every run of a results file this harness wrote; FarmError naming the first rejected line."""
    read = read_results(path)
    if read.rejected:
        raise FarmError(read.rejected[0], hint=_NOT_RESULTS)
    return read.runs
