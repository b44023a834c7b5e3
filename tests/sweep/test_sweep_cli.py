"""`farm sweep` as cron runs it: signals, the farm lock, exit statuses, help."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from farm import manifest as mf
from farm.report.headline import read_headline
from farm.results.store import ReadProblems, read_records
from tests.helpers.sweep import scripted_tasks

FARM = str(Path(sys.executable).parent / "farm")


def _start(tmp_path: Path, run_id: str, *extra: str) -> subprocess.Popen[str]:
    argv = [FARM, "sweep", "--run-id", run_id, "--executor", "host", "--policy", "scripted", "--repeats", "3",
            "--tasks-dir", str(tmp_path / "tasks"), "--runs-dir", str(tmp_path / "runs"), *extra]
    return subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_records(path: Path, n: int, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.is_file() and len(path.read_text(encoding="utf-8").splitlines()) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path}: fewer than {n} records after {timeout} s")


def test_sigterm_stops_dispatch_leaves_the_run_interrupted_and_resumable(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    scripted_tasks(tmp_path / "tasks")
    proc = _start(tmp_path, "t1")
    run_dir = tmp_path / "runs" / "t1"
    _wait_for_records(run_dir / "records.jsonl", 2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    assert "SIGTERM" in err and "farm sweep --resume t1" in err
    assert mf.load(run_dir).status == "interrupted"
    kept = len(read_records(run_dir / "records.jsonl", ReadProblems()))
    assert 0 < kept < 15
    done = subprocess.run([FARM, "sweep", "--resume", "t1", "--tasks-dir", str(tmp_path / "tasks"), "--runs-dir",
                           str(tmp_path / "runs"), "--quiet"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    units = [r.extra.get("unit") for r in read_records(run_dir / "records.jsonl", ReadProblems())]
    assert len(units) == 15 and len(set(units)) == 15
    assert mf.load(run_dir).status == "finished"


def test_a_second_sweep_on_the_same_farm_is_refused_naming_the_holder(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    scripted_tasks(tmp_path / "tasks")
    first = _start(tmp_path, "a1", "--quiet")
    try:
        _wait_for_records(tmp_path / "runs" / "a1" / "records.jsonl", 1)
        second = subprocess.run(
            [FARM, "sweep", "--run-id", "b1", "--tasks-dir", str(tmp_path / "tasks"), "--runs-dir",
             str(tmp_path / "runs")], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )
        assert second.returncode == 2
        assert "a sweep is already running (run a1, pid" in second.stderr
        assert not (tmp_path / "runs" / "b1").exists()
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=120)


def test_help_teaches_the_exit_statuses() -> None:
    out = subprocess.run([FARM, "sweep", "--help"], capture_output=True, text=True, timeout=60,
                         env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"}).stdout
    for phrase in ("Exit status: 0 every unit finished", "3 units were left unfinished", "--fail-under",
                   "--resume", "--spread", "--repeats"):
        assert phrase in out


def test_resume_with_a_run_id_is_a_one_line_error(tmp_path: Path) -> None:
    proc = subprocess.run([FARM, "sweep", "--resume", "x", "--run-id", "y"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--resume RUN continues that run" in proc.stderr


def test_a_sweep_prints_the_runs_headline_and_its_history_follows_at_once(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply", "impossible/settings-upgrade-android-99"))
    runs = tmp_path / "runs"
    done = subprocess.run([FARM, "sweep", "--run-id", "s1", "--label", "nightly", "--executor", "host", "--policy",
                           "scripted", "--tasks-dir", str(tmp_path / "tasks"), "--runs-dir", str(runs), "--quiet"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    written = read_headline(runs / "s1")
    assert written is not None and written.overall.planned == 2
    assert f"run s1: {written.text}" in done.stdout.splitlines()
    history = subprocess.run([FARM, "history", "--label", "nightly", "--runs-dir", str(runs)], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
    assert history.returncode == 0, history.stderr
    assert (runs / "history" / "nightly-s1" / "history.md").is_file()


def test_sigterm_ends_a_try_whose_app_went_silent_within_seconds_and_keeps_it_for_the_resume(
    virtual_farm, tmp_path: Path
) -> None:
    from farm.sim.profile import FaultSpec

    # The agent app starts its first task and then says nothing more (a live link: only the 600 s watchdog would end
    # it); SIGTERM must not wait for that.
    virtual_farm(1, faults=FaultSpec(instrument_stop_after_tasks=0))
    scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    argv = [FARM, "sweep", "--run-id", "s1", "--executor", "instrument", "--tasks-dir", str(tmp_path / "tasks"),
            "--runs-dir", str(tmp_path / "runs"), "--quiet"]
    proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run_dir = tmp_path / "runs" / "s1"
    end = time.monotonic() + 90
    while time.monotonic() < end and not any(p.name == "raw" or p.is_dir() for p in run_dir.glob("*/*")):
        time.sleep(0.05)
    time.sleep(1.0)  # the am instrument stream is open and silent
    began = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=120)
    took = time.monotonic() - began
    assert proc.returncode == 3, err
    assert took < 30, f"SIGTERM took {took:.1f} s"  # was the 600 s watchdog
    assert mf.load(run_dir).status == "interrupted"
    # Cut short by the stop, not failed: no infrastructure-error record; the resume runs it.
    records = read_records(run_dir / "records.jsonl", ReadProblems()) if (run_dir / "records.jsonl").is_file() else []
    assert [r for r in records if r.outcome == "error"] == []
    assert "farm sweep --resume s1" in err
