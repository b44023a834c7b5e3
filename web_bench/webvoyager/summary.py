"""summary.json: pass rates overall and per site over the whole selection, run health, and costs.

The denominator is always every selected task: errors, timeouts, step limits, unreachable websites and missing
results stay in it. A task the provider's quota interrupted is not a failure: it counts as missing (agent quota,
to be re-run) or unjudged (judge quota, to be re-judged).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from web_bench.webvoyager.metrics import TaskMetrics, fsum, known_sum, task_metrics
from web_bench.webvoyager.model import SITES, WV_SCHEMA_VERSION, ErrorKind, JudgeMode, Site, TaskView, WvTask

INFRASTRUCTURE_KINDS: frozenset[ErrorKind] = frozenset(
    {"quota", "auth", "service_unavailable", "browser_error", "interrupted", "internal"})
"""Error kinds that say the run's machinery or the provider failed, not the agent (unreachable websites are
counted apart; a model's unusable answer is the agent's failure)."""


class SiteStats(BaseModel):
    """Scores of a set of selected tasks (one site, or the whole selection)."""

    model_config = ConfigDict(extra="forbid")

    selected: int
    """Selected tasks: the denominator."""
    passed: int
    """Judged pass."""
    failed: int
    """Judged fail."""
    unjudged: int
    """Finished without a verdict (pending, judge error, judge quota)."""
    missing: int
    """No valid result (never ran, or the agent hit the quota and waits for a re-run)."""
    provisional_rate: float | None
    """passed / selected, even while scoring is incomplete (a floor); null with nothing selected."""
    rate: float | None
    """The same number once scoring is complete; null before."""
    scoring_complete: bool
    """missing == 0 and unjudged == 0."""
    avg_steps: float | None
    """Mean tool calls over the current attempts (failures and timeouts included; quota re-runs not)."""
    avg_model_rounds: float | None
    """Mean model requests over the same attempts."""
    avg_duration_s: float | None
    """Mean agent time over the same attempts; null when any is unknown."""
    avg_duration_is_lower_bound: bool
    """Whether some time in the mean is only a lower bound."""
    website_unavailable: int
    """Attempts ended by an unreachable or restricted website (still in the denominator)."""
    step_limit: int
    """Attempts that ran out of model rounds."""
    timeout: int
    """Attempts that ran out of time."""


class Summary(SiteStats):
    """summary.json: the whole selection's scores (top level), each site's, run health and costs."""

    schema_version: Literal[1] = WV_SCHEMA_VERSION
    """Format version."""
    judge_mode: JudgeMode
    """Judge of the run."""
    evaluation_finished_at: str | None
    """UTC ISO end of this round's scoring."""
    sites: dict[Site, SiteStats]
    """Per site, for the sites in the selection, in data-file order."""
    infrastructure_errors: int
    """Tasks whose attempt or verdict failed for infrastructure reasons (quota, auth, service, browser…)."""
    infrastructure_error_task_ids: list[str]
    """Those tasks, selection order."""
    halted: bool
    """Whether dispatch stopped early (service failure, quota, interrupt)."""
    complete_without_infrastructure_errors: bool
    """Scoring complete, not halted, no infrastructure error."""
    quota_retry_task_ids: list[str]
    """Agent attempts cut by the quota, re-run from scratch on --resume (counted as missing)."""
    quota_rejudge_task_ids: list[str]
    """Verdicts cut by the quota, judged again on --resume (counted as unjudged)."""
    agent_cost_usd: float | None
    """Current agent attempts' cost; null when any is unknown."""
    judge_cost_usd: float | None
    """Current verdicts' cost; 0 with --judge none; null while any is pending or unknown."""
    total_task_cost_usd: float | None
    """agent + judge."""
    cost_observed_usd: float
    """Agent + judge costs that could be computed (a lower bound when a total is null)."""
    unpriced_calls: int
    """Agent and judge requests with usage but no price."""
    usage_missing_calls: int
    """Agent and judge requests that may have been billed but reported no usage."""
    superseded_attempts: int
    """Earlier attempts replaced by a newer one (not in the totals above)."""
    superseded_agent_cost_usd: float | None
    """Their agent cost; null when any is unknown."""
    duration_lower_bound_tasks: int
    """Current attempts whose agent time is only a lower bound."""
    mixed_provenance: bool
    """Results come from more than one run or time batch (backfill, --retry-from)."""
    pricing: dict[str, JsonValue] = Field(default_factory=dict)
    """Price snapshot per role (agent, judge) as configured; a list price, not a bill."""


def _in_order(tasks: Sequence[WvTask], ids: set[str]) -> list[str]:
    return [t.task_id for t in tasks if t.task_id in ids]


def _mean(values: Sequence[float]) -> float | None:
    return round(math.fsum(values) / len(values), 6) if values else None


def site_stats(rows: Sequence[TaskMetrics], *, retry: set[str], rejudge: set[str]) -> SiteStats:
    """Scores of `rows` (one per selected task)."""
    scored = [r for r in rows if r.status != "missing" and r.task_id not in retry]
    passed = sum(1 for r in scored if r.passed is True and r.task_id not in rejudge)
    failed = sum(1 for r in scored if r.passed is False and r.task_id not in rejudge)
    unjudged = len(scored) - passed - failed
    selected = len(rows)
    provisional = passed / selected if selected else None
    complete = len(scored) == selected and unjudged == 0
    durations = [r.duration_s for r in scored]
    return SiteStats(
        selected=selected, passed=passed, failed=failed, unjudged=unjudged, missing=selected - len(scored),
        provisional_rate=provisional, rate=provisional if complete else None, scoring_complete=complete,
        avg_steps=_mean([r.steps or 0 for r in scored]), avg_model_rounds=_mean([r.model_rounds or 0 for r in scored]),
        avg_duration_s=None if any(d is None for d in durations) else _mean([d for d in durations if d is not None]),
        avg_duration_is_lower_bound=any(r.duration_basis == "lower_bound" for r in scored),
        website_unavailable=sum(1 for r in scored if r.error_kind == "website_unavailable"),
        step_limit=sum(1 for r in scored if r.status == "step_limit"),
        timeout=sum(1 for r in scored if r.status == "timeout"),
    )


def summarize(
    tasks: Sequence[WvTask],
    views: Mapping[str, TaskView],
    *,
    judge_mode: JudgeMode,
    recovery_quota_retry: Collection[str],
    recovery_quota_rejudge: Collection[str],
    halted: bool,
    mixed_provenance: bool,
    pricing_snapshot: Mapping[str, JsonValue],
    evaluation_finished_at: str | None,
) -> Summary:
    """summary.json over the selection (`tasks` in selection order) and the recovery lists of recovery.json.

    A current attempt or verdict that shows the quota joins the lists even if recovery.json missed it.
    """
    rows = [task_metrics(t, views.get(t.task_id), judge_mode) for t in tasks]
    finished = [r for r in rows if r.status != "missing"]
    retry = _in_order(tasks, set(recovery_quota_retry) | {r.task_id for r in finished if r.error_kind == "quota"})
    rejudge = _in_order(tasks, (set(recovery_quota_rejudge) | {r.task_id for r in finished
                                                                if r.judge_error_kind == "quota"}) - set(retry))
    overall = site_stats(rows, retry=set(retry), rejudge=set(rejudge))
    sites = {site: site_stats([r for r in rows if r.site == site], retry=set(retry), rejudge=set(rejudge))
             for site in SITES if any(r.site == site for r in rows)}
    infra = _in_order(tasks, {r.task_id for r in finished
                              if r.error_kind in INFRASTRUCTURE_KINDS or r.judge_error_kind in INFRASTRUCTURE_KINDS})
    agent_cost = known_sum(r.agent_cost_usd for r in finished)
    judge_cost = known_sum(r.judge_cost_usd for r in finished)
    judged = [r.judge_usage for r in finished if r.judge_usage is not None]
    return Summary(
        **overall.model_dump(), judge_mode=judge_mode, evaluation_finished_at=evaluation_finished_at, sites=sites,
        infrastructure_errors=len(infra), infrastructure_error_task_ids=infra, halted=halted,
        complete_without_infrastructure_errors=overall.scoring_complete and not halted and not infra,
        quota_retry_task_ids=retry, quota_rejudge_task_ids=rejudge,
        agent_cost_usd=agent_cost, judge_cost_usd=judge_cost, total_task_cost_usd=known_sum([agent_cost, judge_cost]),
        cost_observed_usd=fsum([*(r.agent_cost_observed_usd or 0.0 for r in finished),
                                     *(u.cost_observed_usd for u in judged)]),
        unpriced_calls=sum(r.unpriced_calls or 0 for r in finished) + sum(u.unpriced_calls for u in judged),
        usage_missing_calls=sum(r.usage_missing_calls or 0 for r in finished)
        + sum(u.usage_missing_calls for u in judged),
        superseded_attempts=sum(len(r.superseded_attempts) for r in finished),
        superseded_agent_cost_usd=known_sum(r.superseded_agent_cost_usd for r in finished),
        duration_lower_bound_tasks=sum(1 for r in finished if r.duration_basis == "lower_bound"),
        mixed_provenance=mixed_provenance,
        pricing=dict(pricing_snapshot),
    )


def render_summary(summary: Summary) -> str:
    """summary.json text."""
    return summary.model_dump_json(indent=2) + "\n"
