"""Resolve run arguments, aggregate, and write the reports where they belong."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from pathlib import Path

from farm.errors import FarmError
from farm.report.aggregate import aggregate
from farm.report.writers import REPORT_FILES, write_reports
from farm.results.store import is_run_dir


def resolve_run_dir(run: str, runs_dir: Path) -> Path:
    """A run id under `runs_dir`, or a path to a run directory."""
    candidates = [runs_dir / run, Path(run)]
    for c in candidates:
        if is_run_dir(c):
            return c
    raise FarmError(f"{run}: no such run under {runs_dir}", hint="pass a run id from runs/ or --runs-dir")


def default_out_dir(run_dirs: Sequence[Path]) -> Path:
    """The last run's directory if it has no reports yet, else a new `reports/<time>[-vs-<A>]/` in it."""
    target = run_dirs[-1]
    if len(run_dirs) == 1 and not any((target / name).exists() for name in REPORT_FILES):
        return target
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    suffix = f"-vs-{run_dirs[0].name}" if len(run_dirs) == 2 else ""
    return target / "reports" / f"{stamp}{suffix}"


def build_reports(
    run_dirs: Sequence[Path],
    *,
    include_holdout: bool = False,
    overrides: Sequence[Path] = (),
    out_dir: Path | None = None,
    on_warning: Callable[[str], None] | None = None,
    links: Sequence[str] = (),
) -> list[Path]:
    """Aggregate one run (or compare two) and write report.md, report.html, junit.xml, scores.csv.

    Warnings the reports carry (damaged record lines that were skipped) also go to `on_warning`.
    """
    if not run_dirs:
        raise FarmError("report: no run given", hint="farm report RUN [RUN]")
    if len(run_dirs) > 2:
        raise FarmError("report: at most two runs can be compared", hint="farm report RUN_A RUN_B")
    agg = aggregate(run_dirs, include_holdout=include_holdout, overrides_files=overrides)
    agg.data.links = list(links)
    if on_warning is not None:
        for warning in agg.data.warnings:
            on_warning(warning)
    return write_reports(agg, out_dir or default_out_dir(run_dirs))
