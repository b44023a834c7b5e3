"""A lost farm host is loud: the sweep names it (and the phones it had last night) at once, runs the phones that
answered, and exits with the distinct status for lost infrastructure."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm import manifest as mf
from farm.exits import EXIT_HOST_LOST
from farm.sim.launcher import free_port
from farm.sweep.sweep import sweep
from tests.helpers.sweep import scripted_tasks, sweep_request


def test_a_listed_adb_server_that_does_not_answer_is_named_and_the_sweep_exits_host_lost(
    virtual_farm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (phone,) = virtual_farm(1)
    dead = f"127.0.0.1:{free_port()}"
    config = tmp_path / "farm.yaml"
    config.write_text(f"adb_servers:\n  - {{host: 127.0.0.1, port: {dead.rsplit(':', 1)[1]}}}\n", encoding="utf-8")
    tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    result = sweep(sweep_request(tmp_path, tasks, run_id="n1", label="nightly", config=config))
    assert result.exit_code == EXIT_HOST_LOST
    err = capsys.readouterr().err
    (line,) = [ln for ln in err.splitlines() if ln.startswith(f"adb server {dead} unreachable")]
    assert "connection refused" in line
    # The phones that answered ran: the night has its numbers, short of the lost host.
    assert phone.serial in [p.serial for p in result.phones]
    assert any(n.startswith(f"adb server unreachable: {dead}") for n in mf.load(result.run_dir).notes)


def test_the_lost_hosts_line_names_the_phones_it_had_on_the_last_night(
    virtual_farm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (phone,) = virtual_farm(1)
    dead = f"127.0.0.1:{free_port()}"
    runs = tmp_path / "runs" / "n0"
    runs.mkdir(parents=True)
    last = mf.Manifest(run_id="n0", created_at="2026-12-06T01:00:00Z", label="nightly", status="finished",
                       phones=[mf.PhoneEntry(serial="bench-7", adb_server=dead, name="Bench 7")])
    mf.save(runs, last)
    config = tmp_path / "farm.yaml"
    config.write_text(f"adb_servers:\n  - {{host: 127.0.0.1, port: {dead.rsplit(':', 1)[1]}}}\n", encoding="utf-8")
    tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    sweep(sweep_request(tmp_path, tasks, run_id="n1", label="nightly", config=config))
    (line,) = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith(f"adb server {dead} unreachable")]
    assert "phones it had on the last run (n0): Bench 7 (bench-7)" in line


def test_a_host_lost_during_the_sweep_is_said_at_once_noted_and_exits_host_lost(
    virtual_farm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import threading
    import time

    from farm.android.devices import local_port
    from farm.sim.launcher import kill_adb_server, start_adb_server
    from tests.helpers.sweep import farm_yaml, phones_on

    (here,) = virtual_farm(1)
    port = free_port()
    start_adb_server(port)
    try:
        with phones_on(port, 1) as (there,):
            config = farm_yaml(tmp_path / "farm.yaml", local_port(), port)
            tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",
                                                        "read/system/settings-android-version"))
            records = tmp_path / "runs" / "n1" / "records.jsonl"

            def kill_once_a_record_is_written() -> None:
                end = time.monotonic() + 120
                while time.monotonic() < end and not (records.is_file() and records.stat().st_size):
                    time.sleep(0.02)
                kill_adb_server(port)

            killer = threading.Thread(target=kill_once_a_record_is_written)
            killer.start()
            result = sweep(sweep_request(tmp_path, tasks, run_id="n1", label="nightly", config=config, repeats=6,
                                         max_tries=2, quarantine_after=2))
            killer.join()
    finally:
        kill_adb_server(port)
    assert result.exit_code == EXIT_HOST_LOST
    lost = f"127.0.0.1:{port}"
    (line,) = [ln for ln in capsys.readouterr().err.splitlines()
               if ln.startswith(f"adb server {lost} unreachable during the run: ")]
    assert there.serial in line and here.serial not in line
    assert any(n.startswith(f"adb server unreachable: {lost}") and n.endswith("(lost during the run)")
               for n in mf.load(result.run_dir).notes)
    # The phone whose host answered ran its every unit.
    assert result.counts["done"] >= 12
    # The report says it under its headline, with the lost phone by name; the notification carries the same list.
    from farm.report.lost_hosts import lost_hosts
    from farm.report.notify_payload import sweep_payload

    (host,) = lost_hosts(mf.load(result.run_dir))
    assert host.server == lost and len(host.phones) == 1
    for report in ("report.md", "report.html"):
        import html
        import re

        # Markdown escapes its punctuation, HTML its entities: what a reader sees is the same line.
        text = html.unescape(re.sub(r"\\(.)", r"\1", (result.run_dir / report).read_text(encoding="utf-8")))
        assert f"Infrastructure lost: {host.words()}" in text.replace("**", "")
    assert sweep_payload(result.run_dir, exit_status=result.exit_code).lost_hosts == [host]
