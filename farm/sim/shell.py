"""`shell:` (v1), `shell,v2,…:` and `exec:` services on top of the simulated shell."""

from __future__ import annotations

import struct

# Imported for their side effect: each registers its commands.
from farm.sim import shell_content, shell_fs, shell_pm, shell_stat, shell_sys, shell_text  # noqa: F401
from farm.sim.adbd import MAX_PAYLOAD, Stream
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
    packets = bytearray()  # v2: the adb server cuts WRTEs where its reads end, not between packets
    while True:
        data = await stream.read()
        closed = not data
        if v2 and data:
            packets += data
            data, closed = _stdin_payload(packets)
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


def _stdin_payload(packets: bytearray) -> tuple[bytes, bool]:
    """Stdin bytes of the whole shell-v2 packets at the start of `packets` (taken out of it; a packet still
    arriving stays), and whether the host closed stdin."""
    out = bytearray()
    closed = False
    at = 0
    while len(packets) - at >= _V2.size:
        ident, length = _V2.unpack_from(packets, at)
        if length > MAX_PAYLOAD:
            # No client sends such a packet: the input is out of step, so stdin ends here rather than wait for it.
            packets.clear()
            return bytes(out), True
        if len(packets) - at - _V2.size < length:
            break
        if ident == ID_STDIN:
            out += packets[at + _V2.size : at + _V2.size + length]
        at += _V2.size + length
        if ident == ID_CLOSE_STDIN:
            closed = True  # nothing after it is stdin, whether it came in the same WRTE or a later one
            break
    del packets[:at]
    return bytes(out), closed
