"""The android lane's commands through the real `farm` entry point: output and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from farm.android.instrument_parser import parse_text
from farm.exits import EXIT_FAILED
from farm.sim.launcher import free_port
from tests.helpers.records import record, score_line, scores_text, write_run, write_tasks
from tests.helpers.shared_data import shared_data

EVAL = "/sdcard/Android/data/dev.agentfarm.simagent/files/eval"


def farm(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `farm …` in a child process (inherits the private ANDROID_ADB_SERVER_PORT)."""
    code = "import sys; from farm.cli import main; main(sys.argv[1:])"
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )


def one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0]


def test_instrument_parse_prints_the_events_as_json_lines(tmp_path: Path) -> None:
    proc = farm("instrument", "parse", str(shared_data("instrument", "adam_log_4.input")), cwd=tmp_path)
    assert proc.returncode == 0
    events = parse_text(shared_data("instrument", "adam_log_4.input").read_text())
    expected = [json.dumps(e.as_json(), separators=(",", ":")) for e in events]
    assert proc.stdout.splitlines() == expected
    assert proc.stdout.splitlines()[0] == '{"event":"run_started","testCount":9}'


def test_invalid_split_is_a_one_line_error(tmp_path: Path) -> None:
    one_line_error(farm("run", "--split", "bogus", "--tasks-dir", str(write_tasks(tmp_path / "t")), cwd=tmp_path),
                   "--split bogus")


def test_invalid_choices_are_one_line_errors_naming_the_flag(tmp_path: Path) -> None:
    one_line_error(farm("run", "--on-takeover", "later", cwd=tmp_path), "--on-takeover later", "cancel or wait")
    one_line_error(farm("run", "--executor", "host", "--policy", "magic", cwd=tmp_path),
                   "--policy magic", "model or scripted")


def test_missing_profile_is_a_one_line_error(tmp_path: Path) -> None:
    one_line_error(farm("run", "--profile", "nope", cwd=tmp_path), "profiles.nope")


def test_invalid_farm_yaml_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("adb_servers: [\n")
    one_line_error(farm("devices", "--config", "bad.yaml", cwd=tmp_path), "bad.yaml", "invalid YAML")
    (tmp_path / "wrong.yaml").write_text("adb_servers: [{host: x, port: 99999}]\n")
    one_line_error(farm("devices", "--config", "wrong.yaml", cwd=tmp_path), "adb_servers.0.port")
    one_line_error(farm("devices", "--config", "missing.yaml", cwd=tmp_path), "missing.yaml")


def test_no_phone_hints_at_farm_sim_up(virtual_farm, tmp_path: Path) -> None:
    one_line_error(farm("run", "--tasks-dir", str(write_tasks(tmp_path / "t")), cwd=tmp_path), "farm sim up")


def test_unknown_serial_and_unreachable_server(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    tasks = str(write_tasks(tmp_path / "t"))
    one_line_error(farm("run", "--device", "NOPE", "--tasks-dir", tasks, cwd=tmp_path), "--device NOPE")
    (tmp_path / "farm.yaml").write_text(f"adb_servers: [{{host: 127.0.0.1, port: {free_port()}}}]\n")
    one_line_error(farm("run", "--tasks-dir", tasks, cwd=tmp_path), "unreachable")


def test_devices_lists_the_phone_with_its_health(virtual_farm, tmp_path: Path) -> None:
    phone = virtual_farm(1)[0]
    proc = farm("devices", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    row = next(ln for ln in proc.stdout.splitlines() if phone.serial in ln)
    assert "Pixel 7" in row and "80%" in row and "ok" in row


def test_run_prints_the_report_paths(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    proc = farm("run", "--tasks-dir", str(write_tasks(tmp_path / "t")), "--run-id", "cli-run", "--quiet", cwd=tmp_path)
    # The virtual phone's agent fails one of the small tasks: the run finished, some failed.
    assert proc.returncode == EXIT_FAILED, proc.stderr
    assert ",fail," in (tmp_path / "runs/cli-run/scores.csv").read_text(encoding="utf-8")
    assert proc.stdout.strip().splitlines()[-4:] == [
        f"runs/cli-run/{name}" for name in ("report.md", "report.html", "junit.xml", "scores.csv")
    ]
    again = farm("run", "--tasks-dir", str(tmp_path / "t"), "--run-id", "cli-run", "--quiet", cwd=tmp_path)
    one_line_error(again, "already exists")


def test_pull_keeps_good_lines_and_fails_on_a_corrupt_one(virtual_farm, tmp_path: Path) -> None:
    phone = virtual_farm(1)[0]
    scores = phone.state.host_path(f"{EVAL}/elsewhere/scores.jsonl")
    scores.parent.mkdir(parents=True, exist_ok=True)
    scores.write_text(scores_text(score_line("a")) + '{"id": "b", "outc\n' + scores_text(score_line("c")))
    proc = farm("pull", "--device", phone.serial, "--run", "elsewhere", cwd=tmp_path)
    one_line_error(proc, "scores.jsonl:2")
    lines = (tmp_path / "runs" / "elsewhere" / "records.jsonl").read_text().splitlines()
    recs = [json.loads(ln) for ln in lines]
    # No bundle and no task set here: the host has nothing to score against, so nothing counts as passed.
    assert [(r["task_id"], r["outcome"]) for r in recs] == [("a", "error"), ("b", "error"), ("c", "error")]
    assert "the host cannot score it" in recs[0]["reasons"][0]
    assert recs[0]["device_verdict"]["passed"] is True
    again = farm("pull", "--device", phone.serial, "--run", "elsewhere", cwd=tmp_path)
    one_line_error(again, "scores.jsonl:2")
    assert (tmp_path / "runs" / "elsewhere" / "records.jsonl").read_text().splitlines() == lines


def test_report_on_a_corrupt_record_file_names_the_skipped_line(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path / "runs", "r", [record("a", run="r")])
    with (run_dir / "records.jsonl").open("a") as fh:
        fh.write("{not json\n")
    proc = farm("report", "r", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stderr.strip() == "warning: r/records.jsonl:2: corrupt record line skipped"


def test_query_prints_a_table(tmp_path: Path) -> None:
    write_run(tmp_path / "runs", "r", [record("a", run="r"), record("b", run="r", passed=False)])
    proc = farm("query", "select count(*) as n, sum(passed::int) as p from records", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "n\tp\n2\t1\n"  # piped: tab-separated


def test_report_of_two_runs_writes_a_paired_comparison(tmp_path: Path) -> None:
    write_run(tmp_path / "runs", "ra", [record(t, run="ra", passed=p) for t, p in (("x", True), ("y", False))])
    write_run(tmp_path / "runs", "rb", [record(t, run="rb", passed=p) for t, p in (("x", True), ("y", True))])
    proc = farm("report", "ra", "rb", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    paths = [Path(p) for p in proc.stdout.split()]
    assert [p.name for p in paths] == ["report.md", "report.html", "junit.xml", "scores.csv"]
    assert paths[0].parent.parent == Path("runs/rb/reports") and paths[0].parent.name.endswith("-vs-ra")
    md = (tmp_path / paths[0]).read_text(encoding="utf-8")
    assert "## Paired comparison: ra (A) vs rb (B)" in md
    assert "| 2 | 1 | 0 | 1 | 0 | 50.0% | 100.0% |" in md


def test_sigterm_stops_farm_run_with_reports_and_exit_3_and_resume_finishes_it(virtual_farm, tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    from farm import manifest as mf
    from farm.results.store import read_records
    from tests.helpers.sweep import scripted_tasks

    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks")
    argv = [str(Path(sys.executable).parent / "farm"), "run", "--split", "all", "--all", "--executor", "host",
            "--policy", "scripted", "--tasks-dir", str(tasks), "--runs-dir", str(tmp_path / "runs"), "--run-id", "s",
            "--quiet"]
    proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    scores: Path | None = None
    end = time.monotonic() + 60
    while time.monotonic() < end:
        found = list((tmp_path / "runs" / "s").glob("android/*/units/*/scores.jsonl"))
        if found and found[0].read_text(encoding="utf-8").strip():
            scores = found[0]
            break
        time.sleep(0.05)
    assert scores is not None, "the first task never finished"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    assert "SIGTERM: no new tasks" in err and "farm run --resume s" in err and "report.md" in out
    run_dir = tmp_path / "runs" / "s"
    assert mf.load(run_dir).status == "interrupted"
    kept = read_records(run_dir / "records.jsonl")
    # What finished is kept; what never started has no record yet, so nothing reads as a failure.
    assert 1 <= len(kept) < 5 and not [r for r in kept if r.outcome == "error"]
    assert "Not finished: s (interrupted)" in (run_dir / "report.md").read_text(encoding="utf-8")
    resumed = farm("run", "--resume", "s", "--runs-dir", str(tmp_path / "runs"), "--tasks-dir", str(tasks),
                   "--quiet", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    records = read_records(run_dir / "records.jsonl")
    assert len(records) == 5 and records[:len(kept)] == kept
    assert len({r.task_id for r in records}) == 5 and mf.load(run_dir).status == "finished"
