"""Finding phones on the local adb server and every server listed in farm.yaml."""

from __future__ import annotations

import os
import shlex
import socket
from concurrent.futures import ThreadPoolExecutor
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


CONNECT_TIMEOUT_S = 3
"""How long adbutils waits for a connection to an adb server (its own fixed socket timeout)."""
ANSWER_TIMEOUT_S = 10
"""How long discovery waits for a connected adb server to list its phones."""


@dataclass(frozen=True)
class UnreachableServer:
    """An adb server that did not answer when phones were listed: a lost host when farm.yaml lists it."""

    server: AdbServer
    error: str
    """Why, in words: `connection refused (no adb server listens there)`, `no answer within 3 s (…)`,
    `unknown host name`…"""
    detail: str
    """adbutils' own message (`connect to adb server failed: [Errno 111] Connection refused`)."""
    listed: bool
    """Listed in farm.yaml `adb_servers` (a farm host). False for the local server farm.yaml does not list,
    whose absence is normal on a controller that only reaches other hosts' servers."""

    @property
    def address(self) -> str:
        """`host:port`."""
        return self.server.address()


@dataclass
class Discovery:
    """What asking every adb server found: the phones of the servers that answered, and those that did not."""

    asked: list[AdbServer]
    """Every server asked, in `servers(cfg)` order (the local one first)."""
    phones: list[FoundPhone]
    """The phones of every server that answered, in that order (serials as each server lists them)."""
    unreachable: list[UnreachableServer]
    """Every server that did not answer, in that order."""
    listed: frozenset[str] = frozenset()
    """The addresses farm.yaml `adb_servers` lists (farm hosts), answered or not."""

    @property
    def answered(self) -> list[AdbServer]:
        """The servers that answered."""
        down = {u.address for u in self.unreachable}
        return [s for s in self.asked if s.address() not in down]

    @property
    def lost(self) -> list[UnreachableServer]:
        """Servers farm.yaml lists that did not answer: lost hosts."""
        return [u for u in self.unreachable if u.listed]

    def lost_notes(self) -> list[str]:
        """Each lost host as a sweep's manifest notes it after `adb server unreachable: ` (`host:port: adbutils'
        message`, at most 120 characters of it)."""
        return [f"{u.address}: {' '.join(u.detail.split())[:120]}" for u in self.lost]

    def require_all(self) -> None:
        """What a developer's `farm run` (or any command acting on named phones) asks: a FarmError for the first
        server farm.yaml lists that did not answer, or when no server answered; the local server farm.yaml does
        not list may be down when another answered (no local phones, then)."""
        if self.lost:
            down = self.lost[0]
            raise FarmError(
                f"adb server {down.address} (farm.yaml adb_servers): unreachable ({down.detail})",
                hint="start it there with `adb -a nodaemon server` or fix farm.yaml",
            )
        if self.unreachable and not self.answered:
            raise no_server_error(self.unreachable[0].server, self.unreachable[0].detail)

    def none_answered_error(self) -> FarmError:
        """The one line when no server answered: every server asked, why, and the fix."""
        if len(self.unreachable) == 1 and not self.unreachable[0].listed:
            # Only the local server, farm.yaml lists none: say where it was looked for and how to start one.
            return no_server_error(self.unreachable[0].server, self.unreachable[0].detail)
        parts = [f"adb server {u.address} ({_source(u)}): unreachable ({u.error})" for u in self.unreachable]
        return FarmError(
            f"no adb server answered: {'; '.join(parts)}",
            hint="start each there (`adb -a nodaemon server`, or the host's adb-server service), or fix farm.yaml "
                 "adb_servers",
        )


def _source(down: UnreachableServer) -> str:
    """Where a server comes from, as a message names it."""
    if down.listed:
        return "farm.yaml adb_servers"
    return f"{PORT_ENV}={down.server.port}" if os.environ.get(PORT_ENV) else f"default port {down.server.port}"


def in_words(exc: BaseException) -> str:
    """Why an adb server did not answer, for a person reading a night's log (adbutils says it in its own terms)."""
    from adbutils import AdbTimeout

    cause = exc.__cause__ or exc.__context__
    if isinstance(exc, AdbTimeout | TimeoutError) or isinstance(cause, TimeoutError):
        if "connect" in str(exc):
            return f"no connection within {CONNECT_TIMEOUT_S} s (host down, or a firewall drops the connection)"
        return f"connected, but no answer within {ANSWER_TIMEOUT_S} s (a hung adb server)"
    if isinstance(exc, ConnectionRefusedError) or isinstance(cause, ConnectionRefusedError):
        return "connection refused (no adb server listens there)"
    if isinstance(exc, socket.gaierror) or isinstance(cause, socket.gaierror):
        return "unknown host name"
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror[:1].lower() + cause.strerror[1:]
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[:1].lower() + exc.strerror[1:]
    # An AdbError without a socket error: something answered there, but not as an adb server would.
    text = " ".join(str(exc).split())[:120]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def ask_server(server: AdbServer, *, listed: bool) -> tuple[list[FoundPhone], UnreachableServer | None]:
    """The phones one adb server lists, or why it did not answer (`listed`: farm.yaml lists it)."""
    from adbutils import AdbClient, AdbError

    client = AdbClient(host=server.host, port=server.port, socket_timeout=ANSWER_TIMEOUT_S)
    try:
        found = client.list()
    except (AdbError, OSError) as exc:
        return [], UnreachableServer(server, in_words(exc), str(exc) or type(exc).__name__, listed)
    return [FoundPhone(info.serial, server, info.state, client) for info in found], None


def discover_all(cfg: FarmConfig) -> Discovery:
    """Ask every adb server (the local one and those farm.yaml lists) for its phones, all at once, and say which
    did not answer. Never raises for a server that does not answer (the caller decides what that means); a bad
    ANDROID_ADB_SERVER_PORT is a FarmError. No adb server is ever started."""
    forbid_adb_autostart()
    asked = servers(cfg)
    configured = {s.address() for s in cfg.adb_servers}

    def ask(server: AdbServer) -> tuple[list[FoundPhone], UnreachableServer | None]:
        return ask_server(server, listed=server.address() in configured)

    # In parallel: a host that drops connections costs its timeout once, not once per server after it.
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(asked)))) as pool:
        answers = list(pool.map(ask, asked))
    return Discovery(asked=asked, phones=[p for found, _ in answers for p in found],
                     unreachable=[down for _, down in answers if down is not None], listed=frozenset(configured))


def discover(cfg: FarmConfig, *, unreachable: list[str] | None = None) -> list[FoundPhone]:
    """Every phone on every adb server. A configured server that does not answer is a FarmError —
    or, when `unreachable` is given (a sweep, which goes on with the other hosts), listed there
    (`host:port: adbutils' message`); the local server not answering means no local phones, unless no
    server answered at all and `unreachable` is None (a command run by hand: it says there is no adb
    server). No adb server is ever started. `discover_all` says the same as a typed result."""
    found = discover_all(cfg)
    if unreachable is None:
        found.require_all()
    else:
        unreachable.extend(found.lost_notes())
    return found.phones


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
