"""Finding phones on the local adb server and every server listed in farm.yaml."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from farm.config import AdbServer, FarmConfig
from farm.errors import FarmError

if TYPE_CHECKING:
    from adbutils import AdbClient, AdbDevice

DEFAULT_PORT = 5037
PORT_ENV = "ANDROID_ADB_SERVER_PORT"
NO_PHONE_HINT = "plug in a phone with USB debugging on, or start virtual phones with `farm sim up`"


def local_port() -> int:
    """The local adb server's port: ANDROID_ADB_SERVER_PORT, else 5037; a bad value is a one-line FarmError."""
    text = os.environ.get(PORT_ENV)
    if text is None or text == "":
        return DEFAULT_PORT
    port = int(text) if text.strip().isdigit() and text.isascii() else None
    if port is None or not 1 <= port <= 65535:
        raise FarmError(f"{PORT_ENV}={text[:40]!r}: not a port number (1–65535)",
                        hint=f"set it to the port of your adb server (e.g. {DEFAULT_PORT}) or unset it")
    return port


def local_server() -> AdbServer:
    """The local adb server (ANDROID_ADB_SERVER_PORT, else 5037)."""
    return AdbServer(host="127.0.0.1", port=local_port())


def no_server_error(server: AdbServer, why: str) -> FarmError:
    """There is no local adb server to ask for phones: say where it was looked for and how to start one."""
    source = f"{PORT_ENV}={server.port}" if os.environ.get(PORT_ENV) else f"default port {server.port}"
    return FarmError(
        f"no adb server on {server.address()} ({source}): {' '.join(why.split())[:120]}",
        hint=f"start one with `adb -P {server.port} start-server`, or virtual phones with `farm sim up`",
    )


def patch_adb_connection(adb_module: ModuleType) -> None:
    """Make adbutils' connections (`adb_module` is `adbutils._adb`) fail instead of running `adb start-server`
    when no server answers.

    adbutils starts a server whenever a connection is refused — with the adb binary's default port or
    ANDROID_ADB_SERVER_PORT, whatever server was asked for. A farm must never start (or, with an adb client of
    another version, replace) an adb server as a side effect of listing phones: the server belongs to the
    host's service manager or to the user.
    """
    connection = adb_module.AdbConnection
    if getattr(connection._safe_connect, "farm_no_autostart", False):
        return

    def connect_only(self: Any) -> Any:  # noqa: ANN401 - adbutils' own (untyped) signature
        return self._create_socket()

    connect_only.farm_no_autostart = True  # type: ignore[attr-defined]
    setattr(connection, "_safe_connect", connect_only)  # noqa: B010 - patched on the class, on purpose


def forbid_adb_autostart() -> None:
    """`patch_adb_connection` on the imported adbutils: from here on, this process starts no adb server."""
    from adbutils import _adb

    patch_adb_connection(_adb)


def servers(cfg: FarmConfig) -> list[AdbServer]:
    """The local server followed by the configured ones, without duplicates."""
    out: list[AdbServer] = []
    for server in [local_server(), *cfg.adb_servers]:
        if all(s.address() != server.address() for s in out):
            out.append(server)
    return out


@dataclass
class FoundPhone:
    """A phone listed by an adb server."""

    serial: str
    """The phone's name in this farm: its adb serial, or `<serial>@<host:port>` when other adb servers list
    a different phone under the same serial (two hosts' `emulator-5554`)."""
    server: AdbServer
    state: str
    """adb state: device, offline, unauthorized…"""
    client: AdbClient
    adb_serial: str = ""
    """The serial its adb server knows it by, when `serial` is qualified."""

    @property
    def on_server(self) -> str:
        """The serial its adb server knows it by."""
        return self.adb_serial or self.serial

    def device(self) -> AdbDevice:
        """adbutils handle of this phone on its server."""
        return self.client.device(self.on_server)


def discover(cfg: FarmConfig, *, unreachable: list[str] | None = None) -> list[FoundPhone]:
    """Every phone on every adb server. A configured server that does not answer is a FarmError —
    or, when `unreachable` is given (a sweep, which goes on with the other hosts), listed there;
    the local server not answering means no local phones, unless no server answered at all and
    `unreachable` is None (a command run by hand: it says there is no adb server). No adb server is
    ever started."""
    from adbutils import AdbClient, AdbError

    forbid_adb_autostart()
    found: list[FoundPhone] = []
    configured = {s.address() for s in cfg.adb_servers}
    answered = 0
    local_down: tuple[AdbServer, str] | None = None
    for server in servers(cfg):
        client = AdbClient(host=server.host, port=server.port, socket_timeout=10)
        try:
            listed = client.list()
        except (AdbError, OSError) as exc:
            if server.address() in configured and unreachable is not None:
                unreachable.append(f"{server.address()}: {' '.join(str(exc).split())[:120]}")
                continue
            if server.address() in configured:
                raise FarmError(
                    f"adb server {server.address()} (farm.yaml adb_servers): unreachable ({exc})",
                    hint="start it there with `adb -a nodaemon server` or fix farm.yaml",
                ) from None
            local_down = (server, str(exc) or type(exc).__name__)
            continue
        answered += 1
        for info in listed:
            found.append(FoundPhone(info.serial, server, info.state, client))
    if local_down is not None and not answered and unreachable is None:
        raise no_server_error(*local_down)
    return found


def select(found: list[FoundPhone], serials: list[str], all_phones: bool) -> list[FoundPhone]:
    """The phones a command acts on: --device SERIAL…, --all, or the only phone there is."""
    if serials:
        by_serial = {p.serial: p for p in found}
        unknown = [s for s in serials if s not in by_serial]
        if unknown:
            known = ", ".join(sorted(by_serial)) or "none"
            raise FarmError(f"--device {unknown[0]}: no such phone (connected: {known})", hint="see `farm devices`")
        return [by_serial[s] for s in dict.fromkeys(serials)]
    if not found:
        raise FarmError("no phone found on any adb server", hint=NO_PHONE_HINT)
    if all_phones or len(found) == 1:
        return found
    raise FarmError(
        f"{len(found)} phones connected: say which", hint="pass --device SERIAL (repeatable) or --all"
    )


def shell(device: AdbDevice, argv: list[str], timeout: float = 30) -> str:
    """Run argv on the phone (each argument quoted; never a shell string built from input)."""
    return str(device.shell(" ".join(shlex.quote(a) for a in argv), timeout=timeout))
