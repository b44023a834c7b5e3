"""One `sync:` stream to a phone, read as the protocol frames it (DENT, DONE, FAIL, DATA, STAT by their ids), with
the stall window and the stop event every read honours; and the small whole-file operations built on it
(`read_file`, `write_file`, `remote_mode`). `farm.android.pull` pulls trees over it.
"""

from __future__ import annotations

import contextlib
import io
import socket
import stat
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from farm.config import DEFAULT_STALL_S

if TYPE_CHECKING:
    from adbutils import AdbDevice

DATA_MAX = 64 * 1024
"""Largest DATA chunk the sync protocol allows (SYNC_DATA_MAX); a bigger one is a protocol error."""
_NAME_MAX = 4096
"""Longest name a DENT may announce (PATH_MAX); a longer one is a protocol error, never read."""
SYNC_PATH_MAX = 1024
"""Longest path (bytes) a sync request may carry: adbd answers a longer one with FAIL "path too long" and ends
the stream (`handle_sync_command`), so such a path is refused here, never sent."""
_FAIL_MAX = DATA_MAX
"""Longest FAIL message read (adbd's are one short line); a longer announcement is a protocol error."""
_READ_BUFFER = 1024 * 1024
"""Bytes read from the socket at most per call (each call a syscall; fewer, larger ones for a big file)."""
COALESCE = 1024 * 1024
"""The DATA payloads of one file gathered back to back before they are handed on (a 1 MiB write, not 16)."""
RING = 3
"""Gather buffers of a session: up to RING - 1 chunks of a big file are being written while the next one fills."""
_RCVBUF = 4 * 1024 * 1024
_HEAD = struct.Struct("<4sI")
_ID = 4
_DENT_BODY = struct.Struct("<IIII")
"""A DENT after its id: mode, size, mtime, name length (a DONE ending a listing has the same 16 zeroed bytes)."""
_STAT_BODY = struct.Struct("<III")
_U32 = struct.Struct("<I")
POLL_S = 0.5
"""Longest a read of the sync stream blocks before it looks at the clock and the stop flag again."""
STOP_GRACE_S = 3.0
"""Silence a stream may keep once its run is stopping (or once its link was found stalled) before what is left of
the transfer is given up: what can still finish, finishes; a silent phone costs no more than this."""


@dataclass(frozen=True)
class Entry:
    """A directory entry as the sync protocol reports it."""

    name: str
    mode: int
    size: int


class SyncFail(OSError):
    """The phone answered a request with FAIL (real adbd then ends the stream; the sim keeps it)."""


class SyncLost(ConnectionError):
    """The sync stream ended or went out of step mid-answer (the phone went away)."""


class SyncStalled(SyncLost):
    """The phone sent nothing for the stall window: the link is up but carries nothing (never asked again)."""


def stall_window(stall_s: float, stop: threading.Event | None) -> float:
    """The silence a read may wait: `stall_s`, at most STOP_GRACE_S once `stop` is set."""
    return min(stall_s, STOP_GRACE_S) if stop is not None and stop.is_set() else stall_s


class _PolledSocket(io.RawIOBase):
    """The sync socket read in POLL_S polls: SyncStalled once nothing arrived for the stall window (shortened when
    the run stops), so no read outlives the window by more than a poll."""

    def __init__(self, sock: socket.socket, stall_s: float, stop: threading.Event | None) -> None:
        super().__init__()
        self._sock, self._stall_s, self._stop = sock, stall_s, stop
        sock.settimeout(min(POLL_S, stall_s))

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        since = time.monotonic()
        while True:
            try:
                return self._sock.recv_into(buffer)
            except TimeoutError:
                window = stall_window(self._stall_s, self._stop)
                if time.monotonic() - since >= window:
                    raise SyncStalled(f"no answer from the phone for {window:g} s") from None


@dataclass(frozen=True)
class Listing:
    """A directory's entries as the phone listed them (`.` and `..` included), and whether the listing was cut at
    the cap (the stream is then out of step: its rest was never read)."""

    entries: list[Entry]
    cut: bool = False


class SyncSession:
    """One `sync:` stream (STAT, LIST, RECV, SEND, QUIT) for a whole tree, instead of a connection per file.

    No read or write waits longer than the stall window (`stall_s`, or STOP_GRACE_S once `stop` is set) for the
    phone: past it the session raises SyncStalled."""

    def __init__(self, device: AdbDevice, stall_s: float = DEFAULT_STALL_S, *,
                 stop: threading.Event | None = None) -> None:
        self._device = device
        self._stall_s = stall_s
        self._stop = stop
        self._open()

    def _window(self) -> float:
        return stall_window(self._stall_s, self._stop)

    def _open(self) -> None:
        from adbutils import AdbDevice, AdbTimeout

        from farm.android.adb_link import fast_device

        window = self._window()
        # A real device's transport opens without adbutils' idle waits (`adb_link`); a stand-in is used as it is.
        device = fast_device(self._device) if isinstance(self._device, AdbDevice) else self._device
        try:
            self._c = device.open_transport(timeout=window)
        except (AdbTimeout, TimeoutError):
            raise SyncStalled(f"no answer from the phone for {window:g} s (opening a sync stream)") from None
        try:
            self._c.send_command("sync:")
            self._c.check_okay()
        except BaseException as exc:
            self._c.close()
            if isinstance(exc, AdbTimeout | TimeoutError):
                raise SyncStalled(f"no answer from the phone for {window:g} s (opening a sync stream)") from None
            raise
        self._sock = self._c.conn
        if isinstance(self._sock, socket.socket):
            self._polled = True
            # Room for the adb server to keep sending while a file is written out (its flow control waits on us).
            with contextlib.suppress(OSError):
                self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RCVBUF)
            self._in: io.BufferedReader = io.BufferedReader(
                _PolledSocket(self._sock, self._stall_s, self._stop), _READ_BUFFER)
        else:  # a stand-in socket (tests) that offers only makefile: read as it is, without polls
            self._polled = False
            self._in = self._sock.makefile("rb", buffering=_READ_BUFFER)
        # Buffers taken in turn by gathered chunks: earlier ones are written out while the next one fills.
        self._chunks = tuple(bytearray(COALESCE) for _ in range(RING))
        self._turn = 0

    def _send(self, data: bytes) -> None:
        if not self._polled:
            self._sock.sendall(data)
            return
        # A whole request gets the stall window (sendall's timeout bounds the call): a short poll could cut a
        # request the phone is merely slow to take, and a cut request puts the stream out of step.
        window = self._window()
        self._sock.settimeout(window)
        try:
            self._sock.sendall(data)
        except TimeoutError:
            raise SyncStalled(f"no answer from the phone for {window:g} s (sending)") from None
        finally:
            self._sock.settimeout(min(POLL_S, self._stall_s))

    def request(self, ident: bytes, path: str) -> None:
        """Send one request; its answer is read later, in order."""
        raw = path.encode("utf-8", "surrogateescape")
        self._send(_HEAD.pack(ident, len(raw)) + raw)

    def _read(self, n: int) -> bytes:
        data = self._in.read(n) if n else b""
        if data is None or len(data) < n:
            raise SyncLost(f"sync stream closed by the phone ({len(data or b'')} of {n} bytes)")
        return data

    def _fail(self) -> SyncFail:
        """The FAIL whose id was just read: its message (bounded), as the error for this request only."""
        (length,) = _U32.unpack(self._read(_U32.size))
        if length > _FAIL_MAX:
            raise SyncLost(f"sync: FAIL announcing a {length}-byte message")
        return SyncFail(self._read(length).decode("utf-8", "replace"))

    def stat(self, path: str) -> tuple[int, int]:
        """(mode, size); mode 0 when the path does not exist."""
        self.request(b"STAT", path)
        ident = self._read(_ID)
        if ident == b"FAIL":
            raise self._fail()
        if ident != b"STAT":
            raise SyncLost(f"sync: unexpected {ident!r} answering STAT")
        mode, size, _mtime = _STAT_BODY.unpack(self._read(_STAT_BODY.size))
        return mode, size

    def list(self, path: str, most: int | None = None) -> Listing:
        """Entries of a directory (including `.` and `..` as adbd sends them), at most `most` besides those.

        Each reply is read by its id: DENT (an entry), DONE (the end), FAIL (the phone refused this directory:
        SyncFail with its message; real adbd then ends the stream), anything else SyncLost. Past `most` entries
        the rest is left unread and the listing comes back `cut`: the caller opens a new stream.
        """
        self.request(b"LIST", path)
        out: list[Entry] = []
        named = 0
        while True:
            ident = self._read(_ID)
            if ident == b"FAIL":
                raise self._fail()
            if ident not in (b"DENT", b"DONE"):
                raise SyncLost(f"sync: unexpected {ident!r} answering LIST")
            mode, size, _mtime, namelen = _DENT_BODY.unpack(self._read(_DENT_BODY.size))
            if ident == b"DONE":
                return Listing(out)
            if namelen > _NAME_MAX:
                raise SyncLost(f"sync: a {namelen}-byte name answering LIST")
            name = self._read(namelen).decode("utf-8", "surrogateescape")
            if name not in (".", ".."):
                named += 1
                if most is not None and named > most:
                    return Listing(out, cut=True)
            out.append(Entry(name, mode, size))

    def reply(self, *, gather: bool = False) -> Iterator[memoryview]:
        """The next RECV answer in chunks (each valid until the next one); consume it whole to stay in step.

        A chunk is one DATA payload, or with `gather` the payloads that arrived back to back, up to COALESCE bytes
        (fewer, larger writes for a big file; what is held is still bounded). Gathered chunks take RING buffers in
        turn, so a chunk stays valid while RING - 1 more are handed out: those before can be written out meanwhile.
        """
        self._turn = 0
        view = memoryview(self._chunks[0])
        room = len(view) if gather else DATA_MAX
        at = 0
        while True:
            ident, length = _HEAD.unpack(self._read(_HEAD.size))
            if ident == b"DONE":
                if at:
                    yield view[:at]
                return
            if ident == b"FAIL" and length <= DATA_MAX:
                raise SyncFail(self._read(length).decode("utf-8", "replace"))
            if ident != b"DATA" or length > DATA_MAX:
                raise SyncLost(f"sync: unexpected {ident!r} of {length} bytes answering RECV")
            if at + length > room:
                yield view[:at]
                self._turn = (self._turn + 1) % RING
                view, at = memoryview(self._chunks[self._turn]), 0
            got = 0
            while got < length:
                n = self._in.readinto(view[at + got:at + length])
                if not n:
                    raise SyncLost(f"sync stream closed by the phone mid-chunk ({got} of {length} bytes)")
                got += n
            at += length
            if not gather:
                yield view[:at]
                at = 0

    def recv(self, path: str) -> Iterator[memoryview]:
        """Request one file and yield its chunks."""
        self.request(b"RECV", path)
        yield from self.reply()

    def send(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """SEND one file whole (DATA chunks, then DONE) and read the phone's OKAY; SyncFail when it refuses."""
        self.request(b"SEND", f"{path},{stat.S_IFREG | mode}")
        for at in range(0, len(data), DATA_MAX):
            piece = data[at : at + DATA_MAX]
            self._send(_HEAD.pack(b"DATA", len(piece)) + piece)
        self._send(_HEAD.pack(b"DONE", int(time.time())))
        ident, length = _HEAD.unpack(self._read(_HEAD.size))
        if ident == b"FAIL" and length <= _FAIL_MAX:
            raise SyncFail(self._read(length).decode("utf-8", "replace"))
        if ident != b"OKAY":
            raise SyncLost(f"sync: unexpected {ident!r} answering SEND")

    def close(self) -> None:
        """QUIT and close."""
        try:
            self._sock.sendall(_HEAD.pack(b"QUIT", 0))
        except OSError:
            pass
        self._in.close()
        self._c.close()

    def reopen(self) -> None:
        """A fresh stream (real adbd ends the session after answering FAIL); requests in flight are dropped."""
        self.close()
        self._open()


class FileTooLarge(OSError):
    """A file read whole (`read_file`) went past its cap; the rest was never read."""


def read_file(device: AdbDevice, path: str, most: int, *, stall_s: float = DEFAULT_STALL_S) -> bytes:
    """A phone's file, on its own sync stream, never more than `most` bytes held: past them it is FileTooLarge
    (the stream is closed unread). SyncFail when the phone refuses it, SyncLost when the stream breaks (SyncStalled
    when it carries nothing for `stall_s`)."""
    sync = SyncSession(device, stall_s)
    try:
        data = bytearray()
        for chunk in sync.recv(path):
            if len(data) + len(chunk) > most:
                raise FileTooLarge(f"larger than {most} bytes, not read")
            data += chunk
        return bytes(data)
    finally:
        sync.close()


def write_file(device: AdbDevice, path: str, data: bytes, *, stall_s: float = DEFAULT_STALL_S,
               stop: threading.Event | None = None) -> None:
    """Put `data` at `path` on the phone (mode 0644) on its own sync stream; like adbutils' push, except that a phone
    that stops answering ends it after the stall window (SyncStalled) instead of holding the caller for good.
    SyncFail when the phone refuses it."""
    sync = SyncSession(device, stall_s, stop=stop)
    try:
        sync.send(path, data)
    finally:
        sync.close()


def remote_mode(device: AdbDevice, path: str, *, stall_s: float = DEFAULT_STALL_S) -> int:
    """The mode of `path` on the phone (0 when it does not exist), within the stall window (SyncStalled past it)."""
    sync = SyncSession(device, stall_s)
    try:
        return sync.stat(path)[0]
    finally:
        sync.close()
