"""What the paired backend report shows (its JSON keys are camelCase): per-backend numbers, the pair table,
ratios with intervals, token totals. Computed by `web_bench.paired.report`."""

from __future__ import annotations

from pydantic import Field

from farm.camel import CamelModel
from farm.results.record import Tokens
from web_bench.paired.results import CamelTokens


class TokenTotals(CamelModel):
    """Token usage of a backend's runs. Only runs that reported usage are summed, and how many did is shown
    beside the sums: a run without usage is unknown, never counted as 0."""

    usage: CamelTokens = Field(default_factory=Tokens)
    """Field-wise sum over the runs with usage; a count one of them did not report is unknown (null)."""
    prompt: int | None = None
    """Sum of those runs' prompt tokens (new input + cache read + cache write); null when one lacks its new input
    or no run had usage."""
    runs_with_usage: int = 0
    """Runs that reported any token usage."""
    runs: int = 0
    """All runs of the backend."""


class BackendStats(CamelModel):
    """One backend's numbers."""

    runs: int
    """Runs."""
    successes: int
    """Successful runs."""
    success_rate: float | None
    """successes / runs."""
    success_rate_ci95: tuple[float, float] | None
    """Wilson 95 % interval of the success rate."""
    infrastructure_errors: int
    """Runs lost to the infrastructure (still in the denominator)."""
    p50_completion_ms: float | None
    """Median completion time over successes (nearest rank)."""
    p90_completion_ms: float | None
    """P90 over successes; null below 10 successes."""
    p50_state_reached_ms: float | None
    """Median time to the goal state over successful write runs."""
    p50_tool_wall_ms: float | None = None
    """Median of toolWallMs (time spent inside browser tools) over successes."""
    p90_tool_wall_ms: float | None = None
    """P90 of toolWallMs over successes; null below 10 successes."""
    p50_ttft_ms: float | None
    """Median time to the first non-empty streamed model delta over successes (runs with a model)."""
    failure_penalty_mean_ms: float | None
    """Mean completion time over all runs with every failure counted as 2 × timeout."""
    tokens: TokenTotals
    """Token totals."""
    success_completions_ms: list[float] = Field(default_factory=list)
    """Completion times of the successful runs, ascending: the distribution the percentiles are taken from."""
    simulated_runs: int = 0
    """Runs on a virtual phone (a local Chromium behind a simulated phone): not real-device results."""


class FailedRun(CamelModel):
    """A run that did not succeed."""

    pair_id: str
    """`task:seed:trial`."""
    backend: str
    """Its backend."""
    status: str
    """How the turn ended."""
    infrastructure: bool
    """Lost to the infrastructure rather than failed by the agent."""
    why: str
    """The error, or the validator's finding."""
    answer: str | None = None
    """The final answer the run gave (page- or model-written text), when it gave one."""


class PairCounts(CamelModel):
    """Pairs (task, seed, trial) that ran on both backends."""

    total: int
    """Complete pairs."""
    both_success: int
    """Both succeeded."""
    only_a: int
    """Only backend A succeeded."""
    only_b: int
    """Only backend B succeeded."""
    neither: int
    """Both failed."""


class Ratio(CamelModel):
    """B / A with its paired-bootstrap 95 % interval (fixed seed, 10 000 resamples)."""

    n: int
    """Pairs used."""
    value: float | None
    """Point estimate; null without pairs."""
    ci95: tuple[float, float] | None
    """Percentile interval; null without pairs."""


class OrderSplit(CamelModel):
    """The latency ratio over both-succeeded pairs, split by which backend ran first."""

    a_first: Ratio
    """Pairs where A ran first."""
    b_first: Ratio
    """Pairs where B ran first."""


class WebReport(CamelModel):
    """Everything the report shows."""

    suite_version: int
    """benchmarkSuiteVersion of every line."""
    source: str
    """The results file."""
    backend_a: str
    """Backend A (the denominator of ratios)."""
    backend_b: str | None
    """Backend B, when the file has two backends."""
    backends: dict[str, BackendStats]
    """Per-backend numbers."""
    pairs: PairCounts
    """Pair outcome table."""
    latency_ratio: Ratio
    """Per-pair completion-time ratio B/A (geometric mean) over pairs where both succeeded."""
    failure_penalty_ratio: Ratio
    """Ratio of mean failure-penalised completion time B/A over all complete pairs."""
    order_sensitivity: OrderSplit
    """Latency ratio by run order."""
    tasks: dict[str, dict[str, str]] = Field(default_factory=dict)
    """task → backend → `successes/runs`."""
    failures: list[FailedRun] = Field(default_factory=list)
    """Every run that did not succeed, in file order."""
    rejected_lines: list[str] = Field(default_factory=list)
    """One `file:line: why` per line refused on reading (bad bytes, bad JSON, wrong type, number out of
    range, a line that contradicts itself); counted nowhere."""
    duplicate_runs: list[str] = Field(default_factory=list)
    """One line per run written on more than one line (same run id, backend, task, seed and trial): the
    run counts once, from its last line."""
