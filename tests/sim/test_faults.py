"""Injected faults as adbutils and the adb server see them."""

from __future__ import annotations

import time
from pathlib import Path

import adbutils
import pytest

from farm.sim.launcher import SimPhone
from farm.sim.profile import FaultSpec
from tests.helpers.phones import FarmFactory


def device(phone: SimPhone) -> adbutils.AdbDevice:
    return adbutils.AdbClient(port=phone.adb_port).device(phone.serial)


def state_of(phone: SimPhone) -> str | None:
    return {d.serial: d.state for d in adbutils.AdbClient(port=phone.adb_port).list()}.get(phone.serial)


def test_disconnect_after_seconds_surfaces_as_error(virtual_farm: FarmFactory) -> None:
    phone = virtual_farm(1, faults=FaultSpec(disconnect_after_s=1.0))[0]
    d = device(phone)
    started = time.monotonic()
    with pytest.raises((adbutils.AdbError, EOFError, OSError)):
        d.shell2("sleep 30", v2=True)  # the link drops ~1 s after the handshake, long before this ends
    # The drop is due 1 s after the handshake; generous slack for a loaded machine, far below 30 s.
    assert time.monotonic() - started < 6


def test_disconnect_after_bytes_breaks_a_pull(virtual_farm: FarmFactory, tmp_path: Path) -> None:
    phone = virtual_farm(1, faults=FaultSpec(disconnect_after_bytes=300_000))[0]
    (phone.root / "sdcard/Download/big.bin").write_bytes(b"x" * 2_000_000)
    with pytest.raises((adbutils.AdbError, EOFError, OSError)):
        device(phone).sync.pull("/sdcard/Download/big.bin", str(tmp_path / "big.bin"))


def test_stalled_stream_times_out(virtual_farm: FarmFactory) -> None:
    phone = virtual_farm(1, faults=FaultSpec(stall_after_bytes=100))[0]
    (phone.root / "sdcard/Download/log.txt").write_text("y" * 10_000)
    d = device(phone)
    with pytest.raises(adbutils.AdbTimeout):
        d.shell("cat /sdcard/Download/log.txt", timeout=1)


def test_slow_link_paces_output(virtual_farm: FarmFactory) -> None:
    phone = virtual_farm(1, faults=FaultSpec(slow_link_bps=200_000))[0]
    (phone.root / "sdcard/Download/f.bin").write_bytes(b"z" * 300_000)
    started = time.monotonic()
    data = device(phone).sync.read_bytes("/sdcard/Download/f.bin")
    assert data == b"z" * 300_000
    assert time.monotonic() - started >= 1.0  # 300 kB at 200 kB/s cannot arrive sooner


def test_unauthorized_state_is_seen_by_the_server(virtual_farm: FarmFactory) -> None:
    phone = virtual_farm(1, faults=FaultSpec(state="unauthorized"))[0]
    assert state_of(phone) == "unauthorized"
    with pytest.raises(adbutils.AdbError, match="unauthorized"):
        device(phone).shell("echo no")


def test_offline_state_is_seen_by_the_server(virtual_farm: FarmFactory) -> None:
    phone = virtual_farm(1, faults=FaultSpec(state="offline"))[0]
    assert state_of(phone) == "offline"
    with pytest.raises(adbutils.AdbError, match="offline"):
        device(phone).shell("echo no")


def _wait_state(phone: SimPhone, want: str, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if state_of(phone) == want:
            return True
        time.sleep(0.1)
    return False


def test_dropped_link_comes_back_healthy(virtual_farm: FarmFactory) -> None:
    phone = virtual_farm(1, faults=FaultSpec(disconnect_after_s=0.5))[0]
    deadline = time.monotonic() + 20
    while phone.state.link_drops == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert phone.state.link_drops == 1
    assert _wait_state(phone, "device")  # the adb server reconnects; the fault fired once
    assert device(phone).shell("echo back") == "back"
    assert phone.state.link_drops == 1


def test_unplugged_phone_stops_answering(virtual_farm: FarmFactory) -> None:
    from farm.sim.launcher import SimFarm

    farm = SimFarm(virtual_farm(1)[0].adb_port)
    try:
        phone = farm.add(1)[0]
        assert device(phone).shell("echo up") == "up"
        farm.unplug(phone)
        with pytest.raises((adbutils.AdbError, EOFError, OSError)):
            for _ in range(50):
                device(phone).shell2("echo gone", v2=True)
                time.sleep(0.1)
    finally:
        farm.stop()
