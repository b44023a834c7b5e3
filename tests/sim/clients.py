"""ADB clients from the package registries, pointed at a virtual phone: adb-shell on the direct device transport
(TCP straight to the phone's adbd, no adb server), pure-python-adb (ppadb) through the private adb server."""

from __future__ import annotations

import asyncio
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from adb_shell.adb_device import AdbDeviceTcp
from adb_shell.auth.keygen import keygen
from adb_shell.auth.sign_pythonrsa import PythonRSASigner
from ppadb.client import Client as PpadbClient
from ppadb.device import Device as PpadbDevice

from farm.sim.launcher import SimPhone, adb_binary

READ_TIMEOUT_S = 5.0
"""How long adb-shell waits for an answer: a phone that answers does so in milliseconds."""


@pytest.fixture(scope="session")
def adb_key(tmp_path_factory: pytest.TempPathFactory) -> PythonRSASigner:
    """An RSA key pair as `adb keygen` makes it, to answer an AUTH token with."""
    path = tmp_path_factory.mktemp("adbkey") / "adbkey"
    keygen(str(path))
    return PythonRSASigner(Path(f"{path}.pub").read_text(), path.read_text())


@pytest.fixture
def direct(virtual_phone: SimPhone, adb_key: PythonRSASigner) -> Iterator[AdbDeviceTcp]:
    """adb-shell connected straight to the phone's adbd (CNXN, AUTH with the key when asked)."""
    device = connect_direct(virtual_phone, adb_key)
    try:
        yield device
    finally:
        device.close()


def connect_direct(phone: SimPhone, key: PythonRSASigner) -> AdbDeviceTcp:
    device = AdbDeviceTcp("127.0.0.1", phone.port, default_transport_timeout_s=READ_TIMEOUT_S)
    assert device.connect(rsa_keys=[key], auth_timeout_s=READ_TIMEOUT_S, read_timeout_s=READ_TIMEOUT_S)
    return device


def ppadb_device(phone: SimPhone) -> PpadbDevice:
    """ppadb's handle of the phone, through the private adb server (never the default port)."""
    device = PpadbClient(host="127.0.0.1", port=phone.adb_port).device(phone.serial)
    assert device is not None, f"{phone.serial} not listed by the adb server on {phone.adb_port}"
    return device


def adb(phone: SimPhone, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """The adb CLI on the private server, for this phone; `stdin` is piped in and then closed."""
    return subprocess.run(
        [adb_binary(), "-P", str(phone.adb_port), "-s", phone.serial, *args],
        input=stdin, capture_output=True, timeout=60, check=False,
    )


# -- a bare device-protocol host, for what no client library exposes (packet ids, refusals) --
A_CNXN, A_OPEN, A_OKAY, A_CLSE, A_WRTE = 0x4E584E43, 0x4E45504F, 0x59414B4F, 0x45534C43, 0x45545257


def packet(command: int, arg0: int, arg1: int, data: bytes = b"") -> bytes:
    return struct.pack("<6I", command, arg0, arg1, len(data), sum(data) & 0xFFFFFFFF, command ^ 0xFFFFFFFF) + data


def read_packet(sock: socket.socket) -> tuple[int, int, int, bytes]:
    command, arg0, arg1, length, _crc, _magic = struct.unpack("<6I", recv_exact(sock, 24))
    return command, arg0, arg1, recv_exact(sock, length) if length else b""


def recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the phone closed the connection")
        data += chunk
    return data


def raw_host(phone: SimPhone) -> socket.socket:
    """A TCP connection to the phone's adbd after the CNXN exchange."""
    sock = socket.create_connection(("127.0.0.1", phone.port), timeout=READ_TIMEOUT_S)
    sock.sendall(packet(A_CNXN, 0x01000001, 1 << 20, b"host::features=shell_v2\0"))
    assert read_packet(sock)[0] == A_CNXN
    return sock


# -- streaming logcat readers on the phone, to prove a closed stream leaves nothing behind --
def wait_until(predicate: Callable[[], bool], what: str, timeout_s: float = 15.0) -> None:
    """Poll `predicate` until it holds; fail naming `what` after `timeout_s` (a bound, never a timing goal)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def phone_loop(phone: SimPhone) -> asyncio.AbstractEventLoop:
    """The event loop serving the phone, taken from a streaming reader that is waiting on its log."""
    wait_until(lambda: bool(phone.state.logs.waiters), "a streaming logcat to wait for new entries")
    return next(iter(phone.state.logs.waiters))[0]


def logcat_tasks(loop: asyncio.AbstractEventLoop) -> list[str]:
    """Tasks on the phone's loop that belong to a streaming logcat (its wait for entries or for the host)."""

    async def names() -> list[str]:
        return [repr(t) for t in asyncio.all_tasks() if "wait_new" in repr(t) or "wait_host_close" in repr(t)]

    return asyncio.run_coroutine_threadsafe(names(), loop).result(5)
