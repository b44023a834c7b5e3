"""The transport through the real adb server: handshake, streams, flow control, malformed packets."""

from __future__ import annotations

import socket
import struct
import subprocess
from concurrent.futures import ThreadPoolExecutor

import adbutils

from farm.sim.adbd import A_CNXN, A_OKAY, A_OPEN, A_VERSION
from farm.sim.launcher import SimPhone, adb_binary
from farm.sim.profile import PhoneProfile, default_profile
from tests.helpers.echo import upper_echo_server
from tests.helpers.phones import FarmFactory


def adb(phone: SimPhone, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [adb_binary(), "-P", str(phone.adb_port), *args], capture_output=True, text=True, timeout=60, check=False
    )


def device(phone: SimPhone) -> adbutils.AdbDevice:
    return adbutils.AdbClient(port=phone.adb_port).device(phone.serial)


def test_adb_devices_lists_phone_with_model(virtual_phone: SimPhone) -> None:
    out = adb(virtual_phone, "devices", "-l").stdout
    line = next(line for line in out.splitlines() if line.startswith(virtual_phone.serial))
    model = virtual_phone.profile.model.replace(" ", "_")
    assert " device " in line and f"model:{model}" in line and f"product:{virtual_phone.profile.name}" in line


def test_adb_shell_getprop_prints_model(virtual_phone: SimPhone) -> None:
    done = adb(virtual_phone, "-s", virtual_phone.serial, "shell", "getprop", "ro.product.model")
    assert done.returncode == 0
    assert done.stdout.strip() == virtual_phone.profile.model


def test_adb_shell_v2_exit_status_reaches_cli(virtual_phone: SimPhone) -> None:
    done = adb(virtual_phone, "-s", virtual_phone.serial, "shell", "ls /no/such/dir")
    assert done.returncode == 1
    assert "No such file or directory" in done.stderr


def test_features_advertise_only_implemented(virtual_phone: SimPhone) -> None:
    features = device(virtual_phone).get_features()
    assert {"shell_v2", "cmd", "stat_v2", "ls_v2"} <= set(features.split(","))
    assert not {"sendrecv_v2", "delayed_ack", "abb", "abb_exec"} & set(features.split(","))


def test_profile_model_reaches_banner(virtual_farm: FarmFactory) -> None:
    profile = default_profile()
    profile.model, profile.name = "Galaxy S23", "dm1q"
    phone = virtual_farm(1, profile=profile)[0]
    info = {d.serial: d for d in adbutils.AdbClient(port=phone.adb_port).list(extended=True)}[phone.serial]
    assert info.tags.get("model") == "Galaxy_S23" and info.tags.get("product") == "dm1q"


def test_adbutils_shell_and_shell2_exit_codes(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    assert d.shell("echo hello") == "hello"
    assert d.shell2("true").returncode == 0
    assert d.shell2("ls /missing").returncode == 1
    v2 = d.shell2("echo out; ls /missing", v2=True)
    assert v2.returncode == 1
    assert v2.stdout == "out\n" and "No such file" in v2.stderr
    assert d.shell2("nosuchcmd", v2=True).returncode == 127


def test_many_concurrent_streams_on_one_phone(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(lambda i: d.shell(f"echo stream-{i}"), range(64)))
    assert results == [f"stream-{i}" for i in range(64)]


def test_large_output_respects_flow_control(virtual_phone: SimPhone) -> None:
    blob = bytes(range(256)) * 12000  # ~3 MiB, several max-payload WRTEs
    (virtual_phone.root / "sdcard" / "big.bin").write_bytes(blob)
    raw = device(virtual_phone).shell("cat /sdcard/big.bin", encoding=None)
    assert raw == blob


def test_ten_phones_at_once(virtual_farm: FarmFactory) -> None:
    phones = virtual_farm(10)
    client = adbutils.AdbClient(port=phones[0].adb_port)
    listed = {d.serial for d in client.device_list()}
    assert {p.serial for p in phones} <= listed
    with ThreadPoolExecutor(max_workers=10) as pool:
        models = list(pool.map(lambda p: client.device(p.serial).prop.model, phones))
    assert models == [p.profile.model for p in phones]


def _raw_cnxn(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    banner = b"host::features=shell_v2\0"
    sock.sendall(struct.pack("<6I", A_CNXN, A_VERSION, 1 << 20, len(banner), 0, A_CNXN ^ 0xFFFFFFFF) + banner)
    header = _recv_exact(sock, 24)
    command, _, _, length, _, _ = struct.unpack("<6I", header)
    assert command == A_CNXN
    _recv_exact(sock, length)
    return sock


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def test_bad_magic_closes_only_that_connection(virtual_phone: SimPhone) -> None:
    sock = _raw_cnxn(virtual_phone.port)
    sock.sendall(struct.pack("<6I", A_OPEN, 1, 0, 0, 0, 0x12345678))
    assert sock.recv(24) == b""  # the phone hung up on the bad packet
    sock.close()
    assert device(virtual_phone).shell("echo still-serving") == "still-serving"


def test_oversized_length_closes_only_that_connection(virtual_phone: SimPhone) -> None:
    sock = _raw_cnxn(virtual_phone.port)
    sock.sendall(struct.pack("<6I", A_OPEN, 1, 0, 64 << 20, 0, A_OPEN ^ 0xFFFFFFFF))
    assert sock.recv(24) == b""
    sock.close()
    assert device(virtual_phone).shell("getprop ro.product.device") == virtual_phone.profile.device


def test_raw_open_is_answered_with_okay(virtual_phone: SimPhone) -> None:
    sock = _raw_cnxn(virtual_phone.port)
    service = b"shell:echo raw\0"
    sock.sendall(struct.pack("<6I", A_OPEN, 7, 0, len(service), 0, A_OPEN ^ 0xFFFFFFFF) + service)
    command, _local, remote, _length, _, magic = struct.unpack("<6I", _recv_exact(sock, 24))
    assert (command, remote, magic) == (A_OKAY, 7, A_OKAY ^ 0xFFFFFFFF)
    sock.close()


def test_unknown_service_is_refused(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    try:
        d.create_connection(adbutils.Network.TCP, 4444)
    except adbutils.AdbError as exc:
        assert "closed" in str(exc)
    else:
        raise AssertionError("tcp:4444 should be refused")


def test_devtools_socket_refused_without_bridge(virtual_phone: SimPhone) -> None:
    try:
        device(virtual_phone).create_connection(adbutils.Network.LOCAL_ABSTRACT, "chrome_devtools_remote")
    except adbutils.AdbError:
        return
    raise AssertionError("no chrome_devtools configured: the OPEN must be refused")


def test_create_connection_bridges_devtools(virtual_farm: FarmFactory) -> None:
    server, port = upper_echo_server()
    profile: PhoneProfile = default_profile()
    profile.chrome_devtools = f"127.0.0.1:{port}"
    phone = virtual_farm(1, profile=profile)[0]
    conn = device(phone).create_connection(adbutils.Network.LOCAL_ABSTRACT, "chrome_devtools_remote")
    conn.sendall(b"get /json/version")
    conn.settimeout(10)
    assert _recv_exact(conn, 17) == b"GET /JSON/VERSION"
    conn.close()
    server.close()


def test_reverse_forward_recorded(virtual_phone: SimPhone) -> None:
    d = device(virtual_phone)
    d.reverse("tcp:8080", "tcp:9090")
    assert virtual_phone.state.reverse_forwards == ["tcp:8080;tcp:9090"]
    assert [(r.remote, r.local) for r in d.reverse_list()] == [("tcp:8080", "tcp:9090")]
    d.reverse_remove_all()
    assert virtual_phone.state.reverse_forwards == []
    assert d.reverse_list() == []


def test_tcp_9008_reaches_uiautomator2_server(virtual_phone: SimPhone) -> None:
    import uiautomator2

    d = uiautomator2.connect(virtual_phone.serial)  # through adbutils.adb, i.e. the private server
    info = d.info
    assert info["productName"] == virtual_phone.profile.name
    assert info["displayWidth"] == virtual_phone.profile.screen.width
    assert virtual_phone.state.u2_server_streams >= 1


def _packet(command: int, arg0: int, arg1: int, data: bytes = b"") -> bytes:
    return struct.pack("<6I", command, arg0, arg1, len(data), sum(data), command ^ 0xFFFFFFFF) + data


def _read_packet(sock: socket.socket) -> tuple[int, int, int, bytes, int]:
    command, arg0, arg1, length, crc, _magic = struct.unpack("<6I", _recv_exact(sock, 24))
    return command, arg0, arg1, _recv_exact(sock, length) if length else b"", crc


def _handshake(port: int, version: int, max_payload: int) -> tuple[socket.socket, tuple[int, int, int, bytes, int]]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(_packet(A_CNXN, version, max_payload, b"host::features=shell_v2\0"))
    return sock, _read_packet(sock)


def test_old_host_version_gets_checksummed_packets(virtual_phone: SimPhone) -> None:
    sock, (command, version, _max, banner, crc) = _handshake(virtual_phone.port, 0x01000000, 4096)
    assert command == A_CNXN and version == A_VERSION
    assert banner.startswith(b"device::") and crc == sum(banner)
    sock.close()


def test_wrte_waits_for_host_okay_and_respects_max_payload(virtual_phone: SimPhone) -> None:
    from farm.sim.adbd import A_WRTE

    (virtual_phone.root / "sdcard" / "flow.bin").write_bytes(b"f" * 20000)
    sock, _ = _handshake(virtual_phone.port, A_VERSION, 4096)
    sock.sendall(_packet(A_OPEN, 5, 0, b"shell:cat /sdcard/flow.bin\0"))
    command, local_id, remote_id, _data, _crc = _read_packet(sock)
    assert (command, remote_id) == (A_OKAY, 5)
    command, _, _, data, _ = _read_packet(sock)
    assert command == A_WRTE and 0 < len(data) <= 4096
    sock.settimeout(0.5)
    try:
        sock.recv(1)
    except TimeoutError:
        pass  # nothing more until the host says OKAY
    else:
        raise AssertionError("a second WRTE arrived before the host's OKAY")
    sock.settimeout(10)
    received = len(data)
    while True:
        sock.sendall(_packet(A_OKAY, 5, local_id))
        command, _, _, data, _ = _read_packet(sock)
        if command != A_WRTE:
            break
        assert len(data) <= 4096
        received += len(data)
    assert received == 20000
    sock.close()


def test_every_host_wrte_is_acknowledged(virtual_phone: SimPhone) -> None:
    from farm.sim.adbd import A_WRTE

    sock, _ = _handshake(virtual_phone.port, A_VERSION, 1 << 20)
    sock.sendall(_packet(A_OPEN, 9, 0, b"shell,v2:\0"))
    command, local_id, _, _, _ = _read_packet(sock)
    assert command == A_OKAY
    stdin = b"echo acked\n"
    sock.sendall(_packet(A_WRTE, 9, local_id, struct.pack("<BI", 0, len(stdin)) + stdin))
    command, arg0, arg1, _, _ = _read_packet(sock)
    assert (command, arg0, arg1) == (A_OKAY, local_id, 9)
    command, _, _, data, _ = _read_packet(sock)
    assert command == A_WRTE and data == struct.pack("<BI", 1, 6) + b"acked\n"
    sock.close()
