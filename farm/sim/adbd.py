"""Device-side adbd: the adb transport protocol over loopback TCP (CNXN/OPEN/OKAY/WRTE/CLSE).

The real adb server attaches with `adb connect 127.0.0.1:PORT`. One asyncio server per phone;
every TCP connection is one transport carrying many streams, each served by a coroutine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import struct
import time
from collections.abc import Awaitable, Callable

from farm.sim.phone import PhoneState

log = logging.getLogger(__name__)

A_CNXN = 0x4E584E43
A_AUTH = 0x48545541
A_OPEN = 0x4E45504F
A_OKAY = 0x59414B4F
A_CLSE = 0x45534C43
A_WRTE = 0x45545257
A_STLS = 0x534C5453
A_VERSION = 0x01000001
MAX_PAYLOAD = 1024 * 1024
AUTH_TOKEN = 1
FEATURES = ("shell_v2", "cmd", "stat_v2", "ls_v2", "fixed_push_mkdir")
"""Only what this adbd implements: sync STA2/LST2/LIS2, SEND creating missing parent directories. Not: SND2/RCV2
(sendrecv_v2), delayed_ack, abb/abb_exec, remount_shell, track_app, apex."""

_HEADER = struct.Struct("<6I")


class StreamClosed(ConnectionError):
    """The peer closed the stream or the transport went away."""


def _packet(command: int, arg0: int, arg1: int, data: bytes, checksum: bool) -> bytes:
    crc = sum(data) & 0xFFFFFFFF if checksum and data else 0
    return _HEADER.pack(command, arg0, arg1, len(data), crc, command ^ 0xFFFFFFFF) + data


class Stream:
    """One adb stream as seen by a service: buffered writes with per-WRTE flow control."""

    def __init__(self, conn: AdbTransport, local_id: int, remote_id: int, service: str) -> None:
        self.conn = conn
        self.local_id = local_id
        self.remote_id = remote_id
        self.service = service
        self.accepted = False
        self.closed = False
        self._inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._rbuf = bytearray()
        self._eof = False
        self._out = bytearray()
        self._ready = asyncio.Event()
        self._ready.set()

    # -- reading (host → device) --
    async def read(self) -> bytes:
        """Next chunk the host wrote; b"" once the host closed the stream."""
        if self._rbuf:
            data = bytes(self._rbuf)
            self._rbuf.clear()
            return data
        if self._eof:
            return b""
        item = await self._inbox.get()
        if item is None:
            self._eof = True
            return b""
        return item

    def has_pending_input(self) -> bool:
        """Whether host bytes are already buffered (a pipelined next request)."""
        return bool(self._rbuf) or not self._inbox.empty()

    async def read_exactly(self, n: int) -> bytes:
        """Exactly `n` bytes; StreamClosed if the host closes first."""
        while len(self._rbuf) < n:
            if self._eof:
                raise StreamClosed(self.service)
            item = await self._inbox.get()
            if item is None:
                self._eof = True
                raise StreamClosed(self.service)
            self._rbuf += item
        data = bytes(self._rbuf[:n])
        del self._rbuf[:n]
        return data

    # -- writing (device → host) --
    async def accept(self) -> None:
        """Answer the host's OPEN with OKAY."""
        if not self.accepted:
            self.accepted = True
            await self.conn.send(A_OKAY, self.local_id, self.remote_id)

    def write_nowait(self, data: bytes) -> None:
        """Queue bytes; they go out on the next write()/flush()."""
        self._out += data

    async def write(self, data: bytes) -> None:
        """Queue bytes and send every full max-payload WRTE."""
        self._out += data
        limit = self.conn.max_payload
        while len(self._out) >= limit:
            await self._send_wrte(limit)

    async def flush(self) -> None:
        """Send everything queued."""
        limit = self.conn.max_payload
        while self._out:
            await self._send_wrte(min(limit, len(self._out)))

    async def _send_wrte(self, size: int) -> None:
        await self._ready.wait()
        if self.closed:
            raise StreamClosed(self.service)
        chunk = bytes(self._out[:size])
        del self._out[:size]
        self._ready.clear()
        await self.conn.send(A_WRTE, self.local_id, self.remote_id, chunk)

    async def close(self) -> None:
        """Flush and send CLSE (or refuse the OPEN if never accepted)."""
        if self.closed:
            return
        with contextlib.suppress(ConnectionError):
            if self.accepted:
                await self.flush()
                await self._ready.wait()
        if not self.closed:
            self.closed = True
            with contextlib.suppress(ConnectionError):
                await self.conn.send(A_CLSE, self.local_id if self.accepted else 0, self.remote_id)
        self.conn.streams.pop(self.local_id, None)

    # -- transport callbacks --
    def _on_okay(self) -> None:
        self._ready.set()

    def _on_data(self, data: bytes) -> None:
        self._inbox.put_nowait(data)

    def _on_close(self) -> None:
        self.closed = True
        self._inbox.put_nowait(None)
        self._ready.set()


Service = Callable[[PhoneState, Stream], Awaitable[None]]


class AdbTransport:
    """One TCP connection from the adb server: handshake, packet dispatch, faults."""

    def __init__(
        self,
        phone: PhoneState,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        router: Callable[[str], Service | None],
    ) -> None:
        self.phone = phone
        self.reader = reader
        self.writer = writer
        self.router = router
        self.streams: dict[int, Stream] = {}
        self.max_payload = 4096
        self.checksum = True
        self.online = False
        self._next_id = 1
        self._sent_bytes = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._send_lock = asyncio.Lock()
        self._link_t0 = 0.0

    # -- sending --
    async def send(self, command: int, arg0: int, arg1: int, data: bytes = b"") -> None:
        """Write one packet, applying the link faults of the profile."""
        if self._closed:
            raise StreamClosed("transport closed")
        faults = self.phone.profile.faults
        if data and command == A_WRTE and faults.stall_after_bytes is not None:
            room = faults.stall_after_bytes - self._sent_bytes
            if room < len(data):
                if room > 0:
                    await self.send(command, arg0, arg1, data[:room])
                await asyncio.Event().wait()  # stalled for good; control packets still flow
        async with self._send_lock:
            if data and command == A_WRTE:
                self._sent_bytes += len(data)
                limit = faults.disconnect_after_bytes
                if limit is not None and self._sent_bytes > limit and not self.phone.link_drops:
                    self.drop()
                    raise StreamClosed("link dropped (fault)")
                if faults.slow_link_bps:
                    await self._throttle(faults.slow_link_bps)
            self.writer.write(_packet(command, arg0, arg1, data, self.checksum))
            if self.writer.transport.get_write_buffer_size() > 4 * MAX_PAYLOAD:
                await self.writer.drain()

    async def _throttle(self, bps: int) -> None:
        # Pace the bytes sent so far (this packet included) against the rate since the first WRTE.
        if not self._link_t0:
            self._link_t0 = time.monotonic()
        due = self._link_t0 + self._sent_bytes / bps
        delay = due - time.monotonic()
        if delay > 0:
            await self.writer.drain()
            await asyncio.sleep(delay)

    def drop(self) -> None:
        """A disconnect fault: drop the link once; the adb server's reconnect then finds a healthy phone."""
        self.phone.link_drops += 1
        self.abort()

    def abort(self) -> None:
        """Drop the TCP connection at once (as a pulled cable would)."""
        if not self._closed:
            self._closed = True
            self.writer.transport.abort()

    # -- receiving --
    async def run(self) -> None:
        """Serve packets until the host goes away or sends a malformed packet."""
        try:
            while True:
                header = await self.reader.readexactly(_HEADER.size)
                command, arg0, arg1, length, _crc, magic = _HEADER.unpack(header)
                if magic != command ^ 0xFFFFFFFF or length > MAX_PAYLOAD:
                    log.warning("%s: malformed packet (cmd=%#x len=%d); closing", self.phone.serial, command, length)
                    return
                data = await self.reader.readexactly(length) if length else b""
                await self._dispatch(command, arg0, arg1, data)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            return
        finally:
            self._shutdown()

    def _shutdown(self) -> None:
        self._closed = True
        for stream in list(self.streams.values()):
            stream._on_close()
        self.streams.clear()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            self.writer.close()

    async def _dispatch(self, command: int, arg0: int, arg1: int, data: bytes) -> None:
        if command == A_CNXN:
            await self._on_cnxn(arg0, arg1, data)
        elif command == A_AUTH:
            if self.phone.profile.faults.state == "unauthorized" and arg0 != 3:
                await self._send_auth_token()
        elif not self.online:
            return
        elif command == A_OPEN:
            self._on_open(arg0, data)
        elif command == A_OKAY:
            stream = self.streams.get(arg1)
            if stream is not None:
                stream._on_okay()
        elif command == A_WRTE:
            stream = self.streams.get(arg1)
            if stream is None:
                await self.send(A_CLSE, 0, arg0)
                return
            stream._on_data(data)
            await self.send(A_OKAY, arg1, arg0)
        elif command == A_CLSE:
            stream = self.streams.pop(arg1, None)
            if stream is not None:
                # adbd's local_socket_close shuts its peer down first, which sends CLSE back: clients that speak
                # the device protocol directly (no adb server) wait for it before the next request.
                if not stream.closed and stream.accepted:
                    stream.closed = True
                    await self.send(A_CLSE, stream.local_id, stream.remote_id)
                stream._on_close()

    async def _on_cnxn(self, version: int, max_payload: int, banner: bytes) -> None:
        state = self.phone.profile.faults.state
        if state == "offline":
            return  # never answer: the server keeps the transport offline
        if state == "unauthorized":
            await self._send_auth_token()
            return
        self.max_payload = max(4096, min(max_payload, MAX_PAYLOAD))
        self.checksum = min(version, A_VERSION) < A_VERSION
        await self.send(A_CNXN, A_VERSION, MAX_PAYLOAD, device_banner(self.phone).encode())
        if not self.online:
            self.online = True
            after = self.phone.profile.faults.disconnect_after_s
            if after is not None and not self.phone.link_drops:
                self._spawn(self._disconnect_later(after))

    async def _send_auth_token(self) -> None:
        await self.send(A_AUTH, AUTH_TOKEN, 0, os.urandom(20))

    async def _disconnect_later(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        if not self.phone.link_drops:
            self.drop()

    def _on_open(self, remote_id: int, data: bytes) -> None:
        service = data.split(b"\0", 1)[0].decode("utf-8", "replace")
        local_id = self._next_id
        self._next_id += 1
        stream = Stream(self, local_id, remote_id, service)
        self.streams[local_id] = stream
        handler = self.router(service)
        self._spawn(self._serve(handler, stream))

    async def _serve(self, handler: Service | None, stream: Stream) -> None:
        try:
            if handler is not None:
                await handler(self.phone, stream)
        except StreamClosed:
            pass
        except Exception:
            log.exception("%s: service %r failed", self.phone.serial, stream.service)
        finally:
            await stream.close()

    def _spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def device_banner(phone: PhoneState) -> str:
    """The CNXN banner: identity properties and the features this adbd implements."""
    p = phone.profile
    return (
        f"device::ro.product.name={p.name};ro.product.model={p.model};"
        f"ro.product.device={p.device};features={','.join(FEATURES)}"
    )


class AdbDaemon:
    """A listening adbd for one phone on 127.0.0.1."""

    def __init__(self, phone: PhoneState, router: Callable[[str], Service | None], port: int = 0) -> None:
        self.phone = phone
        self.router = router
        self.port = port
        self._server: asyncio.AbstractServer | None = None
        self._transports: set[AdbTransport] = set()

    async def start(self) -> int:
        """Listen; returns the port."""
        self._server = await asyncio.start_server(self._on_client, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self.phone.serial = f"127.0.0.1:{self.port}"
        return self.port

    async def stop(self) -> None:
        """Stop listening and drop every transport."""
        if self._server is not None:
            self._server.close()
        for transport in list(self._transports):
            transport.abort()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        transport = AdbTransport(self.phone, reader, writer, self.router)
        self._transports.add(transport)
        try:
            await transport.run()
        finally:
            self._transports.discard(transport)
