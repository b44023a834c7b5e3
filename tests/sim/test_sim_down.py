"""`farm sim down` removes what `farm sim up` created — the phones' file systems, the state file, the log,
the state directories it made — and nothing else, whatever the state file says."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from farm.sim.phone import OWNER_MARKER, PhoneState
from farm.sim.serve import pid_alive
from tests.helpers.phones import private_adb_port, use_private_adb


def farm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from farm.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def tree(directory: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every entry under `directory`: mode, mtime in ns and content of files."""
    return {str(p.relative_to(directory)): (p.lstat().st_mode, p.lstat().st_mtime_ns,
                                           p.read_bytes() if p.is_file() and not p.is_symlink() else b"")
            for p in sorted(directory.rglob("*"))}


@pytest.fixture
def sim_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A private adb server, phones' temp dirs under `tmp_path/tmp`, state under `tmp_path/state/sim`."""
    use_private_adb(private_adb_port(request.config), monkeypatch)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setenv("FARM_SIM_STATE_DIR", str(tmp_path / "state" / "sim"))
    try:
        yield tmp_path
    finally:
        farm("sim", "down")


def dead(pid: int) -> bool:
    """Gone, or a zombie nobody reaped yet (it has no command line any more)."""
    if not pid_alive(pid):
        return True
    try:
        return not Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True


def up(count: int) -> dict[str, object]:
    done = farm("sim", "up", "--count", str(count))
    assert done.returncode == 0, done.stderr
    return dict(json.loads((Path(os.environ["FARM_SIM_STATE_DIR"]) / "state.json").read_text()))


def roots(state: dict[str, object]) -> list[Path]:
    phones = state["phones"]
    assert isinstance(phones, list)
    return [Path(p["root"]) for p in phones]


def test_down_removes_the_phone_file_systems_and_the_state_dirs_up_made(sim_env: Path) -> None:
    (sim_env / "tmp" / "keep.txt").write_text("not the sim's\n")
    (sim_env / "keep.txt").write_text("not the sim's either\n")
    state = up(2)
    made = roots(state)
    assert len(made) == 2 and all(r.is_dir() and r.parent.parent == sim_env / "tmp" for r in made)
    assert farm("sim", "down").returncode == 0
    assert os.listdir(sim_env / "tmp") == ["keep.txt"]
    assert not (sim_env / "state").exists()
    assert (sim_env / "tmp" / "keep.txt").read_text() == "not the sim's\n"
    assert (sim_env / "keep.txt").read_text() == "not the sim's either\n"


def test_down_keeps_a_state_dir_that_was_there_before_up(sim_env: Path) -> None:
    state_dir = sim_env / "state" / "sim"
    state_dir.mkdir(parents=True)
    (state_dir / "notes.txt").write_text("mine\n")
    up(1)
    assert farm("sim", "down").returncode == 0
    assert sorted(os.listdir(state_dir)) == ["notes.txt"]


def test_down_after_the_server_was_killed_still_removes_its_file_systems(sim_env: Path) -> None:
    state = up(2)
    pid = state["pid"]
    assert isinstance(pid, int)
    os.kill(pid, signal.SIGKILL)  # the `python -m farm.sim` this test's `farm sim up` started
    deadline = time.monotonic() + 10
    while not dead(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(r.is_dir() for r in roots(state))  # nothing cleaned up after a SIGKILL
    done = farm("sim", "down")
    assert done.returncode == 0 and "no virtual phones running" in done.stdout
    assert os.listdir(sim_env / "tmp") == []
    assert not (sim_env / "state").exists()


def test_down_removes_nothing_a_phone_did_not_make_whatever_the_state_file_says(
    sim_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victims = sim_env / "victims"
    cases = {
        "precious": "tok",  # not named like a phone's temp dir
        "farm-sim-phone-wrongtoken": "tok",  # its marker holds another token
        "farm-sim-phone-nomarker": "tok",  # no marker at all
        "farm-sim-phone-notoken": "",  # the state names no token
    }
    for name in cases:
        (victims / name / "fs" / "sdcard").mkdir(parents=True)
        (victims / name / "fs" / "sdcard" / "photo.jpg").write_bytes(b"precious")
    (victims / "farm-sim-phone-wrongtoken" / OWNER_MARKER).write_text("other\n")
    (victims / "farm-sim-phone-notoken" / OWNER_MARKER).write_text("\n")
    real = victims / "real-box"
    (real / "fs").mkdir(parents=True)
    (real / OWNER_MARKER).write_text("tok\n")
    (victims / "farm-sim-phone-link").symlink_to(real)  # a marker reached through a symlink is not ours
    cases["farm-sim-phone-link"] = "tok"
    empty = sim_env / "empty-dir"
    empty.mkdir()
    # One genuine phone temp dir among them, to show the others are kept for being foreign, not by accident.
    monkeypatch.setattr(tempfile, "tempdir", str(sim_env / "tmp"))
    genuine = PhoneState()
    state_dir = sim_env / "state" / "sim"
    state_dir.mkdir(parents=True)
    (state_dir / "other.txt").write_text("mine\n")
    bystander = subprocess.Popen(["sleep", "60"])  # a live pid that is not a virtual farm
    try:
        phones = [{"serial": f"127.0.0.1:{1 + i}", "port": 1 + i, "root": str(victims / name / "fs"),
                   "model": "x", "owner_token": token} for i, (name, token) in enumerate(cases.items())]
        phones.append({"serial": "127.0.0.1:9", "port": 9, "root": str(genuine.root), "model": "x",
                       "owner_token": genuine.owner_token})
        (state_dir / "state.json").write_text(json.dumps({
            "pid": bystander.pid, "adb_port": 1, "started_at": 0.0, "log": str(sim_env / "keep.log"),
            "phones": phones, "created_dirs": [str(empty), str(sim_env)],
        }))
        before = tree(victims)
        done = farm("sim", "down")
        assert done.returncode == 0 and "no virtual phones running" in done.stdout
        assert bystander.poll() is None  # never signalled
    finally:
        bystander.kill()
        bystander.wait()
    assert tree(victims) == before
    assert empty.is_dir()
    assert not genuine.root.exists() and genuine.box is not None and not genuine.box.exists()
    assert sorted(os.listdir(state_dir)) == ["other.txt"]
