"""What a command that wrote into a run (`farm web run`, `farm webvoyager run`/`report`, `farm desktop attach`)
prints last: the run's current report, which the lane has just rebuilt (`farm.lane_plugins.current_report`)."""

from __future__ import annotations

from pathlib import Path


def print_current_report(run_dir: Path) -> None:
    """The run's headline as its current report shows it (headline.json: the one number every surface shows),
    then that report's paths."""
    from farm.report.headline import read_headline
    from farm.report.writers import REPORT_FILES

    written = read_headline(run_dir)
    if written is not None:
        print(f"run {run_dir.name}: {written.text}")
    for name in REPORT_FILES:
        if (run_dir / name).is_file():
            print(run_dir / name)
