"""adb-shell (PyPI `adb-shell`), a client of the device protocol over TCP without an adb server, drives the
phone as it drives a real one: shell, exec, sync, screencap, framebuffer, logcat, root, refusals, auth.

adb-shell has no forward API (a direct client opens `tcp:`/`localabstract:` streams itself: see the refusal test).
"""

from __future__ import annotations

import hashlib
import io
import re
import struct
import threading
from pathlib import Path

import pytest
from adb_shell.adb_device import AdbDeviceTcp
from adb_shell.auth.sign_pythonrsa import PythonRSASigner
from adb_shell.exceptions import (
    AdbCommandFailureException,
    AdbTimeoutError,
    DeviceAuthError,
    PushFailedError,
    TcpTimeoutException,
)
from PIL import Image

from farm.sim.launcher import SimPhone
from farm.sim.profile import FaultSpec
from tests.helpers.phones import FarmFactory
from tests.sim.clients import adb, wait_until

S_IFMT, S_IFDIR, S_IFREG = 0o170000, 0o040000, 0o100000


def test_shell_and_exec(direct: AdbDeviceTcp, virtual_phone: SimPhone) -> None:
    assert direct.shell("getprop ro.product.model") == virtual_phone.profile.model + "\n"
    assert direct.shell("ls /no/such; echo status=$?").endswith("status=1\n")
    assert direct.exec_out("echo raw") == "raw\n"
    lines = list(direct.streaming_shell("echo a; echo b"))
    assert "".join(lines) == "a\nb\n"


def test_sync_stat_of_file_directory_and_missing(direct: AdbDeviceTcp, virtual_phone: SimPhone) -> None:
    (virtual_phone.root / "sdcard/Music/song.mp3").write_bytes(b"\x00" * 1234)
    mode, size, mtime = direct.stat("/sdcard/Music/song.mp3")
    assert (mode & S_IFMT, size) == (S_IFREG, 1234) and mtime > 0
    assert direct.stat("/sdcard/Music")[0] & S_IFMT == S_IFDIR
    assert direct.stat("/sdcard/no-such-file") == (0, 0, 0)


def test_sync_list_of_a_large_directory(direct: AdbDeviceTcp, virtual_phone: SimPhone) -> None:
    big = virtual_phone.root / "sdcard/DCIM/many"
    big.mkdir()
    expected = {f"IMG_{i:05d}.jpg": i % 97 for i in range(3000)}
    for name, size in expected.items():
        (big / name).write_bytes(b"j" * size)
    entries = direct.list("/sdcard/DCIM/many")
    listed = {bytes(e.filename).decode(): e.size for e in entries if bytes(e.filename) not in (b".", b"..")}
    assert listed == expected
    assert all(e.mode & S_IFMT == S_IFREG for e in entries if bytes(e.filename) not in (b".", b".."))


def test_sync_push_and_pull_round_trip(direct: AdbDeviceTcp, virtual_phone: SimPhone, tmp_path: Path) -> None:
    payload = hashlib.sha256(b"seed").digest() * 40000  # 1.28 MB: many DATA chunks each way
    (tmp_path / "up.bin").write_bytes(payload)
    direct.push(str(tmp_path / "up.bin"), "/sdcard/Download/new/dir/up.bin", st_mode=0o100600, mtime=1700000000)
    stored = virtual_phone.root / "sdcard/Download/new/dir/up.bin"
    assert stored.read_bytes() == payload and int(stored.stat().st_mtime) == 1700000000
    assert stored.stat().st_mode & 0o777 == 0o600
    direct.pull("/sdcard/Download/new/dir/up.bin", str(tmp_path / "down.bin"))
    assert (tmp_path / "down.bin").read_bytes() == payload


def test_sync_failures_carry_adbds_message(direct: AdbDeviceTcp, tmp_path: Path) -> None:
    with pytest.raises(AdbCommandFailureException, match="No such file or directory"):
        direct.pull("/sdcard/missing.bin", str(tmp_path / "x"))
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(PushFailedError, match="Is a directory"):
        direct.push(str(tmp_path / "f"), "/sdcard/Download")
    assert direct.shell("echo after-failures") == "after-failures\n"


def test_screencap_png(direct: AdbDeviceTcp, virtual_phone: SimPhone) -> None:
    png = direct.exec_out("screencap -p", decode=False)
    assert isinstance(png, bytes) and png.startswith(b"\x89PNG\r\n\x1a\n")
    with Image.open(io.BytesIO(png)) as img:
        assert img.size == (virtual_phone.profile.screen.width, virtual_phone.profile.screen.height)


def test_framebuffer(direct: AdbDeviceTcp, virtual_phone: SimPhone) -> None:
    # No framebuffer API in adb-shell: its generic service call (the one root() uses) reads the stream to CLSE.
    raw = direct._service(b"framebuffer", b"", read_timeout_s=10, decode=False)
    assert isinstance(raw, bytes)
    version, bpp, _cs, size, width, height = struct.unpack_from("<6I", raw)
    assert (version, bpp) == (2, 32)
    assert (width, height) == (virtual_phone.profile.screen.width, virtual_phone.profile.screen.height)
    assert size == width * height * 4 == len(raw) - 56


def test_logcat_dump_returns(direct: AdbDeviceTcp) -> None:
    direct.shell("logcat -c")
    assert "beginning of" not in direct.shell("logcat -d -b crash")
    direct.shell("log -p e -t Direct 'over tcp'")
    brief = direct.shell("logcat -d -v brief -s Direct").splitlines()
    assert brief[0] == "--------- beginning of main" and len(brief) == 2
    assert re.fullmatch(r"E/Direct  \( *\d+\): over tcp", brief[1])
    assert direct.shell("logcat -d Direct:Z; echo status=$?") == (
        "logcat: Invalid filter expression 'Direct:Z'.\nstatus=1\n")
    assert direct.shell("echo alive") == "alive\n"


def test_streaming_logcat_on_the_direct_transport(direct: AdbDeviceTcp, virtual_phone: SimPhone) -> None:
    # Another client (the adb CLI, through the server) logs while this one streams; -m 1 ends the stream.
    def log_once_reader_waits() -> None:
        wait_until(lambda: bool(virtual_phone.state.logs.waiters), "the direct logcat to wait")
        adb(virtual_phone, "shell", "log -t Stream 'from the other client'")

    writer = threading.Thread(target=log_once_reader_waits, daemon=True)
    writer.start()
    lines = "".join(direct.streaming_shell("logcat -v raw -m 1 -s Stream", read_timeout_s=30)).splitlines()
    writer.join(30)
    assert lines == ["--------- beginning of main", "from the other client"]
    assert not virtual_phone.state.logs.waiters


def test_root_answers_and_refusals_never_leave_the_transport_stuck(direct: AdbDeviceTcp) -> None:
    direct.root()  # answered (a silent phone times out here)
    assert direct._service(b"unroot", b"", read_timeout_s=5) == "adbd not running as root\n"
    # A refused OPEN is CLSE(0, id): adb-shell waits for an OKAY that never comes, as with a real phone.
    with pytest.raises((AdbTimeoutError, TcpTimeoutException)):
        direct._service(b"tcp", b"4444", read_timeout_s=1)
    assert direct.shell("echo still-here") == "still-here\n"


def test_auth_is_answered_by_a_phone_that_asks(virtual_farm: FarmFactory, adb_key: PythonRSASigner) -> None:
    phone = virtual_farm(1, faults=FaultSpec(state="unauthorized"))[0]
    device = AdbDeviceTcp("127.0.0.1", phone.port, default_transport_timeout_s=3)
    # The phone sends AUTH tokens and accepts no key: the client signs, offers its key, then gives up.
    with pytest.raises((DeviceAuthError, TcpTimeoutException, AdbTimeoutError)):
        device.connect(rsa_keys=[adb_key], auth_timeout_s=2, read_timeout_s=2)
    device.close()
