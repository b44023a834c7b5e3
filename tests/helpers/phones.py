"""Fixtures that start an isolated adb server (private port) and virtual phones.

Tests never touch a developer's adb server: the session gets its own server on a free port,
`ANDROID_ADB_SERVER_PORT` points at it for each test, and `adbutils.adb` (which uiautomator2
uses) is swapped for a client of that server.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator

import pytest

from farm.sim.launcher import SimFarm, SimPhone, free_port, kill_adb_server, start_adb_server
from farm.sim.profile import FaultSpec, PhoneProfile

FarmFactory = Callable[..., list[SimPhone]]


_SERVER: dict[str, int] = {}


def private_adb_port(config: pytest.Config) -> int:
    """A real adb server on a free loopback port, started once per session and killed at its end."""
    if "port" not in _SERVER:
        port = free_port()
        start_adb_server(port)
        _SERVER["port"] = port

        def stop() -> None:
            kill_adb_server(_SERVER.pop("port"))

        config.add_cleanup(stop)
    return _SERVER["port"]


def use_private_adb(port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point adbutils, uiautomator2 and farm at the adb server on `port` for one test."""
    import adbutils

    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(port))
    monkeypatch.setenv("ADBUTILS_ADB_PATH", shutil.which("adb") or "/usr/bin/adb")
    client = adbutils.AdbClient(port=port)
    monkeypatch.setattr(adbutils, "adb", client)
    monkeypatch.setattr(adbutils, "device", client.device)


@pytest.fixture
def virtual_farm(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[FarmFactory]:
    """Factory `virtual_farm(n, profile=None, faults=None) -> list[SimPhone]`; all stopped after the test."""
    adb_port = private_adb_port(request.config)
    use_private_adb(adb_port, monkeypatch)
    farms: list[SimFarm] = []

    def make(n: int = 1, profile: PhoneProfile | None = None, faults: FaultSpec | None = None) -> list[SimPhone]:
        farm = SimFarm(adb_port)
        farms.append(farm)
        return farm.add(n, profile=profile, faults=faults)

    try:
        yield make
    finally:
        for farm in farms:
            farm.stop()


@pytest.fixture
def virtual_phone(virtual_farm: FarmFactory) -> SimPhone:
    """One default virtual phone attached to the private adb server."""
    return virtual_farm(1)[0]
