"""The WebVoyager lane's section of the farm run report: the seed's per-site table, whether scoring is
complete, the judge, run health and costs — read from the lane's own summary.json."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from farm.manifest import Manifest
from farm.report.lanes import LaneSection, SectionTable, register
from web_bench.webvoyager.summary import SiteStats, Summary

_TITLE = "WebVoyager: LLM-judged browser tasks"


def _rate(stats: SiteStats) -> str:
    if stats.provisional_rate is None:
        return "—"
    shown = f"{stats.provisional_rate * 100:.1f}%"
    return shown if stats.scoring_complete else f"{shown} (provisional)"


def _row(name: str, stats: SiteStats) -> list[str]:
    return [name, str(stats.selected), str(stats.passed), str(stats.failed), str(stats.unjudged),
            str(stats.missing), str(stats.website_unavailable), _rate(stats)]


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.6f}"


def section(run_dir: Path, run: str) -> LaneSection | None:
    """The section of the run's WebVoyager tree; None when it has no summary yet."""
    path = run_dir / "webvoyager" / "summary.json"
    try:
        summary = Summary.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError, ValueError) as exc:
        return LaneSection(lane="webvoyager", run=run, title=_TITLE,
                           notes=[f"webvoyager/summary.json is unreadable ({type(exc).__name__}); "
                                  "rebuild it with `farm webvoyager report --run RUN`."])
    notes = [
        f"Judge: {summary.judge_mode}. The denominator is every selected task ({summary.selected}); "
        + ("scoring is complete." if summary.scoring_complete
           else f"scoring is not complete: {summary.missing} missing, {summary.unjudged} unjudged, so the rate "
                "is provisional."),
        f"Costs (list-price estimates): agent {_usd(summary.agent_cost_usd)}, judge {_usd(summary.judge_cost_usd)}, "
        f"total {_usd(summary.total_task_cost_usd)}; superseded attempts "
        f"{_usd(summary.superseded_agent_cost_usd)} apart.",
    ]
    if summary.mixed_provenance:
        notes.append("Mixed provenance: results of different runs or times are combined; not a single fresh run.")
    if summary.halted or summary.infrastructure_errors:
        notes.append(f"Infrastructure errors: {summary.infrastructure_errors}; dispatch halted: "
                     f"{'yes' if summary.halted else 'no'}. Quota re-runs owed: "
                     f"{', '.join(summary.quota_retry_task_ids) or 'none'}.")
    header = ["Site", "Tasks", "Passed", "Failed", "Unjudged", "Missing", "Website unavailable", "Pass rate"]
    rows = [_row(name, stats) for name, stats in summary.sites.items()] + [_row("Total", summary)]
    return LaneSection(
        lane="webvoyager", run=run, title=_TITLE, notes=notes,
        tables=[SectionTable(header=header, rows=rows, numeric=[1, 2, 3, 4, 5, 6])],
        links=["webvoyager/report.md", "webvoyager/task-metrics.md"],
    )


@register("webvoyager")
def _sections(run_dir: Path, manifest: Manifest) -> list[LaneSection]:
    found = section(run_dir, manifest.run_id)
    return [found] if found is not None else []
