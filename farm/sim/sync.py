"""`sync:` service (v1): STAT, LIST, RECV, SEND, QUIT over the phone's file system."""

from __future__ import annotations

import os
import secrets
import struct
from pathlib import Path
from typing import BinaryIO

from farm.sim import rootfs
from farm.sim.adbd import Stream
from farm.sim.phone import PhoneState

CHUNK = 64 * 1024
_REQ = struct.Struct("<4sI")
_STAT = struct.Struct("<4sIII")
_DENT = struct.Struct("<4sIIII")
_STAT2 = struct.Struct("<4sIQQIIIIQqqq")
_DENT2 = struct.Struct("<4sIQQIIIIQqqqI")
_ENOENT = 2
_MAX_PATH = 1024


async def serve_sync(phone: PhoneState, stream: Stream) -> None:
    """Answer sync requests until QUIT or the host closes the stream."""
    await stream.accept()
    while True:
        header = await stream.read_exactly(8)
        ident, length = _REQ.unpack(header)
        if ident == b"QUIT":
            return
        # As adbd's handle_sync_command: the length is checked before the id, and either FAIL ends the stream.
        if length > _MAX_PATH:
            await _fail(stream, "path too long")
            return
        if ident not in (b"STAT", b"STA2", b"LST2", b"LIST", b"LIS2", b"RECV", b"SEND"):
            await _fail(stream, f"unknown command {int.from_bytes(ident, 'little'):08x}")
            return
        # adbd reads the path as a C string: it ends at the first NUL (which no host file call accepts either).
        path = (await stream.read_exactly(length)).split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
        if ident == b"STAT":
            await stream.write(_stat_reply(phone, path))
        elif ident in (b"STA2", b"LST2"):
            await stream.write(_stat2_reply(phone, path, follow=ident == b"STA2"))
        elif ident == b"LIST":
            await _list(phone, stream, path)
        elif ident == b"LIS2":
            await _list2(phone, stream, path)
        elif ident == b"RECV":
            if not await _recv(phone, stream, path):
                return
        else:
            if not await _send(phone, stream, path):
                return
        if not stream.has_pending_input():
            # Pipelined requests (adb pull sends many RECVs ahead) share WRTEs; flush when idle.
            await stream.flush()


def _stat_reply(phone: PhoneState, path: str) -> bytes:
    """STAT (v1) is lstat, as adbd's do_lstat_v1: a symlink is reported, not followed."""
    try:
        st = os.lstat(phone.host_path(path, follow=False))
    except OSError:
        return _STAT.pack(b"STAT", 0, 0, 0)
    return _STAT.pack(b"STAT", st.st_mode & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF, int(st.st_mtime))


def _v2_fields(st: os.stat_result) -> tuple[int, int, int, int, int, int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_mode & 0xFFFFFFFF, st.st_nlink, 0, 1015, st.st_size,
            int(st.st_atime), int(st.st_mtime), int(st.st_ctime))


def _stat2_reply(phone: PhoneState, path: str, follow: bool) -> bytes:
    """STA2 (stat) / LST2 (lstat): the 72-byte sync_stat_v2, errno set when missing."""
    try:
        # The resolved path holds no symlink (not even the last one when following): lstat is exact.
        st = os.lstat(phone.host_path(path, follow=follow))
    except OSError as exc:
        errno = exc.errno or _ENOENT
        return _STAT2.pack(b"STA2", errno, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    return _STAT2.pack(b"STA2", 0, *_v2_fields(st))


async def _list2(phone: PhoneState, stream: Stream, path: str) -> None:
    """LIS2: DNT2 entries (stat_v2 + name), then a zeroed DONE of the same size."""
    try:
        host = phone.host_path(path)
        entries = [(".", os.stat(host)), ("..", os.stat(host))]
        with os.scandir(host) as found:
            for entry in found:
                try:
                    entries.append((entry.name, entry.stat(follow_symlinks=False)))
                except OSError:
                    continue
    except OSError:
        entries = []
    for name, st in entries:
        raw = name.encode("utf-8", "surrogateescape")
        await stream.write(_DENT2.pack(b"DNT2", 0, *_v2_fields(st), len(raw)) + raw)
    await stream.write(_DENT2.pack(b"DONE", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))


async def _list(phone: PhoneState, stream: Stream, path: str) -> None:
    try:
        host = phone.host_path(path)
        with os.scandir(host) as found:
            entries = list(found)
    except OSError:
        entries = []
    else:
        for name in (".", ".."):
            st = os.stat(host)
            stream.write_nowait(_dent(name, st))
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        await stream.write(_dent(entry.name, st))
    await stream.write(_DENT.pack(b"DONE", 0, 0, 0, 0))


def _dent(name: str, st: os.stat_result) -> bytes:
    raw = name.encode("utf-8", "surrogateescape")
    return _DENT.pack(b"DENT", st.st_mode & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF, int(st.st_mtime), len(raw)) + raw


async def _fail(stream: Stream, message: str) -> None:
    # A path the host sent that is not UTF-8 goes back as the bytes it came as (it was read with surrogateescape).
    raw = message.encode("utf-8", "surrogateescape")
    await stream.write(_REQ.pack(b"FAIL", len(raw)) + raw)
    await stream.flush()


async def _recv(phone: PhoneState, stream: Stream, path: str) -> bool:
    try:
        handle = rootfs.open_read(phone.host_path(path))
    except OSError as exc:
        await _fail(stream, f"open failed: {exc.strerror}: {path}")
        return True
    with handle:
        while chunk := handle.read(CHUNK):
            await stream.write(_REQ.pack(b"DATA", len(chunk)) + chunk)
    await stream.write(_REQ.pack(b"DONE", 0))
    return True


async def _send(phone: PhoneState, stream: Stream, spec: str) -> bool:
    path, _, mode_text = spec.rpartition(",")
    if not path:
        path, mode_text = spec, "33188"
    try:
        mode = int(mode_text)
    except ValueError:
        mode = 0o100644
    limit = phone.profile.limits.push_max_bytes
    error: str | None = None
    handle: BinaryIO | None = None
    host: Path | None = None
    tmp: Path | None = None
    try:
        # The last component is not followed: a pushed file replaces a symlink, never writes through it.
        host = phone.host_path(path, follow=False)
        if host == phone.root or os.path.isdir(host) and not os.path.islink(host):
            raise IsADirectoryError(21, "Is a directory")
        os.makedirs(host.parent, exist_ok=True)
        tmp = host.with_name(f".{host.name}.{secrets.token_hex(6)}.farm-sync-tmp")
        handle = rootfs.open_write(tmp, exclusive=True)
    except OSError as exc:
        error = f"couldn't create file: {exc.strerror}: {path}"
    # Consume DATA… DONE even after an error so the stream stays in step.
    mtime = 0
    size = 0
    complete = False
    try:
        while True:
            ident, length = _REQ.unpack(await stream.read_exactly(8))
            if ident == b"DATA":
                if length > CHUNK:
                    await _fail(stream, "data too large")
                    return False
                data = await stream.read_exactly(length)
                size += length
                if handle is not None and size > limit:
                    # Over the cap nothing more is written and nothing is kept; the rest is drained.
                    handle.close()
                    handle = None
                    error = f"couldn't write file: File too large (over {limit} bytes, limits.push_max_bytes): {path}"
                if handle is not None:
                    handle.write(data)
            elif ident == b"DONE":
                mtime, complete = length, True
                break
            else:
                await _fail(stream, f"invalid data message {ident!r}")
                return False
    finally:
        if handle is not None:
            handle.close()
        if tmp is not None and (error is not None or not complete):
            _unlink(tmp)
    if error is not None or host is None or tmp is None:
        await _fail(stream, error or "couldn't create file")
        return True
    try:
        # adbd keeps only the permission bits (`mode &= 0777`): a pushed file is never setuid, and any number the
        # host sends (negative, past 32 bits) is a mode.
        os.chmod(tmp, (mode & 0o777) or 0o644)
        os.replace(tmp, host)
        if mtime:
            os.utime(host, (mtime, mtime), follow_symlinks=False)
    except OSError as exc:
        _unlink(tmp)
        await _fail(stream, f"couldn't write file: {exc.strerror}")
        return True
    await stream.write(_REQ.pack(b"OKAY", 0))
    return True


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
