"""`shell:` (v1), `shell,v2,…:` and `exec:` services on top of the simulated shell."""

from __future__ import annotations

import struct

from farm.sim import shell_fs, shell_pm, shell_sys, shell_text  # noqa: F401 - register their commands
from farm.sim.adbd import Stream
from farm.sim.phone import PhoneState
from farm.sim.shell_core import Shell

ID_STDIN, ID_STDOUT, ID_STDERR, ID_EXIT, ID_CLOSE_STDIN, ID_WINDOW = range(6)
_V2 = struct.Struct("<BI")


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
            await stream.write(_V2.pack(ID_STDOUT, len(data)) + data)
            await stream.flush()

        async def err(data: bytes) -> None:
            await stream.write(_V2.pack(ID_STDERR, len(data)) + data)
            await stream.flush()

    else:

        async def out(data: bytes) -> None:
            await stream.write(data)
            await stream.flush()

        err = out

    sh = Shell(phone, out, err)

    async def wait_host_close() -> None:
        while await stream.read():
            pass
        sh.closed_by_host = True

    sh.wait_host_close = wait_host_close
    if command.strip():
        status = await sh.run(command)
    else:
        status = await _interactive(sh, stream, v2)
    await sh.flush()
    if v2:
        await stream.write(_V2.pack(ID_EXIT, 1) + bytes([status & 0xFF]))
    await stream.flush()


async def _interactive(sh: Shell, stream: Stream, v2: bool) -> int:
    # No PTY: read lines from the host and run each one, like `sh` reading a pipe.
    pending = b""
    while True:
        data = await stream.read()
        closed = not data
        if v2 and data:
            data, closed = _stdin_payload(data)
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


def _stdin_payload(data: bytes) -> tuple[bytes, bool]:
    """Stdin bytes of shell-v2 packets, and whether the host closed stdin."""
    out = bytearray()
    closed = False
    while len(data) >= _V2.size:
        ident, length = _V2.unpack_from(data)
        if ident == ID_STDIN:
            out += data[_V2.size : _V2.size + length]
        elif ident == ID_CLOSE_STDIN:
            closed = True
        data = data[_V2.size + length :]
    return bytes(out), closed
