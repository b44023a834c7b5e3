"""Per-phone leases over several adb servers: a developer's run on a phone the night holds is refused with the
holder named (or waits), a second controller never drives a leased phone, and a phone a run held joins the sweep
as soon as it is free."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from farm import manifest as mf
from farm.leases import Leases, PhoneKey, list_leases, this_holder
from farm.results.store import ReadProblems, read_records
from farm.sim.launcher import SimPhone
from farm.sweep.sweep import SweepResult, sweep
from tests.helpers.sweep import extra_adb_server, farm_yaml, phones_on, scripted_tasks, sweep_request

FARM = str(Path(sys.executable).parent / "farm")
TASKS = ("read/system/calculator-multiply", "read/system/settings-android-version",
         "impossible/settings-upgrade-android-99")


@contextmanager
def _two_hosts(virtual_farm, tmp_path: Path) -> Iterator[tuple[SimPhone, SimPhone, Path]]:
    """A phone on the test's adb server and one on a second server; a farm.yaml listing both."""
    (here,) = virtual_farm(1)
    with extra_adb_server() as port, phones_on(port, 1) as (there,):
        from farm.android.devices import local_port

        yield here, there, farm_yaml(tmp_path / "farm.yaml", local_port(), port)


def _start_sweep(tmp_path: Path, config: Path, run_id: str, runs: str) -> subprocess.Popen[str]:
    argv = [FARM, "sweep", "--run-id", run_id, "--executor", "host", "--policy", "scripted", "--repeats", "4",
            "--config", str(config), "--tasks-dir", str(tmp_path / "tasks"), "--runs-dir", str(tmp_path / runs),
            "--quiet"]
    return subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(check, what: str, timeout: float = 90) -> None:  # noqa: ANN001 - a predicate
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} after {timeout} s")


def _stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    return proc.communicate(timeout=180)


def test_a_developers_run_on_a_phone_the_sweep_holds_is_refused_naming_the_sweep(
    virtual_farm, tmp_path: Path
) -> None:
    scripted_tasks(tmp_path / "tasks", TASKS)
    with _two_hosts(virtual_farm, tmp_path) as (here, there, config):
        night = _start_sweep(tmp_path, config, "n1", "runs")
        try:
            records = tmp_path / "runs" / "n1" / "records.jsonl"
            _wait_for(lambda: records.is_file() and records.stat().st_size > 0, "no record")
            dev = subprocess.run(
                [FARM, "run", "--device", there.serial, "--executor", "host", "--policy", "scripted", "--config",
                 str(config), "--tasks-dir", str(tmp_path / "tasks"), "--runs-dir", str(tmp_path / "dev-runs"),
                 "--quiet"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
            assert dev.returncode == 2, dev.stderr
            line = dev.stderr.strip().splitlines()[-1]
            assert line.startswith(f"error: {there.serial} on 127.0.0.1:") and "leased by sweep n1, pid " in line
            assert "--wait" in dev.stderr
            assert not (tmp_path / "dev-runs").exists() or not any((tmp_path / "dev-runs").iterdir())
            assert night.poll() is None  # the night goes on, on both phones
        finally:
            out, err = _stop(night)
        assert night.returncode in (0, 1, 3), err


def test_a_second_controller_on_another_runs_dir_drives_none_of_the_phones_the_first_holds(
    virtual_farm, tmp_path: Path
) -> None:
    scripted_tasks(tmp_path / "tasks", TASKS)
    with _two_hosts(virtual_farm, tmp_path) as (here, there, config):
        first = _start_sweep(tmp_path, config, "a1", "runs-a")
        try:
            _wait_for(lambda: len(list_leases(Path(os.environ["FARM_LEASES_DIR"]))) == 2,
                      "the first sweep did not lease both phones")
            second = subprocess.run(
                [FARM, "sweep", "--run-id", "b1", "--executor", "host", "--policy", "scripted", "--config",
                 str(config), "--tasks-dir", str(tmp_path / "tasks"), "--runs-dir", str(tmp_path / "runs-b")],
                cwd=tmp_path, capture_output=True, text=True, timeout=120)
            assert second.returncode == 2, second.stderr
            for phone in (here, there):
                assert f"{phone.serial} on 127.0.0.1:" in second.stderr
            assert second.stderr.count("leased by sweep a1") >= 2
            assert not (tmp_path / "runs-b" / "b1").exists()
        finally:
            _stop(first)


def _holding(key: PhoneKey) -> Leases:
    leases = Leases(Path(os.environ["FARM_LEASES_DIR"]), this_holder("run", "dev-1", None))
    leases.take(key)
    return leases


def test_a_phone_a_developer_holds_joins_the_sweep_once_free_and_runs_its_units(
    virtual_farm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = scripted_tasks(tmp_path / "tasks", TASKS)
    with _two_hosts(virtual_farm, tmp_path) as (here, there, config):
        port = config.read_text(encoding="utf-8").split("port: ")[-1].split("}")[0]
        dev = _holding(PhoneKey(there.serial, f"127.0.0.1:{port}"))
        result: list[SweepResult] = []
        night = threading.Thread(target=lambda: result.append(sweep(sweep_request(
            tmp_path, tasks, run_id="n1", config=config, repeats=3))))
        night.start()
        try:
            manifest = tmp_path / "runs" / "n1" / "manifest.json"
            _wait_for(manifest.is_file, "no manifest")
            notes = mf.load(manifest.parent).notes
            assert any(n.startswith(f"{there.serial} on 127.0.0.1:{port}: leased by run dev-1") for n in notes)
        finally:
            dev.close()  # the developer's run ends
            night.join(timeout=300)
        (done,) = result
        err = capsys.readouterr().err
        assert "leased by run dev-1" in err and "going on without it, it joins when free" in err
        assert "free now; the sweep uses it" in err
        records = read_records(done.run_dir / "records.jsonl", ReadProblems())
        on = {r.device for r in records}
        assert on == {here.serial, there.serial}
        # Every phone ran every task (every-phone): the joined phone's units were planned and counted.
        assert sum(r.device == there.serial for r in records) == len(TASKS) * 3
        planned = next(e for e in mf.load(done.run_dir).lanes if e.lane == "android").detail["planned_units"]
        assert isinstance(planned, dict) and sum(planned.values()) == 2 * len(TASKS) * 3  # type: ignore[arg-type]
        assert done.counts["done"] == 2 * len(TASKS) * 3
        assert list_leases(Path(os.environ["FARM_LEASES_DIR"])) == []


def test_farm_run_wait_waits_for_the_holder_then_runs(virtual_farm, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    (phone,) = virtual_farm(1)
    from farm.android.devices import local_port

    tasks = scripted_tasks(tmp_path / "tasks", TASKS[:1])
    other = _holding(PhoneKey(phone.serial, f"127.0.0.1:{local_port()}"))
    timer = threading.Timer(1.5, other.close)
    timer.start()
    try:
        began = time.monotonic()
        done = sweep(sweep_request(tmp_path, tasks, kind="run", all_phones=False, wait=True,
                                   spread="every-phone", repeats=1))
    finally:
        timer.cancel()
        other.close()
    assert time.monotonic() - began >= 1.4
    assert "waiting for " + phone.serial in capsys.readouterr().err
    assert done.counts["done"] == 1


def test_a_dead_holders_lease_is_taken_over_and_said(virtual_farm, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    (phone,) = virtual_farm(1)
    from farm.android.devices import local_port

    script = ("import os, sys; from pathlib import Path; from farm.leases import *; "
              "Leases(Path(sys.argv[1]), this_holder('sweep', 'crashed', 'nightly'))"
              ".take(PhoneKey(sys.argv[2], sys.argv[3])); os._exit(9)")
    subprocess.run([sys.executable, "-c", script, os.environ["FARM_LEASES_DIR"], phone.serial,
                    f"127.0.0.1:{local_port()}"], check=False, timeout=60)
    tasks = scripted_tasks(tmp_path / "tasks", TASKS[:1])
    done = sweep(sweep_request(tmp_path, tasks, run_id="n2"))
    err = capsys.readouterr().err
    assert f"{phone.serial}: took over the lease of sweep crashed (label nightly)" in err
    assert any("took over the lease of sweep crashed" in n for n in mf.load(done.run_dir).notes)
    assert done.counts["done"] == 1
