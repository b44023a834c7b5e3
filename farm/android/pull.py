"""Pull a phone's `eval/<run>/` tree into a directory of the run (`farm.results.store` names it: a try's
`try_dir`, or `pulled_dir` for `farm pull`), safely and fast.

Every entry name is checked before anything is written: a name that is absolute, contains a path
separator, a control character or `..`, a symlink (never followed), a special file, or a file over
the size or total cap is refused and listed; nothing is ever written outside the destination
directory. Files arrive in a temp file next to their final name and appear under it only once complete.

A pull keeps what it can: an entry the phone refuses (a FAIL answering its LIST or RECV), one past a cap of
`farm.android.pull_limits` (depth, entries per directory, entries per tree) or a path longer than the sync
protocol carries is refused alone and listed, on a fresh stream when the old one is out of step; the rest of
the tree is pulled. Only a phone that cannot be reached again stops the pull. Every reply is read by its id
first (DENT, DONE, FAIL, DATA, STAT), so a FAIL is never taken for a directory entry.

A stalled link ends the pull: a stream that receives no byte for `stall_s` (farm.yaml, default 20 s) raises
SyncStalled, and the pull stops with a `<remote>: link stalled (...)` refusal, never pulled again in the same try (a
stall costs its window on every attempt; the try's infrastructure error re-queues it instead). The stream is read in
short polls, so a run that is stopping (`stop` set: Ctrl-C, SIGTERM) waits at most STOP_GRACE_S for a silent phone.

Speed: one `sync:` stream for the whole tree, the tree listed first, then the RECV requests
pipelined (a bounded window of requests in flight; the phone answers them in order), so the
phone never waits for a round trip between files. A file's DATA payloads are gathered into 1 MiB writes; a big
file's are written by another thread while the next ones arrive. Memory stays RING (3) 1 MiB chunks plus a 1 MiB
read buffer.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from farm.android.pull_limits import PullCaps, caps_of
from farm.android.sync_stream import (
    COALESCE,
    RING,
    SYNC_PATH_MAX,
    Listing,
    SyncFail,
    SyncLost,
    SyncSession,
    SyncStalled,
)
from farm.config import DEFAULT_STALL_S, PullLimits
from farm.fsutil import new_file_mode

if TYPE_CHECKING:
    from adbutils import AdbDevice

_MB = 1024 * 1024
_LOCAL_NAME_MAX = 255
"""Longest file name (bytes) the local file systems take (NAME_MAX); a phone's file system may allow longer ones."""
WINDOW_FILES = 32
"""RECV requests in flight at most; the replies wait in the adb server's flow-controlled stream, not here."""

@dataclass
class PullResult:
    """What a pull fetched and what it refused."""

    files: int = 0
    bytes: int = 0
    refused: list[str] = field(default_factory=list)
    """`<device path>: why` for every refused entry."""
    found: bool = True
    """False when the remote directory does not exist."""
    stalled: str | None = None
    """Why the link was taken for stalled (`no answer from the phone for N s`) when it was: the pull stopped there,
    with a `link stalled` refusal, and the tree is partial."""


@dataclass(frozen=True)
class _Job:
    rpath: str
    local: Path
    size: int


def refuse_reason(name: str) -> str | None:
    """Why an entry name may not be written locally, or None when it is a plain file name."""
    if not name or name in (".", ".."):
        return "empty or dot name"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "control character in name"
    if name.startswith("/") or "/" in name or "\\" in name:
        return "name contains a path separator"
    if ".." in PurePosixPath(name).parts or name.startswith(".."):
        return "name escapes the directory"
    if len(name.encode("utf-8", "surrogateescape")) > _LOCAL_NAME_MAX:
        # Refused here, by name: creating it would fail with ENAMETOOLONG and stop the whole pull.
        return f"name longer than {_LOCAL_NAME_MAX} bytes"
    return None


def _own_dir(path: Path) -> bool:
    """Create `path` as a directory; False when something else (a symlink, a file) already holds the name."""
    try:
        path.mkdir()
    except FileExistsError:
        return stat.S_ISDIR(path.lstat().st_mode)  # lstat: a symlink to a directory is not ours
    return True


def pull_tree(
    device: AdbDevice, remote: str, dest: Path, limits: PullLimits, *, again: bool = False,
    caps: PullCaps | None = None, stall_s: float = DEFAULT_STALL_S, stop: threading.Event | None = None,
) -> PullResult:
    """Copy `remote` (a directory) into `dest` (created if needed; existing files are never overwritten).

    Device errors never raise: a phone that goes away mid-pull ends the pull with a
    `<remote>: pull stopped (...)` entry in `refused`, and no partial file under a final name.
    An entry the phone refuses, or one past a cap (`caps`, else `caps_of(limits)`), is refused alone.
    `again`: a later pull of the same tree, where a file already there with the phone's size is one
    an earlier pull fetched (skipped, not refused).
    A link that carries nothing for `stall_s` (STOP_GRACE_S once `stop` is set) ends the pull with a
    `<remote>: link stalled (...)` entry, and `stalled` set.
    """
    from adbutils import AdbError

    result = PullResult()
    try:
        sync = SyncSession(device, stall_s, stop=stop)
    except SyncStalled as exc:
        result.found, result.stalled = False, str(exc)
        result.refused.append(f"{remote}: {LINK_STALLED} ({exc})")
        return result
    except (AdbError, OSError) as exc:
        result.found = False
        result.refused.append(f"{remote}: {LINK_LOST} ({exc})")
        return result
    try:
        jobs = _plan(sync, remote.rstrip("/"), dest, limits, result, caps or caps_of(limits), again=again)
        _pull_files(sync, jobs, limits, result)
    except SyncStalled as exc:
        result.stalled = str(exc)
        result.refused.append(f"{remote}: {LINK_STALLED} ({exc})")
    except (AdbError, OSError, EOFError, struct.error) as exc:
        result.refused.append(f"{remote}: {PULL_STOPPED} ({exc})")
    finally:
        sync.close()
    return result


LINK_LOST = "cannot open a sync stream"
PULL_STOPPED = "pull stopped"
LINK_STALLED = "link stalled"
"""A pull that ended on a link carrying nothing: not pulled again (each attempt would wait the whole window)."""
RETRY_WAITS_S = (1.0, 2.0, 4.0, 8.0)
"""Waits before each new pull of a tree whose pull the link cut short (15 s in all: a short drop, a USB
re-enumeration or an adb server restart, not a phone that is gone)."""


def _cut_short(result: PullResult, remote: str) -> bool:
    return any(e.startswith(f"{remote}: {LINK_LOST}") or e.startswith(f"{remote}: {PULL_STOPPED}")
               for e in result.refused)


def pull_tree_retrying(
    device: AdbDevice, remote: str, dest: Path, limits: PullLimits, *, waits: tuple[float, ...] = RETRY_WAITS_S,
    stop: threading.Event | None = None, stall_s: float = DEFAULT_STALL_S,
) -> PullResult:
    """`pull_tree`, pulled again (keeping what arrived) while the link cuts it short and `waits` remain.

    The result counts every file that arrived; its refusals are the last pull's, plus the earlier
    pulls' other than the link's own. A stalled link is not pulled again (`_cut_short` is a dropped link only).
    """
    result = pull_tree(device, remote, dest, limits, stall_s=stall_s, stop=stop)
    for wait in waits:
        if not _cut_short(result, remote) or (stop is not None and stop.wait(wait)):
            break
        if stop is None:
            time.sleep(wait)
        more = pull_tree(device, remote, dest, limits, again=True, stall_s=stall_s, stop=stop)
        kept = [e for e in result.refused if not e.startswith(f"{remote}: ")]
        result = PullResult(files=result.files + more.files, bytes=result.bytes + more.bytes,
                            refused=[*dict.fromkeys(kept + more.refused)], found=result.found or more.found,
                            stalled=more.stalled)
    return result


def _plan(
    sync: SyncSession, remote: str, dest: Path, limits: PullLimits, result: PullResult, caps: PullCaps, *,
    again: bool = False,
) -> list[_Job]:
    """List the tree, create its directories, and return the files to fetch; refusals go to `result`."""
    mode, _size = sync.stat(remote)
    if not stat.S_ISDIR(mode):
        result.found = False
        return []
    dest.mkdir(parents=True, exist_ok=True)
    max_file = int(limits.max_file_mb * _MB)
    max_total = int(limits.max_total_mb * _MB)
    planned = 0
    listed = 0
    jobs: list[_Job] = []
    stack: list[tuple[str, Path, int]] = [(remote, dest, 0)]
    while stack:
        rdir, ldir, depth = stack.pop()
        if listed >= caps.max_tree_entries:
            result.refused.append(f"{rdir!r}: not listed: the tree has more than {caps.max_tree_entries} entries "
                                  "(max_tree_entries)")
            continue
        listing = _list_alone(sync, rdir, caps.max_dir_entries, result)
        if listing is None:
            continue
        if listing.cut:
            result.refused.append(f"{rdir!r}: more than {caps.max_dir_entries} entries (max_dir_entries): the first "
                                  f"{caps.max_dir_entries} are pulled, the rest not listed")
        past_tree = 0
        for entry in listing.entries:
            name = entry.name
            if name in (".", ".."):
                continue
            listed += 1
            if listed > caps.max_tree_entries:
                past_tree += 1
                continue
            rpath = f"{rdir}/{name}"
            why = refuse_reason(name)
            if why is None and len(rpath.encode("utf-8", "surrogateescape")) > SYNC_PATH_MAX:
                why = f"path longer than {SYNC_PATH_MAX} bytes (the sync protocol's limit)"
            if why is None and stat.S_ISLNK(entry.mode):
                why = "symlink (not followed)"
            if why is None and not (stat.S_ISDIR(entry.mode) or stat.S_ISREG(entry.mode)):
                why = "not a regular file or directory"
            if why is None and stat.S_ISDIR(entry.mode) and depth + 1 > caps.max_depth:
                why = f"directory deeper than {caps.max_depth} levels (max_depth), not listed"
            if why is None and stat.S_ISREG(entry.mode) and entry.size > max_file:
                why = f"file larger than {limits.max_file_mb:g} MB"
            local = ldir / name
            if why is None and again and stat.S_ISREG(entry.mode) and _pulled_before(local, entry.size):
                planned += entry.size
                continue
            if why is None and stat.S_ISREG(entry.mode) and planned + entry.size > max_total:
                why = f"tree larger than {limits.max_total_mb:g} MB"
            if why is not None:
                result.refused.append(f"{rpath!r}: {why}")
            elif stat.S_ISDIR(entry.mode):
                # Names are single plain components and every directory below dest is a real one made
                # or checked here, so nothing can lead outside dest; files are linked in, never through a symlink.
                if _own_dir(local):
                    stack.append((rpath, local, depth + 1))
                else:
                    result.refused.append(f"{rpath!r}: {local} exists and is not a directory")
            else:
                planned += entry.size
                jobs.append(_Job(rpath, local, entry.size))
        if past_tree:
            result.refused.append(f"{rdir!r}: {past_tree} entries not pulled: the tree has more than "
                                  f"{caps.max_tree_entries} entries (max_tree_entries)")
    return jobs


def _said(message: str) -> str:
    """A phone's own words, quoted and short: they go to a terminal and into the run's notes."""
    return repr(message[:200])


def _list_alone(sync: SyncSession, rdir: str, most: int, result: PullResult) -> Listing | None:
    """One directory's listing, or None when it is refused alone (listed in `result`) and the pull goes on.

    A FAIL refuses that directory (real adbd then ends the stream: a new one is opened). A broken answer (garbage,
    a cut) is asked again once on a new stream, then refused. When the phone cannot be reached again, opening the
    stream raises and the pull stops, as before.
    """
    for attempt in (1, 2):
        try:
            listing = sync.list(rdir, most)
        except SyncStalled:
            raise  # asked again, a stalled link would only cost the window once more
        except SyncFail as exc:
            result.refused.append(f"{rdir!r}: the phone refused to list it: FAIL {_said(str(exc))}")
            sync.reopen()
            return None
        except SyncLost as exc:
            sync.reopen()
            if attempt == 2:
                result.refused.append(f"{rdir!r}: its listing broke twice ({exc})")
                return None
            continue
        if listing.cut:
            sync.reopen()  # the rest of the listing was left unread: this stream is out of step
        return listing
    return None


def _pulled_before(local: Path, size: int) -> bool:
    """A regular file (not a link) of that size is already there: an earlier pull of this tree fetched it (files
    land whole under their final name, never partly)."""
    try:
        st = local.lstat()
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size == size


class _Refused(Exception):
    """A file arrived but may not be kept (the stream is still in step)."""


def _pull_files(sync: SyncSession, jobs: list[_Job], limits: PullLimits, result: PullResult) -> None:
    """Fetch `jobs` with up to WINDOW_FILES requests in flight, in order."""
    # The writer thread starts with the first big file; a tree of small files never starts it.
    with ThreadPoolExecutor(1, thread_name_prefix="pull-write") as writer:
        _pull_in_turn(sync, deque(jobs), limits, result, writer)


def _pull_in_turn(sync: SyncSession, todo: deque[_Job], limits: PullLimits, result: PullResult,
                  writer: ThreadPoolExecutor) -> None:
    mode = new_file_mode()  # once per pull, not per file
    flight: deque[_Job] = deque()
    max_file = int(limits.max_file_mb * _MB)
    max_total = int(limits.max_total_mb * _MB)
    while todo or flight:
        while todo and len(flight) < WINDOW_FILES:
            job = todo.popleft()
            sync.request(b"RECV", job.rpath)
            flight.append(job)
        job = flight.popleft()
        room = max_total - result.bytes
        cap, over = (max_file, "file grew past the size cap") if max_file <= room else (
            room, f"tree larger than {limits.max_total_mb:g} MB")
        try:
            result.bytes += _receive(sync, job.local, cap, over, mode, writer if job.size > COALESCE else None)
            result.files += 1
        except SyncFail as exc:
            result.refused.append(f"{job.rpath!r}: FAIL {_said(str(exc))}")
            # Real adbd closes the stream after a FAIL: ask again for what was in flight on a new one.
            todo.extendleft(reversed(flight))
            flight.clear()
            sync.reopen()
        except _Refused as exc:
            result.refused.append(f"{job.rpath!r}: {exc}")


def _temp(parent: Path) -> tuple[int, str]:
    """A new file beside the final name (O_EXCL: never an existing file, never through a symlink)."""
    tmp = os.path.join(parent, f".pull.{os.getpid()}.tmp")
    try:
        return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644), tmp
    except FileExistsError:  # a pulled file has that name, or another pull runs here: pick a random one
        return tempfile.mkstemp(prefix=".pull.", dir=parent)


def _write_all(fd: int, chunk: memoryview) -> None:
    while chunk:
        chunk = chunk[os.write(fd, chunk):]


def _receive(sync: SyncSession, local: Path, cap: int, over: str, mode: int,
             writer: ThreadPoolExecutor | None = None) -> int:
    """Read the next RECV answer into a temp file beside `local` and link it into place; returns its size.

    With `writer` (a big file), each chunk is written out by that thread while the next one is read.
    """
    fd, tmp = _temp(local.parent)
    size = 0
    try:
        pending: deque[Future[None]] = deque()
        try:
            for chunk in sync.reply(gather=True):
                size += len(chunk)
                # The chunk after this one fills the buffer of the RING-1'th write back: that one must be done.
                while len(pending) >= RING - 1:
                    pending.popleft().result()
                if size <= cap:  # past the cap: keep reading so the stream stays in step
                    if writer is None:
                        _write_all(fd, chunk)
                    else:
                        pending.append(writer.submit(_write_all, fd, chunk))
            while pending:
                pending.popleft().result()
            os.fchmod(fd, mode)  # mkstemp's 0600 would keep the evidence from other readers
        finally:
            while pending:  # the read failed while writes ran: they must end before the file is closed
                with contextlib.suppress(OSError):
                    pending.popleft().result()
            os.close(fd)
        if size > cap:
            raise _Refused(over)
        try:
            os.link(tmp, local)  # never replaces an existing name, unlike rename
        except FileExistsError:
            raise _Refused("already pulled (never overwritten)") from None
        return size
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
