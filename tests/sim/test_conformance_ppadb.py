"""pure-python-adb (PyPI `pure-python-adb`, module `ppadb`), a client of the adb server, drives the phone as it
drives a real one: shell, exec, sync, screencap, framebuffer, logcat, forward, reverse, root, remount, features,
refusals. Where ppadb has no call for an operation (exec, stat, list, framebuffer), its own connection to the
server carries the request, as a ppadb user would write it.
"""

from __future__ import annotations

import io
import socket
import struct
from pathlib import Path

import pytest
from PIL import Image
from ppadb.connection import Connection
from ppadb.device import Device

from farm.sim.launcher import SimPhone, free_port
from farm.sim.profile import default_profile
from tests.helpers.echo import upper_echo_server
from tests.helpers.phones import FarmFactory
from tests.sim.clients import logcat_tasks, phone_loop, ppadb_device, wait_until

S_IFMT, S_IFDIR, S_IFREG = 0o170000, 0o040000, 0o100000


def read_exact(conn: Connection, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.read(n - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {n} bytes")
        data += chunk
    return data


def service(device: Device, name: str) -> Connection:
    conn = device.create_connection()
    conn.send(name)
    return conn


def sync_request(conn: Connection, ident: bytes, path: str) -> None:
    raw = path.encode()
    conn.write(ident + struct.pack("<I", len(raw)) + raw)


def test_shell_properties_packages(virtual_phone: SimPhone) -> None:
    d = ppadb_device(virtual_phone)
    assert d.shell("echo hello; echo err >&2") == "hello\nerr\n"
    assert d.get_properties()["ro.product.model"] == virtual_phone.profile.model
    assert "com.android.settings" in d.list_packages()
    assert d.is_installed("com.android.settings") and not d.is_installed("com.example.absent")


def test_exec_keeps_bytes_raw(virtual_phone: SimPhone) -> None:
    (virtual_phone.root / "sdcard/bin.dat").write_bytes(bytes(range(256)) * 8)
    with service(ppadb_device(virtual_phone), "exec:cat /sdcard/bin.dat") as conn:
        assert bytes(conn.read_all()) == bytes(range(256)) * 8


def test_push_pull_round_trip(virtual_phone: SimPhone, tmp_path: Path) -> None:
    d = ppadb_device(virtual_phone)
    payload = bytes((i * 7) & 0xFF for i in range(300_000))
    (tmp_path / "up.bin").write_bytes(payload)
    d.push(str(tmp_path / "up.bin"), "/sdcard/Download/up.bin")
    assert (virtual_phone.root / "sdcard/Download/up.bin").read_bytes() == payload
    assert d.pull("/sdcard/Download/up.bin", str(tmp_path / "down.bin")) is None
    assert (tmp_path / "down.bin").read_bytes() == payload
    error = d.pull("/sdcard/none.bin", str(tmp_path / "none.bin"))
    assert error is not None and "No such file or directory" in error


def test_stat_through_the_sync_connection(virtual_phone: SimPhone) -> None:
    (virtual_phone.root / "sdcard/Documents/n.txt").write_bytes(b"12345")
    with ppadb_device(virtual_phone).sync() as conn:
        replies = []
        for path in ("/sdcard/Documents/n.txt", "/sdcard/Documents", "/sdcard/missing"):
            sync_request(conn, b"STAT", path)
            replies.append(struct.unpack("<4sIII", read_exact(conn, 16)))
    (_, file_mode, file_size, _), (_, dir_mode, _, _), missing = replies
    assert (file_mode & S_IFMT, file_size) == (S_IFREG, 5)
    assert dir_mode & S_IFMT == S_IFDIR
    assert missing == (b"STAT", 0, 0, 0)


def test_list_of_a_large_directory(virtual_phone: SimPhone) -> None:
    big = virtual_phone.root / "sdcard/Pictures/many"
    big.mkdir()
    expected = {f"p{i:05d}.png": i % 50 for i in range(3000)}
    for name, size in expected.items():
        (big / name).write_bytes(b"p" * size)
    listed: dict[str, int] = {}
    with ppadb_device(virtual_phone).sync() as conn:
        sync_request(conn, b"LIST", "/sdcard/Pictures/many")
        while True:
            ident, mode, size, _mtime, namelen = struct.unpack("<4sIIII", read_exact(conn, 20))
            if ident == b"DONE":
                break
            assert ident == b"DENT" and mode
            listed[read_exact(conn, namelen).decode()] = size
    assert {k: v for k, v in listed.items() if k not in (".", "..")} == expected


def test_screencap_png(virtual_phone: SimPhone) -> None:
    png = ppadb_device(virtual_phone).screencap()
    with Image.open(io.BytesIO(png)) as img:
        assert img.size == (virtual_phone.profile.screen.width, virtual_phone.profile.screen.height)


def test_framebuffer_through_the_server(virtual_phone: SimPhone) -> None:
    with service(ppadb_device(virtual_phone), "framebuffer:") as conn:
        header = struct.unpack("<14I", read_exact(conn, 56))
        pixels = read_exact(conn, header[3])
    width, height = virtual_phone.profile.screen.width, virtual_phone.profile.screen.height
    assert header[:6] == (2, 32, 1, width * height * 4, width, height)
    png = Image.open(io.BytesIO(ppadb_device(virtual_phone).screencap()))
    assert pixels == png.convert("RGBA").tobytes()


def test_logcat_dump_returns(virtual_phone: SimPhone) -> None:
    d = ppadb_device(virtual_phone)
    d.shell("logcat -c")
    assert "beginning of" not in d.shell("logcat -d -b crash")
    d.shell("log -p d -t Ppadb 'through the server'")
    assert d.shell("logcat -d -v tag -s Ppadb") == "--------- beginning of main\nD/Ppadb   : through the server\n"
    assert d.shell("echo alive") == "alive\n"


def test_streaming_logcat_closed_by_the_client(virtual_phone: SimPhone) -> None:
    d = ppadb_device(virtual_phone)
    seen: list[bytes] = []

    def read_until_line(conn: Connection) -> None:
        # ppadb hands the open shell connection over: read until the line comes, then hang up.
        loop = phone_loop(virtual_phone)
        ppadb_device(virtual_phone).shell("log -t Watch 'seen live'")
        data = b""
        while b"seen live\n" not in data:
            chunk = conn.read(4096)
            if not chunk:
                break
            data += chunk
        conn.close()
        seen.append(data)
        wait_until(lambda: not logcat_tasks(loop), "the streaming logcat to end")

    d.shell("logcat -v raw -s Watch", handler=read_until_line)
    assert seen == [b"--------- beginning of main\nseen live\n"]
    wait_until(lambda: not virtual_phone.state.logs.waiters, "the streaming logcat to end")


def test_forward_reaches_a_device_socket(virtual_farm: FarmFactory) -> None:
    echo, echo_port = upper_echo_server()
    profile = default_profile()
    profile.chrome_devtools = f"127.0.0.1:{echo_port}"
    phone = virtual_farm(1, profile=profile)[0]
    d = ppadb_device(phone)
    local = f"tcp:{free_port()}"
    d.forward(local, "localabstract:chrome_devtools_remote")
    try:
        assert d.list_forward() == {local: "localabstract:chrome_devtools_remote"}
        with socket.create_connection(("127.0.0.1", int(local[4:])), timeout=10) as sock:
            sock.sendall(b"ping through the forward")
            got = b""
            while len(got) < 24:
                got += sock.recv(64)
        assert got == b"PING THROUGH THE FORWARD"
    finally:
        d.killforward(local)
        echo.close()
    assert d.list_forward() == {}


def test_reverse_answers_as_adbd(virtual_phone: SimPhone) -> None:
    d = ppadb_device(virtual_phone)
    # ppadb joins remote and local with ':' where adbd wants ';': a real phone refuses it the same way.
    with pytest.raises(RuntimeError, match="bad forward: tcp:8080:tcp:9090"):
        d.reverse("tcp:8080", "tcp:9090")
    with service(d, "reverse:forward:tcp:8080;tcp:9090") as conn:
        assert conn.read(4) == b"OKAY"
    assert d.list_reverses() == [{"remote": "tcp:8080", "local": "tcp:9090"}]


def test_root_remount_and_features(virtual_phone: SimPhone) -> None:
    d = ppadb_device(virtual_phone)
    with pytest.raises(RuntimeError, match="adbd cannot run as root in production builds"):
        d.root()
    assert d.remount() is True
    features = d.list_features()
    assert features["android.hardware.touchscreen"] is True
    assert features["android.hardware.vulkan.level"] == "1"
    assert "android.hardware.type.watch" not in features


def test_refused_services_fail_with_closed(virtual_phone: SimPhone) -> None:
    d = ppadb_device(virtual_phone)
    for name in ("tcp:4444", "no-such-service:", "localabstract:nothing"):
        with pytest.raises(RuntimeError, match="closed"):
            service(d, name)
    assert d.shell("echo still-serving") == "still-serving\n"
