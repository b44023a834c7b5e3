"""A lost host is loud: an adb server farm.yaml lists that does not answer is named on one line with the phones it
had on the last run, and the other hosts' phones are still listed (`farm devices` exits 0 unless no server answered).

The servers here are real adb servers on private loopback ports (the session's, plus one per test from
`extra_adb_server`); a "dead" host is a free port nobody listens on. No developer's adb server is touched.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from farm.android import adb_hosts, devices
from farm.android.adb_hosts import LastSeen, last_seen, lost_host_line
from farm.android.device_listing import DeviceListing
from farm.config import AdbServer, FarmConfig
from farm.errors import FarmError
from farm.exits import EXIT_BAD_INPUT, EXIT_BELOW, EXIT_FAILED, EXIT_HOST_LOST, EXIT_INFRA, EXIT_UNFINISHED
from farm.sim.launcher import free_port
from tests.helpers.phones import FarmFactory
from tests.helpers.sweep import extra_adb_server, phones_on


def farm(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`farm …` in a child process (it inherits the test's private ANDROID_ADB_SERVER_PORT unless `env` says)."""
    code = "import sys; from farm.cli import main; main(sys.argv[1:])"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "200", **env}, check=False)


def write_manifest(runs: Path, run_id: str, created_at: str, phones: list[dict[str, str]],
                   label: str | None = None) -> Path:
    """A run directory holding only the manifest fields the lost-host line reads."""
    run_dir = runs / run_id
    run_dir.mkdir(parents=True)
    data = {"run_id": run_id, "created_at": created_at, "label": label, "phones": phones}
    (run_dir / "manifest.json").write_text(json.dumps(data), encoding="utf-8")
    return run_dir


def phone(serial: str, server: str, name: str | None = None) -> dict[str, str]:
    return {"serial": serial, "adb_server": server, **({"name": name} if name else {})}


# -- the library: which servers answered, and what a dead one had ----------------------------------------------

def test_discovery_names_the_server_that_did_not_answer_and_keeps_the_others_phones(
    virtual_farm: FarmFactory,
) -> None:
    local = virtual_farm(1)[0]
    dead = free_port()
    cfg = FarmConfig(adb_servers=[AdbServer(port=dead)])
    found = devices.discover_all(cfg)
    # (The private adb server may still list a phone an earlier test stopped: this test's phone is what counts.)
    assert local.serial in [p.serial for p in found.phones]
    assert [s.address() for s in found.answered] == [f"127.0.0.1:{local.adb_port}"]
    (down,) = found.unreachable
    assert (down.address, down.listed, down.error) == (f"127.0.0.1:{dead}", True,
                                                        "connection refused (no adb server listens there)")
    assert [u.address for u in found.lost] == [down.address]
    # What existing callers get is unchanged: a sweep's list of `host:port: why`, a developer's run a FarmError.
    notes: list[str] = []
    assert local.serial in [p.serial for p in devices.discover(cfg, unreachable=notes)]
    assert notes == [f"127.0.0.1:{dead}: connect to adb server failed: [Errno 111] Connection refused"]
    with pytest.raises(FarmError, match=rf"adb server 127.0.0.1:{dead} \(farm.yaml adb_servers\): unreachable"):
        devices.discover(cfg)


def test_when_no_server_answers_one_error_names_every_one(monkeypatch: pytest.MonkeyPatch) -> None:
    local, dead = free_port(), free_port()
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(local))
    found = devices.discover_all(FarmConfig(adb_servers=[AdbServer(port=dead)]))
    assert not found.answered and not found.phones
    assert [(u.address, u.listed) for u in found.unreachable] == [(f"127.0.0.1:{local}", False),
                                                                 (f"127.0.0.1:{dead}", True)]
    line = found.none_answered_error().line()
    assert f"adb server 127.0.0.1:{local} (ANDROID_ADB_SERVER_PORT={local}): unreachable (connection refused" in line
    assert f"adb server 127.0.0.1:{dead} (farm.yaml adb_servers): unreachable (connection refused" in line
    assert "adb -a nodaemon server" in line and "\n" not in line
    # Only the local server, none listed: the message that says how to start one, as before.
    alone = devices.discover_all(FarmConfig()).none_answered_error().line()
    assert f"no adb server on 127.0.0.1:{local} (ANDROID_ADB_SERVER_PORT={local})" in alone


def test_why_a_server_did_not_answer_is_said_in_words() -> None:
    from adbutils import AdbError, AdbTimeout
    from adbutils.errors import AdbConnectionError

    def caused(exc: BaseException, cause: BaseException) -> BaseException:
        exc.__context__ = cause
        return exc

    refused = caused(AdbConnectionError("connect to adb server failed: [Errno 111] Connection refused"),
                     ConnectionRefusedError(111, "Connection refused"))
    assert devices.in_words(refused) == "connection refused (no adb server listens there)"
    unknown = caused(AdbConnectionError("connect to adb server failed: [Errno -2] Name or service not known"),
                     socket.gaierror(-2, "Name or service not known"))
    assert devices.in_words(unknown) == "unknown host name"
    assert devices.in_words(AdbTimeout("connect to adb server timeout")).startswith("no connection within 3 s")
    assert devices.in_words(TimeoutError("timed out")).startswith("connected, but no answer within 10 s")
    unroutable = caused(AdbConnectionError("connect to adb server failed: [Errno 113] No route to host"),
                        OSError(113, "No route to host"))
    assert devices.in_words(unroutable) == "no route to host"
    assert devices.in_words(AdbError("Unknown data: b'HTTP'")) == "AdbError: Unknown data: b'HTTP'"


def test_last_seen_takes_each_servers_phones_from_the_newest_run_that_had_any(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    a, b = "10.0.0.2:5037", "10.0.0.3:5037"
    write_manifest(runs, "old", "2025-01-01T01:30:00.000000Z", [phone("emulator-5554", a, "Pixel 7 · 5554")])
    write_manifest(runs, "mid", "2025-01-02T01:30:00.000000Z",
                   [phone("R5CT", a, "Bench A"), phone("emulator-5556", a), phone("X1", b)], label="nightly")
    # The newest run did not reach `a` (it was lost already): its phones come from the run before.
    newest = write_manifest(runs, "new", "2025-01-03T01:30:00.000000Z", [phone("X1", b)])
    (runs / "history").mkdir()  # not a run
    (runs / "broken").mkdir()
    (runs / "broken" / "manifest.json").write_text("{not json", encoding="utf-8")
    # A later `farm report` of an old run touches its manifest (the newest file now): created_at still orders runs.
    os.utime(runs / "old" / "manifest.json", (2e9, 2e9))
    os.utime(newest / "manifest.json", (1, 1))
    seen = last_seen(runs, [a, b, "10.0.0.9:5037"])
    assert seen == {a: LastSeen("mid", ["Bench A (R5CT)", "emulator-5556"]), b: LastSeen("new", ["X1"])}
    assert last_seen(runs, [b], label="nightly") == {b: LastSeen("mid", ["X1"])}
    assert last_seen(tmp_path / "nowhere", [a]) == {}
    # Bounded: only the newest manifests by modification time are read (here the one `old` run).
    assert last_seen(runs, [a, b], scan=1) == {a: LastSeen("old", ["Pixel 7 · 5554 (emulator-5554)"])}


def test_the_lost_host_line_names_the_server_why_and_its_phones(monkeypatch: pytest.MonkeyPatch) -> None:
    down = devices.UnreachableServer(AdbServer(host="10.0.0.2"), "connection refused (no adb server listens there)",
                                     "connect to adb server failed: [Errno 111] Connection refused", True)
    assert lost_host_line(down, None) == \
        "adb server 10.0.0.2:5037 unreachable: connection refused (no adb server listens there)"
    monkeypatch.setattr(adb_hosts, "MAX_NAMED", 2)
    line = lost_host_line(down, LastSeen("20250103-013000-nightly", ["A (1)", "B (2)", "C (3)"]))
    assert line.endswith(" — phones it had on the last run (20250103-013000-nightly): A (1), B (2) and 1 more")


def test_infrastructure_lost_has_its_own_exit_status() -> None:
    assert EXIT_HOST_LOST not in {0, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_UNFINISHED, EXIT_BELOW, EXIT_INFRA, 70, 130}


# -- `farm devices` through the real entry point ---------------------------------------------------------------

def test_farm_devices_lists_the_other_hosts_phones_and_marks_the_lost_one(
    virtual_farm: FarmFactory, tmp_path: Path
) -> None:
    local = virtual_farm(1)[0]
    dead = free_port()
    gone = f"127.0.0.1:{dead}"
    # The last night saw two phones on the host that is now gone.
    write_manifest(tmp_path / "nights", "20250103-013000-nightly", "2025-01-03T01:30:00.000000Z",
                   [phone("emulator-5554", gone, "Pixel 7 · 5554"), phone("emulator-5556", gone, "Bench B")])
    with extra_adb_server() as port, phones_on(port, 1) as (remote,):
        (tmp_path / "farm.yaml").write_text(
            f"runs_dir: nights\nadb_servers:\n  - {{host: 127.0.0.1, port: {port}}}\n"
            f"  - {{host: 127.0.0.1, port: {dead}}}\n", encoding="utf-8")
        table = farm("devices", cwd=tmp_path)
        as_json = farm("devices", "--json", cwd=tmp_path)
    expected = (f"adb server {gone} unreachable: connection refused (no adb server listens there) — phones it had "
                "on the last run (20250103-013000-nightly): Pixel 7 · 5554 (emulator-5554), Bench B (emulator-5556)")
    for proc in (table, as_json):
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.splitlines() == [expected]
    assert local.serial in table.stdout and remote.serial in table.stdout
    listing = DeviceListing.model_validate_json(as_json.stdout)
    assert {d.serial: d.server for d in listing.devices} == {local.serial: f"127.0.0.1:{local.adb_port}",
                                                             remote.serial: f"127.0.0.1:{port}"}
    rows = [(s.address, s.listed, s.reachable, s.phones, s.last_run) for s in listing.servers]
    assert rows == [(f"127.0.0.1:{local.adb_port}", False, True, [local.serial], None),
                    (f"127.0.0.1:{port}", True, True, [remote.serial], None),
                    (gone, True, False, [], "20250103-013000-nightly")]
    (lost,) = [s for s in listing.servers if not s.reachable]
    assert lost.error == "connection refused (no adb server listens there)"
    assert lost.last_run_phones == ["Pixel 7 · 5554 (emulator-5554)", "Bench B (emulator-5556)"]


def test_farm_devices_without_a_run_marks_the_lost_host_without_phones(
    virtual_farm: FarmFactory, tmp_path: Path
) -> None:
    virtual_farm(1)
    dead = free_port()
    (tmp_path / "farm.yaml").write_text(f"adb_servers: [{{host: 127.0.0.1, port: {dead}}}]\n", encoding="utf-8")
    proc = farm("devices", "--runs-dir", str(tmp_path / "no-runs-yet"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"adb server 127.0.0.1:{dead} unreachable: connection refused (no adb server listens there)"]


def test_farm_devices_exits_2_naming_every_server_when_none_answers(tmp_path: Path) -> None:
    local, dead_a, dead_b = free_port(), free_port(), free_port()
    (tmp_path / "farm.yaml").write_text(
        f"adb_servers: [{{host: 127.0.0.1, port: {dead_a}}}, {{host: 127.0.0.1, port: {dead_b}}}]\n", encoding="utf-8")
    for args in (("devices",), ("devices", "--json")):
        proc = farm(*args, cwd=tmp_path, ANDROID_ADB_SERVER_PORT=str(local))
        assert proc.returncode == EXIT_BAD_INPUT, proc.stderr
        (line,) = proc.stderr.splitlines()
        assert line.startswith("error: no adb server answered: ") and proc.stdout == ""
        for port in (local, dead_a, dead_b):
            assert f"adb server 127.0.0.1:{port} (" in line
        assert "adb -a nodaemon server" in line


def test_a_local_server_that_is_down_is_named_only_when_the_last_run_had_phones_on_it(tmp_path: Path) -> None:
    local = free_port()
    write_manifest(tmp_path / "runs", "r1", "2025-01-03T01:30:00.000000Z",
                   [phone("emulator-5554", f"127.0.0.1:{local}", "Bench A")])
    with extra_adb_server() as port, phones_on(port, 1) as (remote,):
        (tmp_path / "farm.yaml").write_text(f"adb_servers: [{{host: 127.0.0.1, port: {port}}}]\n", encoding="utf-8")
        had_phones = farm("devices", cwd=tmp_path, ANDROID_ADB_SERVER_PORT=str(local))
        never_had = farm("devices", "--runs-dir", "elsewhere", cwd=tmp_path, ANDROID_ADB_SERVER_PORT=str(local))
    for proc in (had_phones, never_had):
        assert proc.returncode == 0, proc.stderr
        assert remote.serial in proc.stdout
    assert had_phones.stderr.splitlines() == [
        f"adb server 127.0.0.1:{local} unreachable: connection refused (no adb server listens there) — phones it "
        "had on the last run (r1): Bench A (emulator-5554)"]
    # A controller that reaches only other hosts' servers runs no local one: that is not a lost host.
    assert never_had.stderr == ""
