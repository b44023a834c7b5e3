"""One number per run: a sweep with holdout over two phones, stopped, resumed and rebuilt, shows the same headline
in report.md, report.html, junit.xml, scores.csv, `farm report --json`, `farm view`'s run list and
`farm history --json`; planned is every planned unit, also while the run is stopped."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from farm.exits import EXIT_UNFINISHED
from farm.report.headline import read_headline
from farm.sweep.sweep import sweep
from farm.view.runs import list_runs
from tests.helpers.sweep import scripted_tasks, sweep_request
from tests.sweep.test_sweep_e2e import on_first_record

HOLDOUT = "read/system/settings-android-version"


def _tasks(root: Path) -> Path:
    tasks = scripted_tasks(root, ("read/system/calculator-multiply", HOLDOUT, "write/clock-alarm-7am"))
    path = tasks / f"{HOLDOUT}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, "partition": "holdout"}, ensure_ascii=False), encoding="utf-8")
    return tasks


def _farm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import sys; from farm.cli import main; main(sys.argv[1:])", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def _md(run_dir: Path) -> str:
    found = re.search(r"planned \d+ .*?\)", (run_dir / "report.md").read_text(encoding="utf-8"))
    assert found
    return found.group(0)


def test_every_surface_shows_one_headline_through_a_stop_a_resume_and_a_rebuild(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(2)
    tasks = _tasks(tmp_path / "tasks")
    planned = 3 * 2  # every task on both phones
    with on_first_record(lambda: os.kill(os.getpid(), signal.SIGINT)):
        stopped = sweep(sweep_request(tmp_path, tasks, run_id="n1", label="nightly"))
    assert stopped.exit_code == EXIT_UNFINISHED
    head = read_headline(stopped.run_dir)
    assert head is not None and head.overall.planned == planned and head.overall.unfinished > 0
    assert f"planned {planned} · unfinished {head.overall.unfinished}" in _md(stopped.run_dir)

    sweep(sweep_request(tmp_path, tasks, run_id="n1", resume=True))
    rebuilt = _farm("report", "n1", "--runs-dir", str(tmp_path / "runs"), "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    run_dir = tmp_path / "runs" / "n1"
    head = read_headline(run_dir)
    assert head is not None and head.holdout == "counted"
    row = head.overall
    assert (row.planned, row.unfinished) == (planned, 0)
    assert json.loads(rebuilt.stdout)["headline"] == row.model_dump(mode="json")
    assert _md(run_dir) == head.text
    assert head.text in (run_dir / "report.html").read_text(encoding="utf-8").replace("&nbsp;", " ")
    junit = (run_dir / "junit.xml").read_text(encoding="utf-8")
    suites = re.search(r'<testsuites [^>]*tests="(\d+)"[^>]*', junit)
    assert suites and int(suites.group(1)) == row.planned
    rows = list(csv.DictReader(io.StringIO((run_dir / "scores.csv").read_text(encoding="utf-8-sig"))))
    assert len(rows) == row.planned and sum(r["final_verdict"] == "pass" for r in rows) == row.passed
    (listed,) = list_runs(tmp_path / "runs")
    assert listed.headline == row
    history = _farm("history", "--label", "nightly", "--runs-dir", str(tmp_path / "runs"), "--json")
    assert history.returncode == 0, history.stderr
    assert json.loads(history.stdout)["nights"][-1]["overall"] == {**row.model_dump(mode="json"), "key": "n1"}
