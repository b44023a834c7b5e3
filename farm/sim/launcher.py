"""Start virtual phones in a background thread and attach them to an adb server.

Library API: `start_phones(count, profile=…, faults=…, adb_port=…) -> SimFarm`, `SimFarm.stop()`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from farm.errors import FarmError
from farm.sim.adbd import AdbDaemon
from farm.sim.phone import PhoneState
from farm.sim.profile import FaultSpec, PhoneProfile, default_profile
from farm.sim.services import route

T = TypeVar("T")
DEFAULT_ADB_PORT = 5037


def adb_binary() -> str:
    """The adb CLI to use (`ADBUTILS_ADB_PATH`, else `adb` on PATH)."""
    path = os.environ.get("ADBUTILS_ADB_PATH") or shutil.which("adb")
    if not path or not os.path.exists(path):
        raise FarmError("adb: command not found", hint="install the Debian package `adb` (apt-get install adb)")
    return path


def server_port(adb_port: int | None = None) -> int:
    """The adb server port: explicit, else ANDROID_ADB_SERVER_PORT, else 5037."""
    if adb_port:
        return adb_port
    return int(os.environ.get("ANDROID_ADB_SERVER_PORT") or DEFAULT_ADB_PORT)


def run_adb(adb_port: int, *args: str, timeout: float = 30) -> str:
    """Run `adb -P PORT args…` and return its stdout (FarmError on failure)."""
    argv = [adb_binary(), "-P", str(adb_port), *args]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise FarmError(f"adb -P {adb_port} {' '.join(args)}: timed out", hint="is the adb server stuck?") from exc
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip().splitlines()
        raise FarmError(f"adb -P {adb_port} {' '.join(args)}: {message[-1] if message else 'failed'}")
    return done.stdout


def start_adb_server(adb_port: int) -> None:
    """`adb -P PORT start-server` (a no-op when one already answers there)."""
    run_adb(adb_port, "start-server", timeout=60)


def kill_adb_server(adb_port: int) -> None:
    """`adb -P PORT kill-server`, ignoring a server that is not running."""
    try:
        run_adb(adb_port, "kill-server", timeout=30)
    except FarmError:
        pass


def free_port() -> int:
    """A currently free loopback TCP port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _cancel_pending() -> None:
    """Cancel what still runs on the loop (streams of dropped links) so nothing is left pending."""
    current = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class _LoopThread:
    """An asyncio loop in a daemon thread; phones live on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="farm-sim-loop", daemon=True)
        self.thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        try:
            self.call(_cancel_pending(), timeout=5)
        except Exception:  # noqa: BLE001 - shutting down regardless
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        if not self.loop.is_running():
            self.loop.close()


@dataclass
class SimPhone:
    """Handle of one running virtual phone."""

    serial: str
    """`127.0.0.1:PORT`, the serial the adb server lists."""
    port: int
    """Loopback port of the phone's adbd."""
    root: Path
    """Host directory backing the phone's file system (`/sdcard` is `root/sdcard`)."""
    adb_port: int
    """Port of the adb server the phone is attached to."""
    profile: PhoneProfile
    """The phone's profile (its own copy)."""
    state: PhoneState = field(repr=False)
    """Live phone state (UI, settings, reverse forwards…)."""


class SimFarm:
    """Running phones, their event loop, and the adb server they are attached to."""

    def __init__(self, adb_port: int) -> None:
        self.adb_port = adb_port
        self.phones: list[SimPhone] = []
        self._loop = _LoopThread()
        self._daemons: list[AdbDaemon] = []
        self._stopped = False

    def add(
        self,
        count: int = 1,
        *,
        profile: PhoneProfile | None = None,
        faults: FaultSpec | None = None,
        connect: bool = True,
        ports: list[int] | None = None,
    ) -> list[SimPhone]:
        """Start `count` more phones; attach them with `adb connect` unless connect=False."""
        base = profile or default_profile()
        new: list[SimPhone] = []
        for index in range(count):
            prof = base.model_copy(deep=True)
            # The n-th phone of a farm draws its simulated outcomes from seed + n: reproducible,
            # yet two phones do not report identical results.
            prof.agent.seed = base.agent.seed + len(self.phones)
            if faults is not None:
                prof.faults = faults.model_copy(deep=True)
            state = PhoneState(prof)
            daemon = AdbDaemon(state, route, ports[index] if ports else 0)
            port = self._loop.call(daemon.start())
            self._daemons.append(daemon)
            phone = SimPhone(state.serial, port, state.root, self.adb_port, prof, state)
            self.phones.append(phone)
            new.append(phone)
        if connect:
            for phone in new:
                self.connect(phone)
        return new

    def connect(self, phone: SimPhone, timeout: float = 20) -> None:
        """`adb connect` the phone and wait until the server lists it in its fault state."""
        from adbutils import AdbClient

        client = AdbClient(port=self.adb_port)
        want = phone.profile.faults.state
        if want == "offline":
            # The server waits ~10 s for a CNXN that never comes; it lists the phone offline meanwhile.
            threading.Thread(target=self._connect_quietly, args=(phone, timeout), daemon=True).start()
        else:
            message = client.connect(phone.serial, timeout=timeout)
            if "connected" not in message and want == "device":
                raise FarmError(f"{phone.serial}: adb connect failed: {message.strip()}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = {d.serial: d.state for d in client.list()}
            if states.get(phone.serial) == want:
                return
            time.sleep(0.05)
        raise FarmError(f"{phone.serial}: not listed as {want} by the adb server on port {self.adb_port}")

    def _connect_quietly(self, phone: SimPhone, timeout: float) -> None:
        from adbutils import AdbClient, AdbError

        try:
            AdbClient(port=self.adb_port).connect(phone.serial, timeout=timeout)
        except (AdbError, OSError):
            pass

    def unplug(self, phone: SimPhone) -> None:
        """Stop one phone's adbd for good (as a pulled cable): the adb server cannot reconnect it."""
        index = self.phones.index(phone)
        self._loop.call(self._daemons[index].stop(), timeout=10)

    def disconnect(self, phone: SimPhone) -> None:
        """`adb disconnect` the phone (ignores a server that is already gone)."""
        from adbutils import AdbClient, AdbError

        try:
            AdbClient(port=self.adb_port).disconnect(phone.serial)
        except (AdbError, OSError):
            pass

    def stop(self) -> None:
        """Disconnect and stop every phone, remove their file systems, end the loop."""
        if self._stopped:
            return
        self._stopped = True
        for phone in self.phones:
            self.disconnect(phone)
        for daemon in self._daemons:
            try:
                self._loop.call(daemon.stop(), timeout=10)
            except Exception:  # noqa: BLE001 - best effort at shutdown
                pass
        self._loop.close()
        for phone in self.phones:
            phone.state.close()

    def __enter__(self) -> SimFarm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_phones(
    count: int,
    *,
    profile: PhoneProfile | None = None,
    faults: FaultSpec | None = None,
    adb_port: int | None = None,
    start_server: bool = True,
) -> SimFarm:
    """Start `count` phones and attach them to the adb server on `adb_port` (started if needed)."""
    port = server_port(adb_port)
    if start_server:
        start_adb_server(port)
    farm = SimFarm(port)
    try:
        farm.add(count, profile=profile, faults=faults)
    except BaseException:
        farm.stop()
        raise
    return farm
