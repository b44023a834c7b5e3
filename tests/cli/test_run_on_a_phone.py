"""`farm run` on a virtual phone: plain progress lines when stderr is not a terminal, and the selection flags
reaching the run."""

from __future__ import annotations

import os
from pathlib import Path

from farm.results.store import read_records
from tests.helpers.cli import farm
from tests.helpers.phones import FarmFactory
from tests.helpers.records import record, write_run
from tests.helpers.sweep import scripted_tasks

SCRIPTED_RUN = ("run", "--executor", "host", "--policy", "scripted", "--split", "all", "--tasks-dir", "tasks")


def _farm_on_the_phones(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    proc = farm(tmp_path, *args, timeout=300, ANDROID_ADB_SERVER_PORT=os.environ["ANDROID_ADB_SERVER_PORT"],
                ADBUTILS_ADB_PATH=os.environ.get("ADBUTILS_ADB_PATH", "/usr/bin/adb"))
    return proc.returncode, proc.stdout, proc.stderr


def test_piped_progress_is_a_plain_line_per_task_on_stderr(virtual_farm: FarmFactory, tmp_path: Path) -> None:
    virtual_farm(1)
    scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply", "read/system/settings-android-version"))
    code, out, err = _farm_on_the_phones(tmp_path, *SCRIPTED_RUN, "--run", "p1")
    assert code == 0, err
    progress = [line for line in err.splitlines() if line.startswith("[")]
    assert sorted(line.split("] ", 1)[1].split(" r1 ")[0] for line in progress) == [
        "calculator-multiply", "settings-android-version"]
    assert all(line.endswith(": passed") for line in progress)
    assert "\x1b[" not in err + out and "━" not in err + out  # no bar, no terminal control
    assert out.splitlines()[-5] == "run: runs/p1" and out.splitlines()[-4] == "runs/p1/report.md"


def test_repeated_set_exclude_and_only_failed_from_reach_the_run(virtual_farm: FarmFactory, tmp_path: Path) -> None:
    virtual_farm(1)
    scripted_tasks(tmp_path / "tasks")
    code, _out, err = _farm_on_the_phones(tmp_path, *SCRIPTED_RUN, "--run", "u1", "--quiet", "--set", "write",
                                          "--set", "impossible", "--set", "read/system",
                                          "--exclude", "settings-android-version")
    assert code in (0, 1), err
    ran = sorted({r.task_id for r in read_records(tmp_path / "runs" / "u1" / "records.jsonl")})
    assert ran == ["calculator-multiply", "clock-alarm-7am", "settings-upgrade-android-99"]
    write_run(tmp_path / "runs", "old", [record("calculator-multiply", run="old", passed=False),
                                         record("clock-alarm-7am", run="old")])
    code, _out, err = _farm_on_the_phones(tmp_path, *SCRIPTED_RUN, "--run", "u2", "--quiet",
                                          "--only-failed-from", "old")
    assert code == 0, err
    assert {r.task_id for r in read_records(tmp_path / "runs" / "u2" / "records.jsonl")} == {"calculator-multiply"}
