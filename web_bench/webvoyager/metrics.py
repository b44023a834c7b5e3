"""task-metrics.md / .csv / .json: one row per finished task (its current attempt) in selection order and a
total, rewritten after every task. Unknown stays unknown: `—` in Markdown, an empty CSV cell, null in JSON; a
total with an unknown member is unknown (JSON keeps the observed sum beside it)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from farm.fsutil import atomic_write_text
from farm.report.markdown import md_text
from farm.results.record import Tokens
from web_bench.webvoyager.model import (
    WV_SCHEMA_VERSION,
    AgentStatus,
    ErrorKind,
    JudgeMode,
    JudgeVerdict,
    ModelCall,
    Site,
    TaskView,
    UsageTotals,
    WvTask,
)

METRICS_FILES = ("task-metrics.md", "task-metrics.csv", "task-metrics.json")
COLUMNS = ("Task", "Agent time (s)", "Tool steps", "Model rounds", "Uncached input", "Cache hit", "Cache write",
           "Output", "Hit rate", "Cost (USD)")
"""The ten columns of the table (Markdown marks time ¹ and cost ²)."""
UNKNOWN_MD = "—"


class TaskMetrics(BaseModel):
    """One selected task in task-metrics.json (missing tasks included, with nulls)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    task_id: str
    """Task id."""
    site: Site
    """Site."""
    status: AgentStatus | Literal["missing"]
    """How the current agent attempt ended; `missing` when the task has no result."""
    attempt: int | None = None
    """Current attempt number."""
    error_kind: ErrorKind | None = None
    """Why the attempt errored."""
    error: str | None = None
    """One-line error of the attempt."""
    started_at: str | None = None
    """UTC ISO worker start."""
    finished_at: str | None = None
    """UTC ISO agent stop (before judge and cleanup)."""
    evaluation_finished_at: str | None = None
    """UTC ISO time the current verdict was recorded; null while unjudged."""
    duration_s: float | None = None
    """Agent time in seconds; null when unknown (a lower bound when `duration_basis` says so)."""
    duration_basis: Literal["worker", "parent_observed", "lower_bound"] | None = None
    """How `duration_s` was measured."""
    steps: int | None = None
    """All tool calls."""
    failed_steps: int | None = None
    """Tool calls that returned an error."""
    incomplete_steps: int | None = None
    """Tool calls cut off by the time limit."""
    model_rounds: int | None = None
    """Agent model requests, failures and retries included."""
    model_steps: int | None = None
    """Logical agent model steps."""
    retry_count: int | None = None
    """Agent requests that repeated a failed one."""
    tokens: Tokens | None = None
    """Complete agent token totals; null when a possibly billed request reported no usage."""
    tokens_observed: Tokens | None = None
    """Agent tokens of the requests that reported usage (a lower bound when `usage_missing_calls` > 0)."""
    input_tokens: int | None = None
    """input + cache_read + cache_write."""
    uncached_input_tokens: int | None = None
    """Input not served from or written to a cache."""
    cache_hit_tokens: int | None = None
    """Cache read."""
    cache_write_tokens: int | None = None
    """Cache write (input cache creation, not an output cache)."""
    cache_miss_tokens: int | None = None
    """input + cache_write."""
    output_tokens: int | None = None
    """Output, reasoning included."""
    output_cache_tokens: int | None = None
    """Output cache tokens; null unless a provider reports them (none does)."""
    hit_rate: float | None = None
    """cache_read / input_tokens (0–1)."""
    usage_missing_calls: int | None = None
    """Agent requests that may have been billed but reported no usage."""
    unpriced_calls: int | None = None
    """Agent requests with usage but no computable cost."""
    agent_cost_usd: float | None = None
    """Cost of the current agent attempt; null when incomplete."""
    agent_cost_observed_usd: float | None = None
    """Sum of the agent request costs that could be computed."""
    judge_cost_usd: float | None = None
    """Cost of the current verdict; 0 with `--judge none`; null while pending or unknown."""
    total_cost_usd: float | None = None
    """agent + judge; null when either is."""
    passed: bool | None = Field(default=None, alias="pass")
    """The current verdict; null while unjudged."""
    judge_mode: Literal["reference", "evidence"] | None = None
    """Mode of the current verdict."""
    judge_error: str | None = None
    """Why the judge gave no verdict."""
    judge_error_kind: ErrorKind | None = None
    """`quota` when the judge hit the provider's quota."""
    model_calls: list[ModelCall] = Field(default_factory=list)
    """Agent requests of the current attempt."""
    judge_usage: UsageTotals | None = None
    """Totals of the current verdict's requests."""
    judge_model_calls: list[ModelCall] = Field(default_factory=list)
    """Requests of the current verdict."""
    superseded_attempts: list[int] = Field(default_factory=list)
    """Earlier attempts of the task (their cost is not in the table)."""
    superseded_agent_cost_usd: float | None = 0.0
    """Their summed agent cost; null when any is unknown."""
    provenance_run: str | None = None
    """Run the attempt came from, when another."""


class MetricsTotals(BaseModel):
    """The total row over the finished tasks, with observed sums where the total is unknown."""

    model_config = ConfigDict(extra="forbid")

    tasks: int
    """Finished tasks summed (rows of the table)."""
    duration_s: float | None
    """Summed agent time (not wall time under concurrency); null when any is unknown."""
    duration_observed_s: float
    """Sum of the known agent times."""
    duration_lower_bound: bool
    """Whether some summed time is only a lower bound."""
    steps: int
    """Summed tool calls."""
    model_rounds: int
    """Summed model requests."""
    uncached_input_tokens: int | None
    """Summed uncached input; null when any is unknown."""
    cache_hit_tokens: int | None
    """Summed cache read."""
    cache_write_tokens: int | None
    """Summed cache write."""
    output_tokens: int | None
    """Summed output."""
    input_tokens: int | None
    """Summed input + cache read + cache write."""
    tokens_observed: Tokens
    """Summed observed agent tokens (lower bounds)."""
    hit_rate: float | None
    """Token-weighted: Σcache_read / Σinput_tokens."""
    agent_cost_usd: float | None
    """Summed current agent cost; null when any is unknown."""
    agent_cost_observed_usd: float
    """Summed computable agent cost."""
    judge_cost_usd: float | None
    """Summed judge cost; null when any is pending or unknown."""
    total_cost_usd: float | None
    """agent + judge."""
    superseded_agent_cost_usd: float | None
    """Summed cost of superseded attempts (not in the other totals)."""


class TaskMetricsFile(BaseModel):
    """task-metrics.json."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = WV_SCHEMA_VERSION
    """Format version."""
    evaluation_finished_at: str | None = None
    """UTC ISO end of this round's scoring, once it ended."""
    tasks: list[TaskMetrics]
    """Every selected task, selection order."""
    total: MetricsTotals
    """The total row."""


def current_verdict(view: TaskView, judge_mode: JudgeMode | None) -> JudgeVerdict | None:
    """The verdict that counts under `judge_mode` (None: whatever verdict the view has): a verdict of another
    mode, or on an earlier attempt, is history, not a score."""
    if view.judge is None or view.judge.attempt != view.agent.attempt:
        return None
    if judge_mode not in (None, "none") and view.judge.mode != judge_mode:
        return None
    return view.judge


def fsum(values: Iterable[float]) -> float:
    """Exact sum rounded to 12 decimals, so binary noise (0.0017000000000000001) stays out of the files."""
    return round(math.fsum(values), 12)


def known_sum(values: Iterable[float | None]) -> float | None:
    """Sum (see `fsum`), or None when any value is unknown."""
    items = list(values)
    return None if any(v is None for v in items) else fsum(v for v in items if v is not None)


def _int_sum(values: Iterable[int | None]) -> int | None:
    items = list(values)
    return None if any(v is None for v in items) else sum(v for v in items if v is not None)


def _hit_rate(read: int | None, prompt: int | None) -> float | None:
    return None if read is None or not prompt else read / prompt


def task_metrics(task: WvTask, view: TaskView | None, judge_mode: JudgeMode | None) -> TaskMetrics:
    """The JSON entry of one selected task (`view` None = missing). Without a verdict the judge cost is 0 under
    `--judge none` and unknown otherwise (pending, or the mode is not known)."""
    if view is None:
        return TaskMetrics(task_id=task.task_id, site=task.site, status="missing")
    agent, usage = view.agent, view.agent.usage
    tok = usage.tokens
    verdict = current_verdict(view, judge_mode)
    judge_cost = verdict.usage.cost_usd if verdict else (0.0 if judge_mode == "none" else None)
    # A cache count the provider did not report adds nothing to the prompt (Tokens.prompt); the cell stays —.
    prompt = tok.prompt() if tok else None
    return TaskMetrics(
        task_id=task.task_id, site=task.site, status=agent.status, attempt=agent.attempt,
        error_kind=agent.error_kind, error=agent.error, started_at=agent.started_at, finished_at=agent.finished_at,
        evaluation_finished_at=verdict.judged_at if verdict else None,
        duration_s=None if agent.duration_ms is None else round(agent.duration_ms / 1000, 6),
        duration_basis=agent.duration_basis, steps=agent.steps, failed_steps=agent.failed_steps,
        incomplete_steps=agent.incomplete_steps, model_rounds=agent.model_rounds, model_steps=agent.model_steps,
        retry_count=agent.retry_count, tokens=tok, tokens_observed=usage.tokens_observed, input_tokens=prompt,
        uncached_input_tokens=tok.input_new if tok else None, cache_hit_tokens=tok.cache_read if tok else None,
        cache_write_tokens=tok.cache_write if tok else None,
        cache_miss_tokens=None if tok is None or tok.input_new is None else tok.input_new + (tok.cache_write or 0),
        output_tokens=tok.output if tok else None, hit_rate=_hit_rate(tok.cache_read if tok else None, prompt),
        usage_missing_calls=usage.usage_missing_calls, unpriced_calls=usage.unpriced_calls,
        agent_cost_usd=usage.cost_usd, agent_cost_observed_usd=usage.cost_observed_usd, judge_cost_usd=judge_cost,
        total_cost_usd=known_sum([usage.cost_usd, judge_cost]),
        passed=verdict.passed if verdict else None, judge_mode=verdict.mode if verdict else None,
        judge_error=verdict.judge_error if verdict else None,
        judge_error_kind=verdict.error_kind if verdict else None, model_calls=agent.model_calls,
        judge_usage=verdict.usage if verdict else None, judge_model_calls=verdict.model_calls if verdict else [],
        superseded_attempts=view.superseded_attempts, superseded_agent_cost_usd=view.superseded_agent_cost_usd,
        provenance_run=view.provenance_run,
    )


def observed_tokens(parts: Iterable[Tokens | None]) -> Tokens:
    """Field-wise sum of what was observed (an unreported count adds nothing)."""
    items = [p for p in parts if p is not None]
    return Tokens(**{name: sum(getattr(p, name) or 0 for p in items)
                     for name in ("input_new", "cache_read", "cache_write", "output")})


def totals(rows: Sequence[TaskMetrics]) -> MetricsTotals:
    """The total row over finished tasks: counts and costs summed, hit rate token-weighted."""
    durations = [r.duration_s for r in rows]
    read, prompt = _int_sum(r.cache_hit_tokens for r in rows), _int_sum(r.input_tokens for r in rows)
    agent_cost, judge_cost = known_sum(r.agent_cost_usd for r in rows), known_sum(r.judge_cost_usd for r in rows)
    return MetricsTotals(
        tasks=len(rows), duration_s=known_sum(durations), duration_observed_s=fsum(d or 0.0 for d in durations),
        duration_lower_bound=any(r.duration_basis == "lower_bound" for r in rows),
        steps=sum(r.steps or 0 for r in rows), model_rounds=sum(r.model_rounds or 0 for r in rows),
        uncached_input_tokens=_int_sum(r.uncached_input_tokens for r in rows), cache_hit_tokens=read,
        cache_write_tokens=_int_sum(r.cache_write_tokens for r in rows),
        output_tokens=_int_sum(r.output_tokens for r in rows), input_tokens=prompt,
        tokens_observed=observed_tokens(r.tokens_observed for r in rows), hit_rate=_hit_rate(read, prompt),
        agent_cost_usd=agent_cost, agent_cost_observed_usd=fsum(r.agent_cost_observed_usd or 0.0 for r in rows),
        judge_cost_usd=judge_cost, total_cost_usd=known_sum([agent_cost, judge_cost]),
        superseded_agent_cost_usd=known_sum(r.superseded_agent_cost_usd for r in rows),
    )


def build_metrics(tasks: Sequence[WvTask], views: Mapping[str, TaskView], *, judge_mode: JudgeMode | None = None,
                  evaluation_finished_at: str | None = None) -> TaskMetricsFile:
    """task-metrics.json over the selection (`tasks` in selection order)."""
    entries = [task_metrics(t, views.get(t.task_id), judge_mode) for t in tasks]
    return TaskMetricsFile(evaluation_finished_at=evaluation_finished_at, tasks=entries,
                           total=totals([e for e in entries if e.status != "missing"]))


def _cells(task: str, duration: float | None, lower_bound: bool, steps: int, rounds: int, uncached: int | None,
           hit: int | None, write: int | None, output: int | None, rate: float | None, cost: float | None,
           *, md: bool) -> list[str]:
    unknown = UNKNOWN_MD if md else ""

    def count(value: int | None) -> str:
        return unknown if value is None else str(value)

    if duration is None or (lower_bound and not md):
        time = unknown  # a lower bound is not a time: the CSV cannot mark it, so it stays empty
    else:
        time = ("≥" if lower_bound else "") + f"{duration:.3f}"
    if rate is None:
        rate_text = unknown
    else:
        rate_text = f"{rate * 100:.2f}%" if md else f"{rate:.6f}"
    return [task, time, str(steps), str(rounds), count(uncached), count(hit), count(write), count(output),
            rate_text, unknown if cost is None else f"{cost:.8f}"]


def table_rows(metrics: TaskMetricsFile, *, md: bool) -> list[list[str]]:
    """The rows of the table (finished tasks, then Total), as Markdown or CSV cells."""
    rows = []
    for r in metrics.tasks:
        if r.status == "missing":
            continue
        task = md_text(r.task_id) if md else _csv_text(r.task_id)
        rows.append(_cells(task, r.duration_s, r.duration_basis == "lower_bound", r.steps or 0, r.model_rounds or 0,
                           r.uncached_input_tokens, r.cache_hit_tokens, r.cache_write_tokens, r.output_tokens,
                           r.hit_rate, r.agent_cost_usd, md=md))
    t = metrics.total
    rows.append(_cells("Total", t.duration_s, t.duration_lower_bound, t.steps, t.model_rounds, t.uncached_input_tokens,
                       t.cache_hit_tokens, t.cache_write_tokens, t.output_tokens, t.hit_rate, t.agent_cost_usd, md=md))
    return rows


FOOTNOTES = (
    "¹ Agent time: worker start to agent stop, in seconds with 3 decimals; the judge, the final screenshot and "
    "browser cleanup are not in it. With concurrency above 1 the total is a sum of task times, not the run's "
    "wall-clock time. ≥ marks a lower bound (the end was never observed).",
    "² Cost: the current agent attempt only, USD with 8 decimals; the judge, superseded attempts and the preflight "
    "are not in it (task-metrics.json has agent, judge and total cost). A list-price estimate at the configured "
    "price, not a bill.",
    "— unknown (a request reported no usage, or a price is missing); never read as 0. Hit rate = cache hit / "
    "(uncached input + cache hit + cache write); the total is token-weighted.",
)


def render_markdown(metrics: TaskMetricsFile) -> str:
    """task-metrics.md: the table with its total row and footnotes."""
    header = [c + ("¹" if c.startswith("Agent time") else "²" if c.startswith("Cost") else "") for c in COLUMNS]
    lines = ["# Task metrics", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(metrics, md=True)]
    return "\n".join([*lines, "", *(f"{note}\n" for note in FOOTNOTES)])


def _csv_text(text: str) -> str:
    # A cell a spreadsheet would run as a formula is neutralised with a leading quote.
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def render_csv(metrics: TaskMetricsFile) -> str:
    """task-metrics.csv: the same table, UTF-8 with a BOM; seconds, tokens, USD, hit rate 0–1, empty = unknown."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    writer.writerows(table_rows(metrics, md=False))
    return "\ufeff" + buffer.getvalue()


def render_json(metrics: TaskMetricsFile) -> str:
    """task-metrics.json text."""
    return metrics.model_dump_json(by_alias=True, indent=2) + "\n"


def write_task_metrics(
    root: Path, tasks: Sequence[WvTask], views: Mapping[str, TaskView], *, judge_mode: JudgeMode | None = None,
    evaluation_finished_at: str | None = None,
) -> TaskMetricsFile:
    """Rewrite ROOT/task-metrics.md, .csv and .json, each atomically."""
    metrics = build_metrics(tasks, views, judge_mode=judge_mode, evaluation_finished_at=evaluation_finished_at)
    for name, text in zip(METRICS_FILES, (render_markdown(metrics), render_csv(metrics), render_json(metrics)),
                          strict=True):
        atomic_write_text(root / name, text)
    return metrics
