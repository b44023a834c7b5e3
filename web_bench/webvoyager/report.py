"""report.md: the readable account of a WebVoyager run — the pass rate over the whole selection and per site,
whether scoring is complete, the judge, costs (a list-price estimate), run health, then one row per task.

Every text that came from a task, a model or a file goes through `md_text`, so an answer with `|`, a newline or
HTML cannot break a table or inject markup.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Protocol

from pydantic import JsonValue

from farm.report.markdown import md_text
from web_bench.webvoyager.metrics import TaskMetrics, current_verdict, task_metrics
from web_bench.webvoyager.model import TaskView, WvTask
from web_bench.webvoyager.summary import SiteStats, Summary

ANSWER_CHARS = 200
"""Longest answer shown in the task table (the full answer is in result.json)."""
REASON_CHARS = 300
"""Longest reason shown in the task table."""
_SHA256 = re.compile(r"[0-9a-f]{64}")


class ManifestLike(Protocol):
    """The manifest fields the report shows (`store.WvManifest` has them)."""

    @property
    def run_id(self) -> str: ...
    @property
    def judge_prompt_sha256(self) -> str | None: ...
    @property
    def agent(self) -> Mapping[str, JsonValue]: ...
    @property
    def judge(self) -> Mapping[str, JsonValue] | None: ...
    @property
    def retry_from(self) -> str | None: ...
    @property
    def protected_task_ids(self) -> list[str]: ...


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _usd(value: float | None, digits: int = 6) -> str:
    return "unknown" if value is None else f"${value:.{digits}f}"


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _clip(text: str | None, limit: int) -> str:
    if not text:
        return ""
    one_line = " ".join(text.split())
    return md_text(one_line if len(one_line) <= limit else one_line[: limit - 1] + "…")


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(md_text(i) for i in ids) if ids else "none"


def _model(setup: Mapping[str, JsonValue] | None) -> str:
    name = setup.get("model") if setup else None
    return md_text(name) if isinstance(name, str) and name else "unknown"


def _rate_cell(stats: SiteStats) -> str:
    return _pct(stats.rate) if stats.rate is not None else f"{_pct(stats.provisional_rate)} (provisional)"


def _site_table(summary: Summary) -> list[str]:
    lines = ["| Site | Tasks | Passed | Failed | Unjudged | Missing | Pass rate |", "|---|---|---|---|---|---|---|"]
    rows: list[tuple[str, SiteStats]] = [*summary.sites.items(), ("Total", summary)]
    for name, s in rows:
        lines.append(f"| {name} | {s.selected} | {s.passed} | {s.failed} | {s.unjudged} | {s.missing} "
                     f"| {_rate_cell(s)} |")
    return lines


def _headline(summary: Summary) -> list[str]:
    n, total = summary.passed, summary.selected
    averages = (f"average {_num(summary.avg_steps)} tool steps, "
                f"{'≥' if summary.avg_duration_is_lower_bound else ''}{_num(summary.avg_duration_s)} s agent time "
                "per task (current attempts, failures and timeouts included)")
    if summary.scoring_complete:
        head = f"**Pass rate {_pct(summary.rate)} ({n}/{total})** over {len(summary.sites)} site(s); {averages}."
        complete = "Scoring is complete: missing = 0, unjudged = 0."
    else:
        head = (f"**Provisional pass rate {_pct(summary.provisional_rate)} ({n}/{total})** over "
                f"{len(summary.sites)} site(s); {averages}.")
        complete = (f"Scoring is **not complete** (scoring_complete: false): missing = {summary.missing}, "
                    f"unjudged = {summary.unjudged}. The provisional rate counts them as not passed.")
    return [head, "", complete, f"The denominator is every selected task ({total}), errors, timeouts, step limits, "
            "unreachable websites and missing results included."]


def _judge_line(manifest: ManifestLike, summary: Summary) -> str:
    if summary.judge_mode == "none":
        return "Judge: none (run only; judge later with --judge-only)."
    sha = manifest.judge_prompt_sha256
    sha_text = f"`{sha}`" if sha and _SHA256.fullmatch(sha) else md_text(sha or "unknown")
    return (f"Judge: {summary.judge_mode}, prompt SHA-256 {sha_text}, judge model {_model(manifest.judge)}; "
            f"agent model {_model(manifest.agent)}.")


def _cost_lines(summary: Summary) -> list[str]:
    lines = [f"- Cost (list-price estimate at the configured price, not a bill): agent "
             f"{_usd(summary.agent_cost_usd)}, judge {_usd(summary.judge_cost_usd)}, total "
             f"{_usd(summary.total_task_cost_usd)}."]
    if summary.total_task_cost_usd is None:
        lines.append(f"- Observed cost subtotal {_usd(summary.cost_observed_usd)} (a lower bound): "
                     f"{summary.usage_missing_calls} request(s) without usage, {summary.unpriced_calls} unpriced.")
    if summary.superseded_attempts:
        lines.append(f"- Superseded attempts: {summary.superseded_attempts}, agent cost "
                     f"{_usd(summary.superseded_agent_cost_usd)} — kept apart, not in the totals above.")
    return lines


def _health_lines(summary: Summary) -> list[str]:
    infra = summary.infrastructure_error_task_ids
    lines = [
        f"- Infrastructure errors: {summary.infrastructure_errors} ({_ids(infra)}); halted: "
        f"{'yes' if summary.halted else 'no'}; complete without infrastructure errors: "
        f"{'yes' if summary.complete_without_infrastructure_errors else 'no'}.",
        f"- Quota: re-run on --resume: {_ids(summary.quota_retry_task_ids)}; re-judge on --resume: "
        f"{_ids(summary.quota_rejudge_task_ids)} (not counted as failures).",
        f"- Website unavailable: {summary.website_unavailable} (still in the denominator); step limit: "
        f"{summary.step_limit}; timeout: {summary.timeout}.",
    ]
    if summary.duration_lower_bound_tasks:
        lines.append(f"- Agent time is only a lower bound for {summary.duration_lower_bound_tasks} task(s).")
    return lines


def _status(m: TaskMetrics, summary: Summary) -> str:
    if m.status == "missing":
        return "missing"
    if m.task_id in summary.quota_retry_task_ids:
        return "quota: re-run pending"
    return m.status + (f" ({m.error_kind})" if m.error_kind else "")


def _pass(m: TaskMetrics, summary: Summary) -> str:
    if m.status == "missing" or m.task_id in summary.quota_retry_task_ids:
        return "—"
    if m.task_id in summary.quota_rejudge_task_ids:
        return "unjudged (quota)"
    return {True: "PASS", False: "FAIL", None: "unjudged"}[m.passed]


def _task_rows(summary: Summary, tasks: Sequence[WvTask], views: Mapping[str, TaskView]) -> list[str]:
    lines = ["| Task | Site | Status | Pass | Steps | Rounds | Agent time (s) | Cost (USD) | Answer | Reason |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for task in tasks:
        view = views.get(task.task_id)
        m = task_metrics(task, view, summary.judge_mode)
        verdict = current_verdict(view, summary.judge_mode) if view else None
        answer = view.agent.final_answer if view else None
        parts = [verdict.reason if verdict and verdict.reason else "",
                 f"judge error: {verdict.judge_error}" if verdict and verdict.judge_error else "",
                 f"agent: {view.agent.error}" if view and view.agent.error else ""]
        reason = "; ".join(p for p in parts if p)
        bound = "≥" if m.duration_basis == "lower_bound" else ""
        time = "—" if m.duration_s is None else f"{bound}{m.duration_s:.3f}"
        cells = [md_text(task.task_id), task.site, md_text(_status(m, summary)), _pass(m, summary),
                 "—" if m.steps is None else str(m.steps), "—" if m.model_rounds is None else str(m.model_rounds),
                 time, "—" if m.agent_cost_usd is None else f"{m.agent_cost_usd:.8f}", _clip(answer, ANSWER_CHARS),
                 _clip(reason, REASON_CHARS)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_report(manifest: ManifestLike, summary: Summary, tasks: Sequence[WvTask],
                  views: Mapping[str, TaskView]) -> str:
    """report.md text (`tasks` in selection order)."""
    lines = [f"# WebVoyager — {md_text(manifest.run_id)}", "", *_headline(summary), "", *_site_table(summary), ""]
    if summary.mixed_provenance:
        source = f" (recovered from {md_text(manifest.retry_from)})" if manifest.retry_from else ""
        kept = len(manifest.protected_task_ids)
        protected = f" ({kept} protected task(s) kept from an earlier run)" if kept else ""
        lines += [f"> **Mixed provenance**{source}: results come from more than one run or time batch{protected}. "
                  "This is not one fresh controlled run and must not be compared as one.", ""]
    lines += [_judge_line(manifest, summary), "", *_cost_lines(summary), *_health_lines(summary), "",
              "## Tasks", "", *_task_rows(summary, tasks, views), "",
              "Agent time is worker start to agent stop (no judge, screenshot or cleanup); cost is the current agent "
              "attempt only (list-price estimate); — is unknown, never 0.", ""]
    return "\n".join(lines)
