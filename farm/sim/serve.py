"""`farm sim up/status/down`: phones in a background process, tracked by a state file."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from farm.errors import FarmError
from farm.fsutil import atomic_write_text
from farm.sim.profile import FaultSpec, PhoneProfile, default_profile, load_profile


class StatePhone(BaseModel):
    """One phone of a background sim."""

    model_config = ConfigDict(extra="forbid")

    serial: str
    """`127.0.0.1:PORT`."""
    port: int
    """Loopback port of its adbd."""
    root: str
    """Host directory backing its file system."""
    model: str
    """`ro.product.model`."""


class SimState(BaseModel):
    """The state file of `farm sim up` (one per user)."""

    model_config = ConfigDict(extra="forbid")

    pid: int
    """Process serving the phones."""
    adb_port: int
    """adb server the phones are attached to."""
    started_at: float
    """Unix time the phones came up."""
    log: str
    """Log file of the background process."""
    phones: list[StatePhone]
    """The phones it serves."""


def state_dir() -> Path:
    """`$FARM_SIM_STATE_DIR`, else `$XDG_RUNTIME_DIR/agent-farm/sim`, else `~/.cache/agent-farm/sim`."""
    if os.environ.get("FARM_SIM_STATE_DIR"):
        return Path(os.environ["FARM_SIM_STATE_DIR"])
    if os.environ.get("XDG_RUNTIME_DIR"):
        return Path(os.environ["XDG_RUNTIME_DIR"]) / "agent-farm" / "sim"
    return Path.home() / ".cache" / "agent-farm" / "sim"


def state_path() -> Path:
    """Where the state file of the running sim lives."""
    return state_dir() / "state.json"


def read_state() -> SimState | None:
    """The state of the running sim, or None (a stale file of a dead process is removed)."""
    path = state_path()
    if not path.exists():
        return None
    try:
        state = SimState.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise FarmError(f"{path}: unreadable sim state file", hint="delete it if no sim is running") from exc
    if not pid_alive(state.pid):
        path.unlink(missing_ok=True)
        return None
    return state


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (and is not a zombie of ours)."""
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def up(
    count: int,
    *,
    profile_file: Path | None,
    faults: FaultSpec,
    adb_port: int | None,
    timeout: float = 60,
) -> SimState:
    """Start `count` phones in a detached process and wait until they are attached."""
    from farm.sim.launcher import server_port

    if count < 1:
        raise FarmError("--count: must be at least 1")
    running = read_state()
    if running is not None:
        raise FarmError(
            f"a virtual farm is already running (pid {running.pid}, {len(running.phones)} phones)",
            hint="run `farm sim down` first",
        )
    if profile_file is not None:
        load_profile(profile_file)  # fail here, with a clear message, not in the background
    port = server_port(adb_port)
    directory = state_dir()
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "serve.log"
    argv = [sys.executable, "-m", "farm.sim", "--count", str(count), "--adb-port", str(port)]
    argv += ["--faults", faults.model_dump_json(), "--state-file", str(state_path())]
    if profile_file is not None:
        argv += ["--profile", str(profile_file.resolve())]
    with open(log, "ab") as handle:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=handle, stderr=handle, start_new_session=True, close_fds=True
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise FarmError(f"virtual farm failed to start: {tail[0]}", hint=f"see {log}")
        state = read_state()
        if state is not None and state.pid == proc.pid:
            return state
        time.sleep(0.1)
    proc.terminate()
    raise FarmError(f"virtual farm did not come up within {timeout:.0f}s", hint=f"see {log}")


def down(timeout: float = 20) -> SimState | None:
    """Stop the phones `up` started (SIGTERM, then SIGKILL) and detach them from adb."""
    state = read_state()
    if state is None:
        return None
    os.kill(state.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(state.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid_alive(state.pid):
        os.kill(state.pid, signal.SIGKILL)
    _disconnect(state)
    state_path().unlink(missing_ok=True)
    return state


def _disconnect(state: SimState) -> None:
    from adbutils import AdbClient, AdbError

    client = AdbClient(port=state.adb_port)
    for phone in state.phones:
        try:
            client.disconnect(phone.serial)
        except (AdbError, OSError):
            pass


def status() -> tuple[SimState | None, dict[str, str]]:
    """The running sim and each phone's state as its adb server sees it."""
    from adbutils import AdbClient, AdbError

    state = read_state()
    if state is None:
        return None, {}
    try:
        seen = {d.serial: d.state for d in AdbClient(port=state.adb_port).list()}
    except (AdbError, OSError):
        seen = {}
    return state, {p.serial: seen.get(p.serial, "not attached") for p in state.phones}


def serve(argv: list[str] | None = None) -> int:
    """Entry point of the background process (`python -m farm.sim`)."""
    from farm.sim.launcher import start_phones

    parser = argparse.ArgumentParser(prog="python -m farm.sim", description="Serve virtual phones until SIGTERM.")
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--faults", default="{}", help="FaultSpec as JSON")
    parser.add_argument("--adb-port", type=int)
    parser.add_argument("--state-file", type=Path)
    args = parser.parse_args(argv)
    profile: PhoneProfile = load_profile(args.profile) if args.profile else default_profile()
    faults = FaultSpec.model_validate(json.loads(args.faults))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    farm = start_phones(args.count, profile=profile, faults=faults, adb_port=args.adb_port)
    try:
        state = SimState(
            pid=os.getpid(),
            adb_port=farm.adb_port,
            started_at=time.time(),
            log=str(args.state_file.parent / "serve.log") if args.state_file else "",
            phones=[StatePhone(serial=p.serial, port=p.port, root=str(p.root), model=p.profile.model)
                    for p in farm.phones],
        )
        if args.state_file:
            atomic_write_text(args.state_file, state.model_dump_json(indent=2))
        print(" ".join(p.serial for p in farm.phones), flush=True)
        while not stop.wait(0.2):
            pass
    finally:
        farm.stop()
        if args.state_file:
            args.state_file.unlink(missing_ok=True)
    return 0
