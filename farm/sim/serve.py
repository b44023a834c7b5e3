"""`farm sim up/status/down`: phones in a background process, tracked by a state file."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from farm.errors import FarmError
from farm.fsutil import atomic_write_text
from farm.sim.phone import OWNER_MARKER, ROOT_PREFIX
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
    owner_token: str = ""
    """The token in the owner marker beside `root`: `down` removes a root only when the two match."""


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
    created_dirs: list[str] = Field(default_factory=list)
    """State directories `up` had to create (deepest first); `down` removes them again when empty."""


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


def _load_state() -> SimState | None:
    path = state_path()
    if not path.exists():
        return None
    try:
        return SimState.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise FarmError(f"{path}: unreadable sim state file", hint="delete it if no sim is running") from exc


def read_state() -> SimState | None:
    """The state of the running sim, or None (what a dead one left behind is removed, its log kept)."""
    state = _load_state()
    if state is None:
        return None
    if not serves(state):
        _remove_leftovers(state, with_log=False)
        return None
    return state


def serves(state: SimState) -> bool:
    """Whether the state's pid is alive and is the `python -m farm.sim` serving this state file.

    A pid that was reused by another process is not ours: nothing is signalled or kept for it.
    """
    if not pid_alive(state.pid):
        return False
    try:
        argv = Path(f"/proc/{state.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc to ask: trust the live pid, as before
    ours = {os.fsencode(state_path()), os.fsencode(state_path().absolute())}
    return b"farm.sim" in argv and bool(ours & set(argv))


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
    created = [d for d in (directory, *directory.parents) if not d.exists()]
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "serve.log"
    argv = [sys.executable, "-m", "farm.sim", "--count", str(count), "--adb-port", str(port)]
    argv += ["--faults", faults.model_dump_json(), "--state-file", str(state_path().absolute())]
    for made in created:
        argv += ["--created-dir", str(made)]
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
    """Stop the phones `up` started (SIGTERM, then SIGKILL), detach them from adb and remove what `up`
    created: the phones' file systems, the state file, the log and the state directories it made.

    Returns None when no sim was running (what a dead one left behind is still removed).
    """
    state = _load_state()
    if state is None:
        return None
    running = serves(state)
    if running:
        os.kill(state.pid, signal.SIGTERM)
        if not _wait_gone(state.pid, timeout):
            os.kill(state.pid, signal.SIGKILL)
            if not _wait_gone(state.pid, 10):
                raise FarmError(f"virtual farm pid {state.pid} does not exit", hint="its files are left in place")
    _disconnect(state)
    _remove_leftovers(state, with_log=True)
    return state if running else None


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def _remove_leftovers(state: SimState, *, with_log: bool) -> None:
    """Remove what `up` created, and only that: every path is checked, nothing is taken from the file on trust."""
    for phone in state.phones:
        remove_phone_root(Path(phone.root), phone.owner_token)
    state_path().unlink(missing_ok=True)
    if not with_log:
        return
    directory = state_dir()
    (directory / "serve.log").unlink(missing_ok=True)
    # Only the state directory and its parents, deepest first and in an unbroken chain, as `up` made them.
    for made, expected in zip(state.created_dirs, (directory, *directory.parents), strict=False):
        if Path(made) != expected:
            break
        try:
            expected.rmdir()  # only when empty: anything else put there stays
        except OSError:
            break


def remove_phone_root(root: Path, token: str) -> bool:
    """Remove the temp directory around a phone's root if a phone made it: the directory is named
    `farm-sim-phone-*`, is no symlink, is owned by this user and holds the owner marker with `token`."""
    box = root.parent
    try:
        if not token or root.name != "fs" or not box.name.startswith(ROOT_PREFIX) or not box.is_absolute():
            return False
        if Path(os.path.realpath(box)) != box:
            return False
        st = os.lstat(box)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            return False
        fd = os.open(box / OWNER_MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode) or os.read(fd, 256).decode("ascii", "replace").strip() != token:
                return False
        finally:
            os.close(fd)
    except OSError:
        return False
    shutil.rmtree(box, ignore_errors=True)
    return True


def _disconnect(state: SimState) -> None:
    from adbutils import AdbClient, AdbError

    client = AdbClient(port=state.adb_port)
    # Virtual phones are always on loopback: a serial the state file names elsewhere is not ours to detach.
    for phone in state.phones:
        if not phone.serial.startswith("127.0.0.1:"):
            continue
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
    parser.add_argument("--created-dir", action="append", default=[], help="a state directory `up` created")
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
            phones=[StatePhone(serial=p.serial, port=p.port, root=str(p.root), model=p.profile.model,
                               owner_token=p.state.owner_token) for p in farm.phones],
            created_dirs=list(args.created_dir),
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
