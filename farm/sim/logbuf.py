"""The phone's log (logd): one bounded ring per buffer, written by `log`, the system and the apps, read by `logcat`.

Sizes follow logd: each buffer keeps 256 KiB (`ro.logd.size` default), an entry costs its payload (priority, tag,
message, two NULs) plus a fixed header, and the oldest entries go first when a buffer is full. A message is cut
where liblog cuts it (`LOGGER_ENTRY_MAX_PAYLOAD`), so one entry can never exceed a ring.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

BUFFERS = ("main", "radio", "events", "system", "crash", "stats", "security", "kernel")
"""logd's buffer ids, in `log_id_t` order (logcat prints interleaved buffers by time, names by this list)."""
DEFAULT_BUFFERS = ("main", "system", "crash", "kernel")
"""What logcat reads without `-b` (the kernel buffer stays empty on a user build)."""
RING_BYTES = 256 * 1024
MAX_PAYLOAD = 4068
"""LOGGER_ENTRY_MAX_PAYLOAD: priority byte + tag + NUL + message + NUL, cut by liblog beyond this."""
MAX_ENTRY = 5120
"""LOGGER_ENTRY_MAX_LEN, which `logcat -g` reports."""
ENTRY_HEADER = 28
"""Bytes logd accounts per entry besides the payload (its serialized header), so a flood of empty lines is bounded
by count as well: at most RING_BYTES / (ENTRY_HEADER + 3) entries per buffer."""
PRIORITIES = "??VDIWEFS"
"""Priority letter by `android_LogPriority` value (2 = VERBOSE … 8 = SILENT)."""
VERBOSE, DEBUG, INFO, WARN, ERROR, FATAL, SILENT = range(2, 9)

SYSTEM_SERVER_PID = 900
"""system_server, as `ps` lists it: ActivityManager and friends log from here."""
SHELL_UID, SYSTEM_UID = 2000, 1000


def app_pid(package: str) -> int:
    """The pid an app's process has on this phone (the one `ps` and `pidof` print)."""
    return 4000 + sum(package.encode()) % 5000


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One log record as logd stores it."""

    seq: int
    wall: float
    pid: int
    tid: int
    uid: int
    priority: int
    tag: str
    message: str
    buffer: str

    @property
    def size(self) -> int:
        return ENTRY_HEADER + 3 + len(self.tag.encode()) + len(self.message.encode())


def cut_message(tag: str, message: str) -> str:
    """The message as liblog delivers it: the payload is cut at MAX_PAYLOAD bytes (and loses its NUL)."""
    room = MAX_PAYLOAD - 3 - len(tag.encode())
    raw = message.encode()
    if len(raw) <= room + 1:
        return message
    return raw[: max(room + 1, 0)].decode("utf-8", "ignore")


class LogBuffer:
    """logd for one phone: rings per buffer, a write counter, and the readers waiting for new entries.

    Writers may be on any thread (the UI lock holders, the phone's loop); readers are coroutines of the phone's loop.
    """

    def __init__(self, ring_bytes: int = RING_BYTES) -> None:
        self.ring_bytes = ring_bytes
        self._rings: dict[str, deque[LogEntry]] = {name: deque() for name in BUFFERS}
        self._used: dict[str, int] = dict.fromkeys(BUFFERS, 0)
        self._seq = itertools.count(1)
        self.last_seq = 0
        self._pids = itertools.count(12000)
        self._lock = threading.Lock()
        self.waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        """Readers blocked in `wait_new` (a streaming logcat); empty once every one has ended."""

    def new_pid(self) -> int:
        """A fresh process id for a short-lived command (`log`, `screenrecord`) run from the shell."""
        return next(self._pids)

    def write(self, priority: int, tag: str, message: str, *, buffer: str = "main", pid: int = SYSTEM_SERVER_PID,
              tid: int | None = None, uid: int = SYSTEM_UID) -> LogEntry:
        """Append one record (cut like liblog) and wake the readers."""
        buffer = buffer if buffer in self._rings else "main"
        ring = self._rings[buffer]
        tag = tag.encode()[: MAX_PAYLOAD - 3].decode("utf-8", "ignore")  # a tag alone never overflows a payload
        with self._lock:
            entry = LogEntry(next(self._seq), time.time(), pid, pid if tid is None else tid, uid, priority, tag,
                             cut_message(tag, message), buffer)
            self.last_seq = entry.seq
            ring.append(entry)
            self._used[entry.buffer] += entry.size
            while self._used[entry.buffer] > self.ring_bytes and ring:
                self._used[entry.buffer] -= ring.popleft().size
            waiters = list(self.waiters)
        for loop, event in waiters:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:
                pass  # that reader's loop has stopped: nothing left to wake
        return entry

    def clear(self, buffers: Iterable[str]) -> None:
        """`logcat -c`: drop every entry of these buffers."""
        with self._lock:
            for name in buffers:
                if name in self._rings:
                    self._rings[name].clear()
                    self._used[name] = 0

    def used(self, buffer: str) -> int:
        """Bytes the buffer holds now (logd's "consumed")."""
        return self._used.get(buffer, 0)

    def read(self, buffers: Iterable[str], after: int = 0) -> tuple[list[LogEntry], int]:
        """Entries of these buffers with a sequence number above `after`, oldest first, and the last sequence
        number written when they were taken (where the next read starts)."""
        with self._lock:
            parts = [self._newer(self._rings[name], after) for name in buffers if name in self._rings]
            last = self.last_seq
        return list(heapq.merge(*parts, key=lambda e: e.seq)), last

    @staticmethod
    def _newer(ring: deque[LogEntry], after: int) -> list[LogEntry]:
        newer: list[LogEntry] = []
        for entry in reversed(ring):
            if entry.seq <= after:
                break
            newer.append(entry)
        newer.reverse()
        return newer

    async def wait_new(self, after: int) -> None:
        """Return once an entry newer than `after` was written (at once if one already was)."""
        event = asyncio.Event()
        waiter = (asyncio.get_running_loop(), event)
        with self._lock:  # writers on other threads copy the set under this lock
            self.waiters.add(waiter)
        try:
            while self.last_seq <= after:
                event.clear()
                await event.wait()
        finally:
            with self._lock:
                self.waiters.discard(waiter)
