"""Resolve run arguments, aggregate, and write the reports where they belong."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from farm.disk_space import DiskFull, is_disk_full
from farm.errors import FarmError
from farm.exits import EXIT_BAD_INPUT
from farm.fsutil import atomic_write_text
from farm.report.aggregate import Aggregation, aggregate
from farm.report.headline import HEADLINE_FILE, headline_text, run_headline
from farm.report.model import ReportData
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
    """Where a comparison of two runs goes: a new `reports/<time>-vs-<A>/` in the second run."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    suffix = f"-vs-{run_dirs[0].name}" if len(run_dirs) == 2 else ""
    return run_dirs[-1] / "reports" / f"{stamp}{suffix}"


@dataclass(frozen=True)
class Built:
    """Reports written, and the numbers they show."""

    paths: list[Path]
    """report.md, report.html, junit.xml, scores.csv."""
    data: ReportData
    """What they render: the one headline of the run is `data.overall`."""

    @property
    def headline_text(self) -> str:
        """The headline in words, as the reports write it."""
        return headline_text(self.data.overall, hidden_holdout=0 if self.data.include_holdout
                             else self.data.hidden_holdout_attempts)


def build(
    run_dirs: Sequence[Path],
    *,
    include_holdout: bool | None = None,
    overrides: Sequence[Path] = (),
    out_dir: Path | None = None,
    on_warning: Callable[[str], None] | None = None,
    links: Sequence[str] = (),
) -> Built:
    """Aggregate one run (or compare two) and write the four reports.

    One run's reports are its current ones, `runs/<id>/report.*` (and `headline.json`): the ones there before are
    moved to `reports/<their time>/` and linked from the new ones. A comparison goes to a new `reports/` folder
    of the second run; `out_dir` (which must hold no reports) overrides both. Holdout is counted as the runs
    planned it unless `include_holdout` says otherwise (`farm.report.headline.holdout_counted`). Warnings the
    reports carry (damaged record lines that were skipped) also go to `on_warning`.

    A full disk is `DiskFull` (one line naming the filesystem; exit 2), never half a report: each file is written
    whole or not at all, and a run's current reports stay as they were.
    """
    if not run_dirs:
        raise FarmError("report: no run given", hint="farm report RUN [RUN]")
    if len(run_dirs) > 2:
        raise FarmError("report: at most two runs can be compared", hint="farm report RUN_A RUN_B")
    target = out_dir or (default_out_dir(run_dirs) if len(run_dirs) > 1 else run_dirs[0])
    try:
        agg = aggregate(run_dirs, include_holdout=include_holdout, overrides_files=overrides)
        agg.data.links = list(links)
        if on_warning is not None:
            for warning in agg.data.warnings:
                on_warning(warning)
        if out_dir is not None or len(run_dirs) > 1:
            return Built(write_reports(agg, target), agg.data)
        return Built(_publish(agg, run_dirs[0]), agg.data)
    except Exception as exc:
        # ENOSPC from a report file, or from DuckDB's cache or spill files while aggregating.
        if isinstance(exc, DiskFull) or not is_disk_full(exc):
            raise
        again = " ".join(d.name for d in run_dirs)
        raise DiskFull(target, needed=None, what="the reports", exit_code=EXIT_BAD_INPUT,
                       then=f"free space and build them again with `farm report {again}`") from exc


def _publish(agg: Aggregation, run_dir: Path) -> list[Path]:
    """Write a run's reports into a fresh folder, move the current ones (if any) under `reports/`, then move the
    new ones in, each by an atomic rename: a reader sees the old file or the new one, never a part."""
    current = [run_dir / name for name in (*REPORT_FILES, HEADLINE_FILE) if (run_dir / name).exists()]
    archive: Path | None = None
    if current:
        stamp = dt.datetime.fromtimestamp(current[0].stat().st_mtime, dt.UTC).strftime("%Y%m%d-%H%M%S-%f")
        archive = run_dir / "reports" / stamp
        agg.data.links.append(f"earlier report: {archive.relative_to(run_dir).as_posix()}/report.md")
    staging = Path(tempfile.mkdtemp(prefix=".report-", dir=run_dir))
    try:
        written = write_reports(agg, staging, served_from=run_dir)
        head = run_headline(agg.data, run_dir.name)
        atomic_write_text(staging / HEADLINE_FILE, head.model_dump_json(indent=2) + "\n")
        if archive is not None:
            archive.mkdir(parents=True, exist_ok=False)
            for path in current:
                os.replace(path, archive / path.name)
        for path in [*written, staging / HEADLINE_FILE]:
            os.replace(path, run_dir / path.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [run_dir / p.name for p in written]
