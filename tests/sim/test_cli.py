"""`farm sim up/status/down` as a user runs them, against a private adb server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import adbutils
import pytest

from tests.helpers.phones import private_adb_port, use_private_adb


def farm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from farm.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def sim_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[int]:
    port = private_adb_port(request.config)
    use_private_adb(port, monkeypatch)
    monkeypatch.setenv("FARM_SIM_STATE_DIR", str(tmp_path / "state"))
    try:
        yield port
    finally:
        farm("sim", "down")


def test_up_status_down_cycle(sim_env: int, tmp_path: Path) -> None:
    done = farm("sim", "up", "--count", "2")
    assert done.returncode == 0, done.stderr
    serials = done.stdout.split()
    assert len(serials) == 2 and all(s.startswith("127.0.0.1:") for s in serials)
    client = adbutils.AdbClient(port=sim_env)
    assert {d.serial: d.state for d in client.list()}.items() >= {s: "device" for s in serials}.items()
    assert client.device(serials[1]).prop.model == "Pixel 7"
    shown = farm("sim", "status")
    assert shown.returncode == 0 and all(s in shown.stdout for s in serials) and "device" in shown.stdout
    state_file = tmp_path / "state" / "state.json"
    assert state_file.exists()
    stopped = farm("sim", "down")
    assert stopped.returncode == 0 and serials[0] in stopped.stdout
    assert not state_file.exists()
    assert not {d.serial for d in client.list()} & set(serials)
    assert "no virtual phones running" in farm("sim", "status").stdout


def test_second_up_is_refused(sim_env: int) -> None:
    assert farm("sim", "up").returncode == 0
    again = farm("sim", "up")
    assert again.returncode == 2
    assert "already running" in again.stderr and "farm sim down" in again.stderr


def test_up_with_unauthorized_fault(sim_env: int) -> None:
    done = farm("sim", "up", "--state", "unauthorized")
    assert done.returncode == 0, done.stderr
    serial = done.stdout.strip()
    assert {d.serial: d.state for d in adbutils.AdbClient(port=sim_env).list()}[serial] == "unauthorized"


def test_bad_profile_is_one_line_error(sim_env: int, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: Pixel\nbattery_level: 250\n")
    done = farm("sim", "up", "--profile", str(bad))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "battery_level" in lines[0] and str(bad) in lines[0]
    assert os.environ["ANDROID_ADB_SERVER_PORT"] == str(sim_env)


def test_down_without_sim_says_so(sim_env: int) -> None:
    done = farm("sim", "down")
    assert done.returncode == 0 and "no virtual phones running" in done.stdout
