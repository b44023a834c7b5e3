"""The `farm` entry point itself: a bug is one line and a log file (exit 70), Ctrl-C is 130, `--version`, `-h`,
and no command starts an adb server."""

from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import sys
from pathlib import Path

from farm import __version__
from farm.sim.launcher import free_port
from tests.helpers.records import write_tasks

ENTRY = "import sys; from farm.cli import main; main(sys.argv[1:])"
SECRET = "sk-test-0123456789abcdef"
# Patches a function the command calls to fail, then runs the real entry point: an unexpected exception.
INJECT = (
    "import sys, farm.taskset.rules as rules\n"
    "def broken(*args, **kwargs):\n"
    f"    raise {{kind}}('injected failure\\nsecond line {SECRET} ' + 'x' * 500)\n"
    "rules.check_tasks = broken\n"
    "from farm.cli import main\n"
    "main(sys.argv[1:])\n"
)


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "COLUMNS": "200",
        "HOME": str(tmp_path / "home"), "FARM_LOG_DIR": str(tmp_path / "logs"),
        "FARM_SIM_STATE_DIR": str(tmp_path / "simstate"), "ANDROID_ADB_SERVER_PORT": str(free_port()),
    }
    env.update(extra)
    return {k: v for k, v in env.items() if v}


def farm(tmp_path: Path, *args: str, code: str = ENTRY, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, env=env_for(tmp_path, **env),
                          capture_output=True, text=True, timeout=120, check=False)


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def test_an_internal_error_is_one_line_naming_a_log_that_holds_the_traceback(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    proc = farm(tmp_path, "tasks", "check", "t", code=INJECT.format(kind="RuntimeError"), OPENAI_API_KEY=SECRET)
    assert proc.returncode == 70
    line = one_error_line(proc)
    assert line.startswith("error: internal error (RuntimeError: injected failure second line ")
    assert SECRET not in line  # the message is redacted like everything else written about a run
    match = re.fullmatch(r"error: internal error \((.*)\); details in (\S+)", line)
    assert match is not None, line
    assert len(match[1]) <= 200 and match[1].endswith("…")  # one line, truncated
    log = Path(match[2])
    assert log.parent == tmp_path / "logs" and re.fullmatch(r"farm-\d{8}-\d{6}-\d{6}-\d+\.log", log.name)
    text = log.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in text and "in broken" in text
    assert "RuntimeError: injected failure" in text and "command: farm tasks check t" in text
    assert SECRET not in text
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert [p.name for p in (tmp_path / "logs").iterdir()] == [log.name]


def test_the_log_goes_under_the_state_directory_when_no_log_dir_is_set(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    code = INJECT.format(kind="ValueError")
    by_xdg = farm(tmp_path, "tasks", "check", "t", code=code, FARM_LOG_DIR="", XDG_STATE_HOME=str(tmp_path / "xdg"))
    assert by_xdg.returncode == 70
    assert f"details in {tmp_path / 'xdg' / 'agent-farm' / 'logs'}/farm-" in one_error_line(by_xdg)
    by_home = farm(tmp_path, "tasks", "check", "t", code=code, FARM_LOG_DIR="")
    assert by_home.returncode == 70
    assert f"details in {tmp_path / 'home' / '.local' / 'state' / 'agent-farm' / 'logs'}/farm-" in \
        one_error_line(by_home)


def test_an_unwritable_log_directory_still_gives_one_line_and_no_traceback(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    (tmp_path / "not-a-dir").write_text("x")
    proc = farm(tmp_path, "tasks", "check", "t", code=INJECT.format(kind="RuntimeError"),
                FARM_LOG_DIR=str(tmp_path / "not-a-dir" / "logs"))
    assert proc.returncode == 70
    line = one_error_line(proc)
    assert "internal error (RuntimeError: injected failure" in line and "no log written" in line


def test_a_farm_error_is_exit_2_and_writes_no_log(tmp_path: Path) -> None:
    proc = farm(tmp_path, "tasks", "check", "missing")
    assert proc.returncode == 2
    assert "missing" in one_error_line(proc)
    assert not (tmp_path / "logs").exists()


def test_ctrl_c_is_exit_130_with_one_line(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    proc = farm(tmp_path, "tasks", "check", "t", code=INJECT.format(kind="KeyboardInterrupt"))
    assert proc.returncode == 130
    assert one_error_line(proc) == "error: interrupted"
    assert not (tmp_path / "logs").exists()


def test_version_option_and_short_help(tmp_path: Path) -> None:
    version = farm(tmp_path, "--version")
    assert (version.returncode, version.stdout, version.stderr) == (0, f"{__version__}\n", "")
    assert farm(tmp_path, "version").stdout == f"{__version__}\n"
    short = farm(tmp_path, "-h")
    assert short.returncode == 0 and short.stdout == farm(tmp_path, "--help").stdout
    text = " ".join(short.stdout.split())
    for status in ("0 success", "2 bad input", "3 (run, sweep)", "4 (run, sweep)", "70 internal error",
                   "130 interrupted", "--version"):
        assert status in text, status
    sub = farm(tmp_path, "tasks", "list", "-h")
    assert sub.returncode == 0 and "--split" in sub.stdout


def test_usage_errors_name_the_command_and_its_help(tmp_path: Path) -> None:
    proc = farm(tmp_path, "run", "--batch", "0")
    assert proc.returncode == 2
    assert one_error_line(proc).startswith("error: farm run: Invalid value for '--batch'")
    assert proc.stderr.rstrip().endswith("see `farm run --help`")


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _adb_stub(tmp_path: Path) -> tuple[Path, Path]:
    """An `adb` that records every call and fails: any `adb start-server` a command ran shows in the record."""
    calls = tmp_path / "adb-calls"
    stub = tmp_path / "adb-stub"
    stub.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexit 1\n')
    stub.chmod(0o755)
    return stub, calls


def test_farm_devices_without_an_adb_server_says_so_and_starts_none(tmp_path: Path) -> None:
    import shutil

    port = free_port()
    adb = shutil.which("adb")
    # The real adb binary where adbutils would look for it: a server started implicitly would really listen.
    proc = farm(tmp_path, "devices", ANDROID_ADB_SERVER_PORT=str(port), ADBUTILS_ADB_PATH=adb or "")
    try:
        assert proc.returncode == 2
        line = one_error_line(proc)
        assert f"no adb server on 127.0.0.1:{port} (ANDROID_ADB_SERVER_PORT={port})" in line
        assert f"`adb -P {port} start-server`" in line
        assert not _listening(port)
    finally:
        if adb and _listening(port):
            subprocess.run([adb, "-P", str(port), "kill-server"], capture_output=True, timeout=30, check=False)


def test_no_command_runs_adb_start_server(tmp_path: Path) -> None:
    stub, calls = _adb_stub(tmp_path)
    port = str(free_port())
    # The control: adbutils on its own runs `adb start-server` when nothing answers.
    control = subprocess.run(
        [sys.executable, "-c", f"import adbutils\ntry:\n    adbutils.AdbClient(port={port}).list()\nexcept Exception:\n"
                               "    pass"],
        env=env_for(tmp_path, ANDROID_ADB_SERVER_PORT=port, ADBUTILS_ADB_PATH=str(stub)), capture_output=True,
        timeout=60, check=False)
    assert control.returncode == 0 and calls.read_text().split() == ["start-server"]
    calls.unlink()
    write_tasks(tmp_path / "t")
    for args in (("devices",), ("run", "--tasks-dir", "t"), ("pull", "--device", "X", "--run", "r"),
                 ("sim", "status"), ("web", "probe", "--backends", "android-chrome")):
        proc = farm(tmp_path, *args, ANDROID_ADB_SERVER_PORT=port, ADBUTILS_ADB_PATH=str(stub))
        assert proc.returncode in (0, 2), (args, proc.stderr)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
        assert not calls.exists(), (args, calls.read_text())
    assert not (tmp_path / "runs").exists()


def test_a_local_server_that_is_down_is_skipped_when_another_server_answers(tmp_path: Path) -> None:
    # farm.yaml lists a server that does not answer either: that one is the error, named as configured.
    other = free_port()
    (tmp_path / "farm.yaml").write_text(f"adb_servers: [{{host: 127.0.0.1, port: {other}}}]\n")
    proc = farm(tmp_path, "devices")
    assert proc.returncode == 2
    assert f"adb server 127.0.0.1:{other} (farm.yaml adb_servers): unreachable" in one_error_line(proc)


def test_a_worker_thread_that_dies_leaves_one_line_and_a_log(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    code = (
        "import sys, threading, farm.taskset.loader as loader\n"
        "real = loader.load_taskset\n"
        "def in_a_thread(*args, **kwargs):\n"
        "    def work():\n"
        "        raise LookupError('worker gave up')\n"
        "    t = threading.Thread(target=work, name='sweep-X')\n"
        "    t.start(); t.join()\n"
        "    return real(*args, **kwargs)\n"
        "loader.load_taskset = in_a_thread\n"
        "from farm.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    proc = farm(tmp_path, "tasks", "list", "--dir", "t", code=code)
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 1 + 6  # the main thread went on
    line = one_error_line(proc)
    assert line.startswith("error: internal error in thread sweep-X (LookupError: worker gave up); details in ")
    log = Path(line.rsplit("details in ", 1)[1])
    assert "Traceback" in log.read_text(encoding="utf-8") and "in work" in log.read_text(encoding="utf-8")
