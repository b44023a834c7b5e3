"""Finding phones on the local adb server and every server listed in farm.yaml."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from farm.config import AdbServer, FarmConfig
from farm.errors import FarmError

if TYPE_CHECKING:
    from adbutils import AdbClient, AdbDevice

DEFAULT_PORT = 5037
NO_PHONE_HINT = "plug in a phone with USB debugging on, or start virtual phones with `farm sim up`"


def local_server() -> AdbServer:
    """The local adb server (ANDROID_ADB_SERVER_PORT, else 5037)."""
    port = os.environ.get("ANDROID_ADB_SERVER_PORT") or str(DEFAULT_PORT)
    try:
        return AdbServer(host="127.0.0.1", port=int(port))
    except ValueError:
        raise FarmError(f"ANDROID_ADB_SERVER_PORT={port!r}: not a port number") from None


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
    the local server not answering means no local phones."""
    from adbutils import AdbClient, AdbError

    found: list[FoundPhone] = []
    configured = {s.address() for s in cfg.adb_servers}
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
            continue
        for info in listed:
            found.append(FoundPhone(info.serial, server, info.state, client))
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
