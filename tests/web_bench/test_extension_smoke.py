"""Seed 001's pair end to end: `farm web run --smoke --policy scripted --backends playwright,extension`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from web_bench.paired.results import read_runs
from web_bench.paired.site.catalog import TASK_NAMES


def test_scripted_smoke_passes_twelve_of_twelve_on_playwright_and_extension(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", "from farm.cli import main; main()", "web", "run", "--smoke", "--policy", "scripted",
         "--backends", "playwright,extension", "--run-id", "pair", "--runs-dir", str(tmp_path / "runs")],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    runs = read_runs(tmp_path / "runs" / "pair" / "web" / "results.jsonl")
    assert len(runs) == 12
    assert sorted((r.task, r.backend) for r in runs) == sorted(
        (t, b) for t in TASK_NAMES for b in ("playwright", "extension")
    )
    failed = [(r.task, r.backend, r.error or r.validation.detail) for r in runs if not r.success]
    assert failed == []
