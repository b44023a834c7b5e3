"""`--json` on `devices`, `tasks list`, `query` and `report`: one JSON document on stdout matching its model,
everything else on stderr."""

from __future__ import annotations

import csv
import io
import json
import os
import time
from pathlib import Path

from farm.android.device_listing import DeviceListing
from farm.report.summary import ReportSummary
from farm.results.query_output import QueryResult
from farm.taskset.listing import TaskListing
from tests.helpers.cli import error_line, farm
from tests.helpers.phones import FarmFactory
from tests.helpers.records import SMALL_TASKS, record, write_run, write_tasks


def strict_json(text: str) -> object:
    def refuse(name: str) -> object:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def _run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "runs", "r1", [
        record("a", run="r1"), record("b", run="r1", passed=False), record("c", run="r1", outcome="error",
                                                                         passed=False),
        record("d", run="r1", outcome="skipped", passed=False),
    ], [("SER1", "Pixel 8")])


def test_tasks_list_json_is_the_task_listing(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    proc = farm(tmp_path, "tasks", "list", "--tasks-dir", "t", "--split", "tune", "--json")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    listing = TaskListing.model_validate(strict_json(proc.stdout))
    tune = [t["id"] for _d, t in SMALL_TASKS if t["partition"] == "tune"]
    assert sorted(t.id for t in listing.tasks) == sorted(tune)
    irrev = next(t for t in listing.tasks if t.id == "irrev-send")
    assert (irrev.category, irrev.directory, irrev.expect) == ("irreversible", "irreversible", "confirmation")
    assert irrev.path == "t/irreversible/irrev-send.json"


def test_tasks_list_json_keeps_warnings_off_stdout(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    proc = farm(tmp_path, "tasks", "list", "--tasks-dir", "t", "--exclude", "nope-*", "--json")
    assert proc.returncode == 0
    assert proc.stderr == "warning: --exclude nope-*: matches no task\n"
    assert len(TaskListing.model_validate(strict_json(proc.stdout)).tasks) == len(SMALL_TASKS)


def test_query_json_is_the_query_result(tmp_path: Path) -> None:
    _run(tmp_path)
    sql = "select task_id, outcome, passed, cost_usd from records order by task_id"
    proc = farm(tmp_path, "query", sql, "--json")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    result = QueryResult.model_validate(strict_json(proc.stdout))
    assert result.columns == ["task_id", "outcome", "passed", "cost_usd"]
    assert result.rows == [["a", "succeeded", True, None], ["b", "failed", False, None],
                           ["c", "error", False, None], ["d", "skipped", False, None]]
    assert farm(tmp_path, "query", sql, "--format", "json").stdout == proc.stdout


def test_query_csv_reads_back(tmp_path: Path) -> None:
    _run(tmp_path)
    proc = farm(tmp_path, "query", "select task_id, 'a, \"b\"' as q from records order by 1", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    assert list(csv.reader(io.StringIO(proc.stdout))) == [["task_id", "q"]] + [[t, 'a, "b"'] for t in "abcd"]


def test_query_refuses_an_unknown_format_and_two_formats(tmp_path: Path) -> None:
    _run(tmp_path)
    assert "--format xml: unknown format" in error_line(farm(tmp_path, "query", "select 1", "--format", "xml"))
    assert "--json and --format csv" in error_line(farm(tmp_path, "query", "select 1", "--format", "csv", "--json"))


def test_report_json_names_the_files_and_the_headline(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    with (run_dir / "records.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    proc = farm(tmp_path, "report", "r1", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = ReportSummary.model_validate(strict_json(proc.stdout))
    assert summary.runs == ["r1"] and summary.comparison is None
    assert [Path(p).name for p in summary.reports] == ["report.md", "report.html", "junit.xml", "scores.csv"]
    assert all((tmp_path / p).is_file() for p in summary.reports)
    h = summary.headline
    assert h is not None and summary.headlines == [h]
    assert (h.planned, h.skipped, h.attempted, h.errors, h.passed) == (4, 1, 3, 1, 1)
    assert h.rate is not None and abs(h.rate - 1 / 3) < 1e-9
    # The damaged line is a warning on stderr (and in the summary), never text mixed into the JSON.
    assert proc.stderr == "warning: r1/records.jsonl:5: corrupt record line skipped\n"
    assert summary.warnings == ["r1/records.jsonl:5: corrupt record line skipped"]


def test_report_json_of_two_runs_carries_the_comparison(tmp_path: Path) -> None:
    write_run(tmp_path / "runs", "ra", [record(t, run="ra", passed=t == "x") for t in ("x", "y")])
    write_run(tmp_path / "runs", "rb", [record(t, run="rb") for t in ("x", "y")])
    proc = farm(tmp_path, "report", "ra", "rb", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = ReportSummary.model_validate(strict_json(proc.stdout))
    assert summary.comparison is not None and (summary.comparison.only_a, summary.comparison.only_b) == (0, 1)
    # A comparison has no pooled headline: one per side, each as that run's own report counts it.
    assert summary.headline is None
    alone = [ReportSummary.model_validate(strict_json(farm(tmp_path, "report", run, "--json").stdout))
             for run in ("ra", "rb")]
    assert [(h.key, h.passed, h.attempted) for h in summary.headlines] == [("ra", 1, 2), ("rb", 2, 2)]
    assert [h.model_copy(update={"key": "all"}) for h in summary.headlines] == [s.headline for s in alone]


def test_devices_json_lists_the_phone_with_its_health(virtual_farm: FarmFactory, tmp_path: Path) -> None:
    phone = virtual_farm(1)[0]
    proc = farm(tmp_path, "devices", "--json", ANDROID_ADB_SERVER_PORT=os.environ["ANDROID_ADB_SERVER_PORT"])
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    listing = DeviceListing.model_validate(strict_json(proc.stdout))
    (row,) = [d for d in listing.devices if d.serial == phone.serial]
    assert (row.health, row.reason, row.model, row.battery, row.state) == ("ok", None, "Pixel 7", 80, "device")


def test_devices_json_names_each_phone_with_its_adb_server_and_a_farm_yaml_label(
    virtual_farm: FarmFactory, tmp_path: Path
) -> None:
    labelled, other = virtual_farm(2)
    (tmp_path / "farm.yaml").write_text(f'phone_labels:\n  "{labelled.serial}": "Bench A"\n', encoding="utf-8")
    port = os.environ["ANDROID_ADB_SERVER_PORT"]
    proc = farm(tmp_path, "devices", "--json", ANDROID_ADB_SERVER_PORT=port)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    data = strict_json(proc.stdout)
    assert isinstance(data, dict)
    rows = {d["serial"]: (d["name"], d["server"]) for d in data["devices"]}
    assert rows[labelled.serial] == ("Bench A", f"127.0.0.1:{port}")
    assert rows[other.serial] == (f"Pixel 7 · {other.serial.rpartition(':')[2]}", f"127.0.0.1:{port}")
    table = farm(tmp_path, "devices", ANDROID_ADB_SERVER_PORT=port).stdout
    assert "Bench A" in table and f"127.0.0.1:{port}" in table


def test_devices_shows_each_phones_lease_and_a_dead_holder(virtual_farm: FarmFactory, tmp_path: Path) -> None:
    from farm.leases import Leases, PhoneKey, this_holder

    held, free = virtual_farm(2)
    port = os.environ["ANDROID_ADB_SERVER_PORT"]
    leases_dir = tmp_path / "leases"
    night = Leases(leases_dir, this_holder("sweep", "n1", "nightly"))
    night.take(PhoneKey(held.serial, f"127.0.0.1:{port}"))
    try:
        proc = farm(tmp_path, "devices", "--json", ANDROID_ADB_SERVER_PORT=port, FARM_LEASES_DIR=str(leases_dir))
        assert proc.returncode == 0, proc.stderr
        listing = DeviceListing.model_validate(strict_json(proc.stdout))
        rows = {d.serial: d for d in listing.devices}
        lease = rows[held.serial].lease
        assert lease is not None and (lease.kind, lease.run_id, lease.label, lease.pid) == (
            "sweep", "n1", "nightly", os.getpid())
        assert lease.dead is None
        assert rows[free.serial].lease is None
        table = farm(tmp_path, "devices", ANDROID_ADB_SERVER_PORT=port, FARM_LEASES_DIR=str(leases_dir),
                     COLUMNS="250").stdout
        assert f"sweep n1 (pid {os.getpid()} on " in table and "free" in table
        # A holder silent past `stale_s` is shown dead: the next run takes the phone over.
        (tmp_path / "farm.yaml").write_text("leases: {stale_s: 0.001}\n", encoding="utf-8")
        time.sleep(0.05)
        late = DeviceListing.model_validate(strict_json(farm(
            tmp_path, "devices", "--json", ANDROID_ADB_SERVER_PORT=port, FARM_LEASES_DIR=str(leases_dir)).stdout))
        dead = next(d.lease for d in late.devices if d.serial == held.serial)
        assert dead is not None and dead.dead is not None and dead.dead.startswith("no heartbeat for")
    finally:
        night.close()
