"""One source of settings: every command takes `runs_dir` / `tasks_dir` from the flag, else farm.yaml (`--config`,
else ./farm.yaml), else runs/ and tasks/; `farm config show` says which and where from."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.results.store import read_records
from tests.helpers.cli import error_line, farm
from tests.helpers.desktop import recorded_batch
from tests.helpers.phones import FarmFactory
from tests.helpers.records import record, write_run, write_tasks
from tests.helpers.sweep import scripted_tasks
from tests.helpers.web import web_run
from tests.helpers.webvoyager import joined_run, make_tasks
from web_bench.paired.results import append_run

YAML = "runs_dir: myruns\ntasks_dir: mytasks\n"


def _farm_yaml(tmp_path: Path, text: str = YAML, name: str = "farm.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _a_failed_run(tmp_path: Path, runs: str = "myruns") -> None:
    write_run(tmp_path / runs, "r1", [record("calc-add", run="r1", passed=False),
                                      record("removed-since", run="r1", passed=False)])


def listed(stdout: str) -> list[str]:
    return [line.split("\t")[0] for line in stdout.splitlines()[1:]]


def test_report_and_query_read_runs_dir_from_farm_yaml(tmp_path: Path) -> None:
    _farm_yaml(tmp_path)
    _a_failed_run(tmp_path)
    proc = farm(tmp_path, "report", "r1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "myruns/r1/report.md"
    proc = farm(tmp_path, "query", "select count(*) as n from records")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["n", "2"]
    # --config names the farm.yaml, from any file name.
    (tmp_path / "farm.yaml").rename(tmp_path / "other.yaml")
    proc = farm(tmp_path, "query", "select count(*) as n from records", "--config", "other.yaml")
    assert proc.returncode == 0 and proc.stdout.splitlines() == ["n", "2"], proc.stderr


def test_a_flag_beats_farm_yaml(tmp_path: Path) -> None:
    _farm_yaml(tmp_path)
    _a_failed_run(tmp_path, runs="flagged")
    proc = farm(tmp_path, "query", "select count(*) as n from records", "--runs-dir", "flagged")
    assert proc.returncode == 0 and proc.stdout.splitlines() == ["n", "2"], proc.stderr
    line = error_line(farm(tmp_path, "report", "r1"))
    assert line.startswith("error: r1: no such run under myruns")
    shown = json.loads(farm(tmp_path, "config", "show", "--json", "--runs-dir", "flagged").stdout)
    assert shown["settings"]["runs_dir"] == {"value": "flagged", "source": "flag", "from": "--runs-dir",
                                             "flag": "--runs-dir"}
    assert shown["settings"]["tasks_dir"]["source"] == "farm.yaml"


def test_tasks_list_and_check_read_tasks_dir_and_runs_dir_from_farm_yaml(tmp_path: Path) -> None:
    _farm_yaml(tmp_path)
    write_tasks(tmp_path / "mytasks")
    _a_failed_run(tmp_path)
    proc = farm(tmp_path, "tasks", "list", "--only-failed-from", "r1")
    assert proc.returncode == 0, proc.stderr
    assert listed(proc.stdout) == ["calc-add"]
    assert proc.stderr == ("warning: --only-failed-from: 1 task(s) no longer in mytasks (farm.yaml: tasks_dir): "
                           "removed-since\n")
    # The small set breaks the directory minimums: the check names files under mytasks/, not the repo's tasks/.
    proc = farm(tmp_path, "tasks", "check")
    assert proc.returncode == 2
    assert "mytasks/web: tasks: web has 0 tasks, minimum 10" in proc.stdout
    assert "error: 12 violation(s) in 6 task(s)" in proc.stderr


def test_view_serves_runs_dir_from_farm_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from farm.cli.view import runs_root

    monkeypatch.chdir(tmp_path)
    _farm_yaml(tmp_path)
    with pytest.raises(FarmError, match=r"^farm.yaml: runs_dir myruns: no such directory"):
        runs_root(None, None)
    (tmp_path / "myruns").mkdir()
    assert runs_root(None, None) == Path("myruns")
    assert runs_root(Path("."), None) == Path(".")
    _farm_yaml(tmp_path, "runs_dir: elsewhere\n", name="conf.yaml")
    (tmp_path / "elsewhere").mkdir()
    assert runs_root(None, Path("conf.yaml")) == Path("elsewhere")


def test_pull_checks_runs_dir_from_farm_yaml_before_the_phone(tmp_path: Path) -> None:
    _farm_yaml(tmp_path, "runs_dir: afile\n")
    (tmp_path / "afile").write_text("not a directory", encoding="utf-8")
    line = error_line(farm(tmp_path, "pull", "--device", "SER1", "--run", "r1"))
    assert line.startswith("error: farm.yaml: runs_dir afile: is a file, not a directory"), line


def test_web_report_finds_the_newest_results_under_runs_dir_from_farm_yaml(tmp_path: Path) -> None:
    _farm_yaml(tmp_path)
    results = tmp_path / "myruns" / "w1" / "web" / "results.jsonl"
    results.parent.mkdir(parents=True)
    append_run(results, web_run(run_id="w1"))
    proc = farm(tmp_path, "web", "report", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["source"] == "myruns/w1/web/results.jsonl"
    line = error_line(farm(tmp_path, "web", "report", "--runs-dir", "runs"))
    assert line.startswith("error: runs: no web results found")


def test_web_and_webvoyager_runs_check_runs_dir_from_farm_yaml_before_they_start(tmp_path: Path) -> None:
    _farm_yaml(tmp_path, "runs_dir: afile\n")
    (tmp_path / "afile").write_text("not a directory", encoding="utf-8")
    for argv in (("web", "run", "--policy", "scripted", "--smoke", "--backends", "playwright"),
                 ("webvoyager", "run", "--count", "1", "--headless")):
        line = error_line(farm(tmp_path, *argv))
        assert line.startswith("error: farm.yaml: runs_dir afile: is a file, not a directory"), (argv, line)


def test_webvoyager_finds_its_run_under_runs_dir_from_farm_yaml(tmp_path: Path) -> None:
    _farm_yaml(tmp_path)
    joined_run(tmp_path / "myruns", "r1", make_tasks(["Allrecipes--0"]))
    proc = farm(tmp_path, "webvoyager", "reset-judge", "--run", "r1")
    assert proc.returncode == 0, proc.stderr
    assert "Allrecipes--0" in proc.stdout and proc.stdout.splitlines()[-1] == "dry run; apply with --execute"


def test_desktop_attach_writes_the_run_under_runs_dir_from_farm_yaml(tmp_path: Path) -> None:
    _farm_yaml(tmp_path)
    batch = recorded_batch(tmp_path)
    proc = farm(tmp_path, "desktop", "attach", "d1", str(batch))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "myruns" / "d1" / "desktop" / "batch-002.report.md").is_file()
    assert not (tmp_path / "runs").exists()


def test_the_resolution_and_its_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from farm.cli.paths import runs_dir_setting, tasks_dir_setting

    monkeypatch.chdir(tmp_path)
    assert (runs_dir_setting(None, None).value, runs_dir_setting(None, None).source) == (Path("runs"), "default")
    assert tasks_dir_setting(None, None).what() == "--tasks-dir (default)"
    _farm_yaml(tmp_path, "runs_dir: myruns\n")
    runs, tasks = runs_dir_setting(None, None), tasks_dir_setting(None, None)
    assert (runs.value, runs.source, runs.origin, runs.what()) == (Path("myruns"), "farm.yaml", "farm.yaml",
                                                                   "farm.yaml: runs_dir")
    # farm.yaml was read but does not set tasks_dir: that one is the default.
    assert (tasks.value, tasks.source, tasks.config) == (Path("tasks"), "default", Path("farm.yaml"))
    flagged = tasks_dir_setting(Path("t"), None)
    assert (flagged.value, flagged.source, flagged.origin) == (Path("t"), "flag", "--tasks-dir")


def test_config_show_prints_each_value_and_where_it_came_from(tmp_path: Path) -> None:
    proc = farm(tmp_path, "config", "show")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["setting\tvalue\tfrom", "runs_dir\truns\tdefault", "tasks_dir\ttasks\tdefault",
                                        "farm.yaml read: none (no --config, no ./farm.yaml)"]
    _farm_yaml(tmp_path, "tasks_dir: mytasks\n", name="conf.yaml")
    proc = farm(tmp_path, "config", "show", "--config", "conf.yaml", "--runs-dir", "r")
    assert proc.stdout.splitlines() == ["setting\tvalue\tfrom", "runs_dir\tr\t--runs-dir",
                                        "tasks_dir\tmytasks\tconf.yaml", "farm.yaml read: conf.yaml"]
    body = json.loads(farm(tmp_path, "config", "show", "--config", "conf.yaml", "--json").stdout)
    assert body == {"config": "conf.yaml", "settings": {
        "runs_dir": {"value": "runs", "source": "default", "from": "default", "flag": "--runs-dir"},
        "tasks_dir": {"value": "mytasks", "source": "farm.yaml", "from": "conf.yaml", "flag": "--tasks-dir"}}}
    line = error_line(farm(tmp_path, "config", "show", "--config", "missing.yaml"))
    assert line.startswith("error: missing.yaml: cannot read config")


def test_config_show_help_teaches_the_order() -> None:
    from tests.cli.test_help import help_text

    text = " ".join(help_text("config", "show").split())
    assert "the flag (`--runs-dir`, `--tasks-dir`)" in text
    assert "else ./farm.yaml in the working directory when it exists" in text
    assert "Example: `farm config show --config" in text


def test_run_only_failed_from_reads_both_directories_from_farm_yaml(
    virtual_farm: FarmFactory, tmp_path: Path
) -> None:
    virtual_farm(1)
    _farm_yaml(tmp_path)
    scripted_tasks(tmp_path / "mytasks", ("read/system/calculator-multiply", "write/clock-alarm-7am"))
    write_run(tmp_path / "myruns", "old", [record("calculator-multiply", run="old", passed=False),
                                           record("clock-alarm-7am", run="old"),
                                           record("removed-since", run="old", passed=False)])
    proc = farm(tmp_path, "run", "--executor", "host", "--policy", "scripted", "--run", "again", "--quiet",
                "--only-failed-from", "old", timeout=300,
                ANDROID_ADB_SERVER_PORT=os.environ["ANDROID_ADB_SERVER_PORT"],
                ADBUTILS_ADB_PATH=os.environ.get("ADBUTILS_ADB_PATH", "/usr/bin/adb"))
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning: --only-failed-from")]
    assert warnings == ["warning: --only-failed-from: 1 task(s) no longer in mytasks (farm.yaml: tasks_dir): "
                        "removed-since"]
    records = read_records(tmp_path / "myruns" / "again" / "records.jsonl")
    assert {r.task_id for r in records} == {"calculator-multiply"}
    assert not (tmp_path / "runs").exists() and not (tmp_path / "tasks").exists()
