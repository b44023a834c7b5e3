"""What the host sends on a shell stream: stdin (raw on `shell:`/`exec:`, in packets on shell v2), its end, and
the end of the stream; and which commands read stdin, so a command line waits for it only when it must.

A real shell starts `cat` at once and `cat` blocks on its stdin; here a command is a function over bytes, so the
shell collects the host's stdin up to its end (close-stdin, or CLSE) before it runs a command that reads it.
`ls`, `echo` and friends never wait, so a client that sends no stdin and never closes it (adbutils' shell v2)
gets its answer as before.
"""

from __future__ import annotations

import asyncio
import errno
import os
import struct

from farm.sim.adbd import MAX_PAYLOAD, Stream

ID_STDIN, ID_STDOUT, ID_STDERR, ID_EXIT, ID_CLOSE_STDIN, ID_WINDOW = range(6)
V2_HEADER = struct.Struct("<BI")
_DIGESTS = ("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum")


class HostInput:
    """Reads a shell stream's host side in one task; commands take stdin from it, `app_process` its close."""

    def __init__(self, stream: Stream, v2: bool, limit: int) -> None:
        self.stream = stream
        self.v2 = v2
        self.limit = limit
        """Bytes of stdin kept (the profile's copy cap); past it the stdin is refused as too large."""
        self.stdin_closed = False
        self.too_large = False
        self.window: tuple[int, int, int, int] | None = None
        """The last window-size packet (rows, cols, x pixels, y pixels) of a v2 session."""
        self.host_closed = asyncio.Event()
        self._buf = bytearray()
        self._packets = bytearray()
        self._changed = asyncio.Event()
        self._taken = False

    async def run(self) -> None:
        """Until the host closes the stream (CLSE): split what it writes into stdin and control packets."""
        try:
            while data := await self.stream.read():
                if self.v2:
                    self._packets += data
                    payload, closed = self._unpack()
                else:
                    payload, closed = data, False
                self._keep(payload)
                if closed:
                    self.stdin_closed = True
                self._changed.set()
        finally:
            self.stdin_closed = True
            self.host_closed.set()
            self._changed.set()

    def _keep(self, payload: bytes) -> None:
        if self.stdin_closed or not payload:
            return  # after close-stdin nothing is stdin any more
        if len(self._buf) + len(payload) > self.limit:
            self.too_large = True
            return
        self._buf += payload

    def _unpack(self) -> tuple[bytes, bool]:
        """Stdin of the whole v2 packets buffered (a packet still arriving stays), and whether stdin closed."""
        out = bytearray()
        packets = self._packets
        at = 0
        closed = False
        while len(packets) - at >= V2_HEADER.size:
            ident, length = V2_HEADER.unpack_from(packets, at)
            if length > MAX_PAYLOAD:
                # No client sends such a packet: the input is out of step, so stdin ends here rather than wait.
                packets.clear()
                return bytes(out), True
            if len(packets) - at - V2_HEADER.size < length:
                break
            body = packets[at + V2_HEADER.size : at + V2_HEADER.size + length]
            at += V2_HEADER.size + length
            if ident == ID_STDIN:
                out += body
            elif ident == ID_WINDOW:
                self.window = _window(bytes(body))
            elif ident == ID_CLOSE_STDIN:
                closed = True
                break
        del packets[:at]
        return bytes(out), closed

    async def read_some(self) -> bytes:
        """Stdin that arrived since the last call (waiting for some); b"" once stdin ended."""
        while not self._buf and not self.stdin_closed:
            self._changed.clear()
            await self._changed.wait()
        data = bytes(self._buf)
        self._buf.clear()
        return data

    async def read_all(self) -> bytes:
        """All of stdin, to its end, the first time; b"" afterwards (the first reader consumed it).

        OSError(EFBIG) when the host sent more than the cap.
        """
        if self._taken:
            return b""
        self._taken = True
        while not self.stdin_closed:
            self._changed.clear()
            await self._changed.wait()
        if self.too_large:
            raise OSError(errno.EFBIG, f"{os.strerror(errno.EFBIG)} (over {self.limit} bytes, limits.copy_max_bytes)")
        data = bytes(self._buf)
        self._buf.clear()
        return data


def _window(body: bytes) -> tuple[int, int, int, int] | None:
    # The adb CLI sends "ROWSxCOLS,XPIXELSxYPIXELS" (shell_service_protocol.cpp, window-size packet).
    try:
        size, _, pixels = body.rstrip(b"\0").decode("ascii").partition(",")
        rows, cols = size.split("x")
        xpix, ypix = pixels.split("x") if pixels else ("0", "0")
        return int(rows), int(cols), int(xpix), int(ypix)
    except ValueError:
        return None


def reads_stdin(argv: list[str]) -> bool:
    """Whether this command (with no `<` redirect) reads its standard input."""
    if not argv:
        return False
    name, args = argv[0].rsplit("/", 1)[-1], argv[1:]
    operands = _operands(name, args)
    if name in ("cat", *_DIGESTS):
        return not operands or "-" in operands
    if name in ("head", "tail", "wc"):
        return not operands
    if name == "grep":
        return not operands if "-e" in args else len(operands) <= 1  # without -e the first operand is the pattern
    if name == "sh":
        return not args or args[0] == "-s"
    if name == "log":
        return not operands  # toybox logs each line of stdin when it has no message
    return False


def _operands(name: str, args: list[str]) -> list[str]:
    out: list[str] = []
    it = iter(args)
    for arg in it:
        if name in ("head", "tail") and arg in ("-n", "-c") or name == "log" and arg in ("-b", "-p", "-t"):
            next(it, None)
        elif name == "grep" and arg == "-e":
            next(it, None)
        elif arg == "-" or not arg.startswith("-"):
            out.append(arg)
    return out
