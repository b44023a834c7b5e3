"""`shell:` (v1), `shell,v2,…:` and `exec:` services on top of the simulated shell."""

from __future__ import annotations

import asyncio

# Imported for their side effect: each registers its commands.
from farm.sim import (  # noqa: F401
    shell_content,
    shell_fs,
    shell_log,
    shell_net,
    shell_pm,
    shell_screenrecord,
    shell_stat,
    shell_sys,
    shell_text,
)
from farm.sim.adbd import Stream
from farm.sim.phone import PhoneState
from farm.sim.profile import FsLimits
from farm.sim.shell_core import Shell
from farm.sim.shell_stdin import (  # noqa: F401 - the packet ids are part of this module's interface
    ID_CLOSE_STDIN,
    ID_EXIT,
    ID_STDERR,
    ID_STDIN,
    ID_STDOUT,
    ID_WINDOW,
    V2_HEADER,
    HostInput,
)


def split_service(service: str) -> tuple[str, list[str], str]:
    """`shell,v2,TERM=xterm,raw:ls` → ("shell", ["v2", "TERM=xterm", "raw"], "ls")."""
    head, _, command = service.partition(":")
    name, *options = head.split(",")
    return name, options, command


async def serve_shell(phone: PhoneState, stream: Stream) -> None:
    """Run the command of a shell/exec service and stream its output."""
    name, options, command = split_service(stream.service)
    v2 = name == "shell" and "v2" in options
    await stream.accept()

    if v2:

        async def out(data: bytes) -> None:
            await stream.write(V2_HEADER.pack(ID_STDOUT, len(data)) + data)
            await stream.flush()

        async def err(data: bytes) -> None:
            await stream.write(V2_HEADER.pack(ID_STDERR, len(data)) + data)
            await stream.flush()

    else:

        async def out(data: bytes) -> None:
            await stream.write(data)
            await stream.flush()

        err = out

    sh = Shell(phone, out, err)
    host = HostInput(stream, v2, phone.profile.limits.copy_max_bytes)
    reader = asyncio.ensure_future(host.run())

    async def wait_host_close() -> None:
        await host.host_closed.wait()
        sh.closed_by_host = True

    sh.wait_host_close = wait_host_close
    try:
        if command.strip():
            sh.host_stdin = host.read_all
            status = await sh.run(command)
        else:
            status = await _interactive(sh, stream, v2, host)
        await sh.flush()
        if v2:
            await stream.write(V2_HEADER.pack(ID_EXIT, 1) + bytes([status & 0xFF]))
        await stream.flush()
    finally:
        reader.cancel()


async def _interactive(sh: Shell, stream: Stream, v2: bool, host: HostInput | None = None) -> int:
    """No PTY: read lines from the host and run each one, like `sh` reading a pipe (`host` reads `stream`)."""
    if host is None:
        host = HostInput(stream, v2, FsLimits().copy_max_bytes)
        reader = asyncio.ensure_future(host.run())
        try:
            return await _interactive(sh, stream, v2, host)
        finally:
            reader.cancel()
    pending = b""
    while True:
        data = await host.read_some()
        closed = not data
        pending += data
        while b"\n" in pending or closed and pending:
            line, _, pending = pending.partition(b"\n")
            text = line.decode("utf-8", "replace").strip()
            if text == "exit":
                return sh.status
            if text:
                await sh.run(text)
        if closed:
            return sh.status
