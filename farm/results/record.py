"""The one record schema every lane writes: one JSON line per task attempt."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    field_validator,
    model_serializer,
)

RECORD_SCHEMA_VERSION: Literal[1] = 1

# Range bounds. Whatever crosses them is not a measurement but garbage (a timestamp in a duration field,
# an overflowed counter, a sign bug), and it is refused where it enters: the line is rejected and named,
# never stored. Each bound is far above any real attempt and far inside what DuckDB and the report's
# sums can hold.
MAX_TOKENS = 10**12
"""Tokens of one kind in one attempt: a trillion (about a million dollars at a dollar per million tokens).
Sums of up to nine million such attempts still fit a DuckDB BIGINT."""
MAX_COUNT = 10**9
"""Steps, round trips, attempts, repeats of one attempt or unit."""
MAX_MS = 1e11
"""Milliseconds of one attempt: about three years. An epoch timestamp in milliseconds (≈1.7e12) is above it,
so a start time written into a duration field is refused."""
MAX_COST_USD = 1e6
"""USD of one attempt."""
MAX_EXTRA_DEPTH = 32
"""Nesting of objects and arrays inside one `Record.extra` value. The record reader's JSON parser stops at
a depth of about 200; a record must never be written that cannot be read back."""

Millis = Annotated[float, Field(ge=0, le=MAX_MS, allow_inf_nan=False)]
"""A duration in milliseconds: finite, 0…MAX_MS."""
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
"""A count of things done: 0…MAX_COUNT."""
Ordinal = Annotated[int, Field(ge=1, le=MAX_COUNT)]
"""A 1-based number (attempt, repeat): 1…MAX_COUNT."""
CostUsd = Annotated[float, Field(ge=0, le=MAX_COST_USD, allow_inf_nan=False)]
"""A cost in USD: finite, 0…MAX_COST_USD."""

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
    passed: bool | None
    """Whether the evidence satisfied the check; null = the check could not reach a verdict (an LLM judge's API,
    truncation or format error, or no judge ran). Null is never counted as passed, nor as an agent failure."""
    detail: str = ""
    """Why: what was looked for and what the evidence showed (or why there is no verdict)."""

    @model_serializer(mode="wrap")
    def _verdict_always_written(self, handler: SerializerFunctionWrapHandler,
                                info: SerializationInfo) -> dict[str, object]:
        # `passed` is required: a writer that drops nulls (exclude_none) must still write an unjudged check's
        # null, or the line could not be read back.
        data: dict[str, object] = handler(self)
        if info.exclude_none and self.passed is None and "type" in data:
            data = {"type": data.pop("type"), "passed": None, **data}
        return data


TokenCount = Annotated[int, Field(ge=0, le=MAX_TOKENS)]
"""Tokens of one kind in one attempt or run: 0…MAX_TOKENS."""
_COUNTS: TypeAdapter[dict[str, int | None]] = TypeAdapter(dict[str, TokenCount | None])


class Tokens(BaseModel):
    """Token usage of a model call, a turn or an attempt, split the way providers bill it; a count is null when
    unknown, and an unknown count is never read as 0.

    The one token model: model clients, the host agent, the web lane and records all use it. In code the
    uncached input is `input_new`. Files keep the keys they have always had: records and transcripts write the
    field names, web results the camelCase keys of `CAMEL_KEYS` (`newInput`…); both spellings are read.
    Counts are range-checked where they enter a file (`check_counts`), not here: model clients build this from a
    provider's usage object, whose odd count must not fail the model call itself, and sums over many runs may
    pass the bound of one. Frozen, so one usage can be shared by a run, its record and a sum.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_new: int | None = Field(default=None, validation_alias=AliasChoices("input_new", "newInput"))
    """Input tokens not served from a prompt cache."""
    cache_read: int | None = Field(default=None, validation_alias=AliasChoices("cache_read", "cacheRead"))
    """Input tokens read from a prompt cache."""
    cache_write: int | None = Field(default=None, validation_alias=AliasChoices("cache_write", "cacheWrite"))
    """Input tokens written to a prompt cache."""
    output: int | None = None
    """Output tokens (including reasoning)."""

    def known(self) -> bool:
        """Whether any count was reported."""
        return any(count is not None for _, count in self)

    def prompt(self) -> int | None:
        """Prompt tokens: new input + cache read + cache write; null while the new input is unknown. A cache count
        that was not reported adds nothing (providers that do not report one do not bill it apart)."""
        if self.input_new is None:
            return None
        return self.input_new + (self.cache_read or 0) + (self.cache_write or 0)

    def plus(self, other: Tokens) -> Tokens:
        """Field-wise sum; a count unknown on either side is unknown in the sum."""

        def add(a: int | None, b: int | None) -> int | None:
            return None if a is None or b is None else a + b

        return Tokens(input_new=add(self.input_new, other.input_new), cache_read=add(self.cache_read, other.cache_read),
                      cache_write=add(self.cache_write, other.cache_write), output=add(self.output, other.output))

    @classmethod
    def total(cls, parts: Iterable[Tokens]) -> Tokens:
        """Field-wise sum of `parts` (see `plus`); with no parts, every count is unknown."""
        result: Tokens | None = None
        for part in parts:
            result = part if result is None else result.plus(part)
        return result or cls()

    def check_counts(self, *, camel: bool = False) -> Tokens:
        """Itself when every known count is 0…MAX_TOKENS; else a ValidationError naming the key (camelCase keys
        with `camel`), so a validator that calls it rejects the line at `tokens.<key>`."""
        _COUNTS.validate_python({CAMEL_KEYS[name] if camel else name: count for name, count in self})
        return self


CAMEL_KEYS: dict[str, str] = {"input_new": "newInput", "cache_read": "cacheRead", "cache_write": "cacheWrite",
                              "output": "output"}
"""The key of each `Tokens` field in files written with camelCase keys (web results, seed 001)."""


class RunMetrics(BaseModel):
    """Seed 003's 运行小结 for one attempt: where the time went. Milliseconds (finite, 0…MAX_MS); null when
    unknown."""

    model_config = ConfigDict(extra="forbid")

    first_feedback_ms: Millis | None = None
    """Time from the start of the task to the agent's first visible feedback."""
    round_trips: Count | None = None
    """Model round trips (requests) made during the task."""
    model_ms: Millis | None = None
    """Time spent waiting on the model."""
    screen_read_ms: Millis | None = None
    """Time spent reading the screen (hierarchy dumps, screenshots)."""
    action_ms: Millis | None = None
    """Time spent performing actions on the device."""
    other_ms: Millis | None = None
    """Everything else (harness, waits)."""
    total_ms: Millis | None = None
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
    repeat: Ordinal = 1
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
    steps: Count | None = None
    """Actions taken."""
    tokens: Tokens = Field(default_factory=Tokens)
    """Token usage; each count 0…MAX_TOKENS."""
    cost_usd: CostUsd | None = None
    """Cost in USD (finite, 0…MAX_COST_USD); null when unknown — never 0 for unknown."""
    attempt: Ordinal = 1
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
    """Fields the device reported that this schema does not model; kept, not dropped. Numbers finite, nesting
    at most MAX_EXTRA_DEPTH deep."""

    @field_validator("tokens")
    @classmethod
    def _tokens_in_range(cls, tokens: Tokens) -> Tokens:
        return tokens.check_counts()

    @field_validator("extra")
    @classmethod
    def _extra_is_readable(cls, extra: dict[str, JsonValue]) -> dict[str, JsonValue]:
        # A walk, not a recursion: the depth being checked is the hostile part.
        stack: list[tuple[str, JsonValue, int]] = [(key, value, 1) for key, value in extra.items()]
        while stack:
            key, value, depth = stack.pop()
            if isinstance(value, dict | list):
                if depth > MAX_EXTRA_DEPTH:
                    raise ValueError(f"{key}: nested deeper than {MAX_EXTRA_DEPTH}")
                items = value.values() if isinstance(value, dict) else value
                stack.extend((key, item, depth + 1) for item in items)
            elif isinstance(value, float) and not math.isfinite(value):
                # JSON has no NaN or infinity: written out they would silently become null.
                raise ValueError(f"{key}: {value} is not a finite number")
        return extra

    def unit_key(self) -> tuple[str, str, str, str, str, int]:
        """The unit this attempt belongs to: (run, lane, device or backend, task, instance, repeat)."""
        return (self.run, self.lane, self.device, self.task_id, self.instance, self.repeat)

    def attempt_key(self) -> tuple[str, str, str, str, str, int, int]:
        """The unit plus the attempt number: two records with the same key are one attempt written twice."""
        return (*self.unit_key(), self.attempt)
