"""Routes an OPEN's service name to the coroutine that serves it."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from farm.sim.adbd import Service, Stream
from farm.sim.build_services import serve_remount, serve_root, serve_unroot
from farm.sim.framebuffer import serve_framebuffer
from farm.sim.phone import PhoneState
from farm.sim.shell import serve_shell
from farm.sim.sync import serve_sync

log = logging.getLogger(__name__)
U2_PORT = 9008
DEVTOOLS = "localabstract:chrome_devtools_remote"


def route(service: str) -> Service | None:
    """The handler for `service`, or None to refuse the OPEN.

    adbd refuses a service it does not offer (or one whose socket cannot be reached, as `tcp:PORT` with nothing
    listening) with CLSE(0, host id) and no message; the adb server tells its client `FAIL` `closed`.
    """
    name = service.split(":", 1)[0].split(",", 1)[0]
    if name in ("shell", "exec"):
        return serve_shell
    if service == "sync:":
        return serve_sync
    if service == f"tcp:{U2_PORT}" or service == f"tcp:127.0.0.1:{U2_PORT}" or service == f"tcp:localhost:{U2_PORT}":
        return serve_u2
    if service == DEVTOOLS:
        return serve_devtools
    if name == "reverse":
        return serve_reverse
    if name == "remount":
        return serve_remount  # `remount:` may carry options after the colon (`-R`)
    return _FIXED.get(service)


_FIXED: dict[str, Service] = {
    "root:": serve_root,
    "unroot:": serve_unroot,
    "framebuffer:": serve_framebuffer,
}


async def serve_u2(phone: PhoneState, stream: Stream) -> None:
    """tcp:9008: the uiautomator2 HTTP server, there only while its app_process shell runs."""
    if phone.u2_server_streams <= 0:
        return  # nothing listens on 9008: refused
    from farm.sim.u2server import U2HttpSession

    session = U2HttpSession(phone.ui)
    await stream.accept()
    while data := await stream.read():
        reply = session.feed(data)
        if reply:
            await stream.write(reply)
            await stream.flush()
        if getattr(session, "closed", False):
            return


async def serve_devtools(phone: PhoneState, stream: Stream) -> None:
    """localabstract:chrome_devtools_remote bridged to `profile.chrome_devtools` as raw TCP."""
    target = phone.profile.chrome_devtools
    if not target:
        return
    host, _, port = target.rpartition(":")
    try:
        reader, writer = await asyncio.open_connection(host or "127.0.0.1", int(port))
    except (OSError, ValueError):
        return
    await stream.accept()

    async def upstream() -> None:
        while data := await stream.read():
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            writer.write_eof()

    task = asyncio.ensure_future(upstream())
    try:
        while data := await reader.read(256 * 1024):
            await stream.write(data)
            await stream.flush()
    finally:
        task.cancel()
        writer.close()


def _okay(payload: str | None = None) -> bytes:
    if payload is None:
        return b"OKAY"
    raw = payload.encode()
    return b"OKAY" + f"{len(raw):04x}".encode() + raw


def _fail(message: str) -> bytes:
    raw = message.encode()
    return b"FAIL" + f"{len(raw):04x}".encode() + raw


async def serve_reverse(phone: PhoneState, stream: Stream) -> None:
    """reverse:forward / list-forward / killforward(-all), recorded on the phone (no listener)."""
    command = stream.service.split(":", 1)[1]
    await stream.accept()
    if command == "list-forward":
        lines = "".join(f"host-1 {spec.replace(';', ' ')}\n" for spec in phone.reverse_forwards)
        raw = lines.encode()
        await stream.write(f"{len(raw):04x}".encode() + raw)
    elif command == "killforward-all":
        phone.reverse_forwards.clear()
        await stream.write(_okay())
    elif command.startswith("killforward:"):
        remote = command.split(":", 1)[1]
        kept = [s for s in phone.reverse_forwards if s.split(";", 1)[0] != remote]
        if len(kept) == len(phone.reverse_forwards):
            await stream.write(_fail(f"listener '{remote}' not found"))
        else:
            phone.reverse_forwards[:] = kept
            await stream.write(_okay())
    elif command.startswith("forward:"):
        spec = command.split(":", 1)[1]
        norebind = spec.startswith("norebind:")
        spec = spec.removeprefix("norebind:")
        remote, _, local = spec.partition(";")
        if not remote or not local:
            await stream.write(_fail(f"bad forward: {spec}"))  # adb.cpp handle_forward_request
        elif norebind and any(s.split(";", 1)[0] == remote for s in phone.reverse_forwards):
            await stream.write(_fail(f"cannot rebind existing socket '{remote}'"))
        else:
            phone.reverse_forwards[:] = [s for s in phone.reverse_forwards if s.split(";", 1)[0] != remote]
            phone.reverse_forwards.append(f"{remote};{local}")
            await stream.write(_okay())
    else:
        await stream.write(_fail("not a reverse forwarding command"))
    await stream.flush()
