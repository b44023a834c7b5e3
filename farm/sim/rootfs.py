"""The phone's file system on the host: one resolver from device paths to host paths, and capped copies.

Every file operation of the virtual phone (shell commands, the `sync:` service, the simulated apps) turns
a device path into a host path with `resolve`, which walks it one component at a time inside the phone's
root, the way the kernel walks a path inside a chroot:

- a relative path starts at the shell's cwd; `.` and `..` as typed fold lexically and `/..` is `/`;
- a storage alias (`/storage/emulated/0`, `/storage/self/primary`, `/mnt/sdcard`, …) is `/sdcard`, also
  when a symlink leads into it;
- each existing component is lstat'ed, never followed by the host: a symlink's target is read as a
  *device* path — an absolute target starts again at the phone's `/` (the root), a relative one at the
  link's directory — and a `..` that would climb above `/` is refused (`PathEscapeError`, EACCES);
- at most 40 links per path (ELOOP beyond, as the kernel's limit), so a loop cannot hang;
- the last component is followed only with `follow=True` (or a trailing `/`); `follow=False` is for
  acting on the entry itself (`rm`, `mv`, lstat);
- past a missing component the rest is appended as typed (what `mkdir -p` or a push creates); a
  non-directory in the middle is ENOTDIR.

The result is always under the root, and no component the walk went through is a symlink (nor the last
one with `follow=True`). Operations then open it with `O_NOFOLLOW` and refuse what is not a regular file
(a planted FIFO or device node cannot block or reach the host).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import posixpath
import stat as statmod
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

STORAGE = "/sdcard"
STORAGE_ALIASES = (
    "/storage/emulated/0",
    "/storage/self/primary",
    "/mnt/sdcard",
    "/mnt/user/0/primary",
    "/data/media/0",
    "/sdcard",
)
"""Every alias of the primary external storage maps to one host directory."""
_ALIAS_PARTS = {tuple(a.strip("/").split("/")) for a in STORAGE_ALIASES if a != STORAGE}
LINK_LIMIT = 40
"""Symlinks one resolution may follow (Linux's MAXSYMLINKS)."""
CHUNK = 1024 * 1024
_DEPTH_LIMIT = 200
"""Deepest directory a recursive copy descends into (it holds two descriptors per level)."""


class PathEscapeError(PermissionError, ValueError):
    """A device path whose resolution would leave the phone's root (EACCES, `Permission denied`)."""

    def __init__(self, device_path: str) -> None:
        super().__init__(errno.EACCES, os.strerror(errno.EACCES), device_path)


class CopyLimitError(OSError):
    """A copy went over its byte or wall-time budget."""


def _err(code: int, device_path: str) -> OSError:
    return OSError(code, os.strerror(code), device_path)


def canonical(device_path: str, cwd: str = "/") -> str:
    """Normalised absolute device path (lexical) with storage aliases folded into `/sdcard`."""
    path = posixpath.normpath(posixpath.join(cwd, device_path or "."))
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    for alias in STORAGE_ALIASES:
        if path == alias or path.startswith(alias + "/"):
            return STORAGE + path[len(alias):]
    return path


def resolve(root: Path, device_path: str, cwd: str = "/", *, follow: bool = True) -> Path:
    """Host path of `device_path` strictly inside `root` (see the module docstring for the rules).

    Raises PathEscapeError (a link climbing above `/`), or OSError ELOOP / ENOENT / ENOTDIR with the
    device path as `filename`.
    """
    if device_path.endswith("/"):
        follow = True  # `link/` means what the link points to, as in POSIX path resolution
    todo = deque(canonical(device_path, cwd).split("/"))
    done: list[str] = []
    missing = False
    hops = 0
    while todo:
        name = todo.popleft()
        if name in ("", "."):
            continue
        if name == "..":
            # Only a link target gets here: the typed path was folded by canonical().
            if missing:
                raise _err(errno.ENOENT, device_path)
            if not done:
                raise PathEscapeError(device_path)
            done.pop()
            continue
        step = [*done, name]
        if tuple(step) in _ALIAS_PARTS:
            # Walk on from `/sdcard` itself, which is lstat'ed like any component (it may be a link).
            done, missing = [], False
            todo.appendleft(STORAGE.strip("/"))
            continue
        if missing:
            done = step
            continue
        host = root.joinpath(*step)
        try:
            st = os.lstat(host)
        except FileNotFoundError:
            done, missing = step, True
            continue
        except OSError as exc:
            raise _err(exc.errno or errno.EIO, device_path) from None
        if statmod.S_ISLNK(st.st_mode) and (todo or follow):
            hops += 1
            if hops > LINK_LIMIT:
                raise _err(errno.ELOOP, device_path)
            target = os.readlink(host)
            if not target:
                raise _err(errno.ENOENT, device_path)
            if target.startswith("/"):
                done = []
            todo.extendleft(reversed(target.split("/")))
            continue
        if not statmod.S_ISDIR(st.st_mode) and any(p not in ("", ".") for p in todo):
            raise _err(errno.ENOTDIR, device_path)
        done = step
    return root.joinpath(*done)


def open_read(host: Path | str) -> BinaryIO:
    """Open a regular file for reading; never through a final symlink, never a FIFO or device."""
    fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        _require_regular(fd, host)
    except OSError:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def open_write(host: Path | str, *, append: bool = False, exclusive: bool = False, mode: int = 0o644) -> BinaryIO:
    """Open (create) a regular file for writing; never through a final symlink, never a FIFO or device."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    flags |= os.O_EXCL if exclusive else os.O_APPEND if append else 0
    fd = os.open(host, flags, mode)
    try:
        _require_regular(fd, host)
        if not append and not exclusive:
            os.ftruncate(fd, 0)  # only now that it is known to be a regular file
    except OSError:
        os.close(fd)
        raise
    return os.fdopen(fd, "ab" if append else "wb")


def touch(host: Path | str) -> None:
    """Create an empty regular file or update its times; never through a final symlink."""
    try:
        if statmod.S_ISDIR(os.lstat(host).st_mode):
            os.utime(host, follow_symlinks=False)
            return
    except FileNotFoundError:
        pass
    fd = os.open(host, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    try:
        _require_regular(fd, host)
        os.utime(fd)
    finally:
        os.close(fd)


def read_bytes(root: Path, device_path: str, limit: int | None = None) -> bytes:
    """Content of a regular file of the phone (at most `limit` bytes)."""
    with open_read(resolve(root, device_path)) as handle:
        return handle.read(-1 if limit is None else limit)


def makedirs(root: Path, device_path: str) -> Path:
    """`mkdir -p` inside the phone; returns the resolved directory."""
    host = resolve(root, device_path)
    os.makedirs(host, exist_ok=True)
    return host


def write_atomic(root: Path, device_path: str, data: bytes) -> None:
    """Replace a file of the phone (parents created): a new file renamed over the entry, never written
    through a symlink that stands there."""
    host = resolve(root, device_path, follow=False)
    if host == root:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), device_path)
    os.makedirs(host.parent, exist_ok=True)
    tmp = host.with_name(f".{host.name}.{os.urandom(6).hex()}.tmp")
    try:
        with open_write(tmp, exclusive=True) as handle:
            handle.write(data)
        os.replace(tmp, host)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def append_bytes(root: Path, device_path: str, data: bytes) -> None:
    """Append to a regular file of the phone (created when missing)."""
    with open_write(resolve(root, device_path), append=True) as handle:
        handle.write(data)


def _require_regular(fd: int, host: Path | str) -> None:
    st = os.fstat(fd)
    if statmod.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(host))
    if not statmod.S_ISREG(st.st_mode):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(host))


@dataclass
class CopyBudget:
    """What one command may copy: bytes in total and wall time, checked as it goes."""

    max_bytes: int
    max_seconds: float
    started: float = field(default_factory=time.monotonic)
    copied: int = 0
    exhausted: bool = False
    """Set once a cap was hit: the command copies nothing more."""

    def reserve(self, size: int) -> None:
        """Fail before writing when `size` more bytes would go over the byte cap."""
        if self.copied + size > self.max_bytes:
            self.exhausted = True
            raise CopyLimitError(errno.EFBIG, f"copy over the {self.max_bytes}-byte limit (limits.copy_max_bytes)")

    def charge(self, size: int) -> None:
        """Count bytes about to be written (refused over the cap) and check the clock."""
        self.reserve(size)
        self.copied += size
        self.tick()

    def tick(self) -> None:
        """Fail once the wall-time cap has passed."""
        if time.monotonic() - self.started > self.max_seconds:
            self.exhausted = True
            raise CopyLimitError(errno.ETIME, f"copy over the {self.max_seconds:g} s limit (limits.copy_max_seconds)")


async def copy_fd(src: int, dst: int, budget: CopyBudget) -> None:
    """Copy an open regular file to another in chunks, yielding to the loop between them."""
    while True:
        budget.tick()
        chunk = os.read(src, CHUNK)
        if not chunk:
            return
        budget.charge(len(chunk))
        view = memoryview(chunk)
        while view:
            view = view[os.write(dst, view):]
        await asyncio.sleep(0)


async def copy_file(src: Path, dst: Path, budget: CopyBudget) -> None:
    """Copy one resolved regular file onto a resolved destination (created or truncated)."""
    with open_read(src) as reader:
        budget.reserve(os.fstat(reader.fileno()).st_size)
        with open_write(dst) as writer:
            await copy_fd(reader.fileno(), writer.fileno(), budget)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


async def copy_tree(src: Path, dst: Path, budget: CopyBudget, created: list[str]) -> None:
    """`cp -r` of the resolved directory `src` into `dst` (created, or merged into when it exists).

    Walks with directory descriptors (openat, O_NOFOLLOW), so a directory swapped for a symlink while
    the copy yields is refused instead of followed. Symlinks are copied as links, never followed; other
    special files are refused. Paths it creates, relative to `dst` ("" for `dst` itself), are appended
    to `created` in creation order so the caller can roll back.
    """
    src_fd = os.open(src, _DIR_FLAGS)
    try:
        try:
            os.mkdir(dst, 0o755)
            created.append("")
        except FileExistsError:
            pass
        dst_fd = os.open(dst, _DIR_FLAGS)
    except OSError:
        os.close(src_fd)
        raise
    # Directories this copy made: met again in the source, they mean it is copying into itself.
    ours = {(os.fstat(dst_fd).st_dev, os.fstat(dst_fd).st_ino)}
    stack: list[tuple[int, int, list[str], str]] = [(src_fd, dst_fd, _names(src_fd), "")]
    try:
        while stack:
            sfd, dfd, names, rel = stack[-1]
            if not names:
                stack.pop()
                os.close(sfd)
                os.close(dfd)
                continue
            name = names.pop()
            budget.tick()
            await asyncio.sleep(0)
            child = posixpath.join(rel, name) if rel else name
            st = os.stat(name, dir_fd=sfd, follow_symlinks=False)
            if statmod.S_ISLNK(st.st_mode):
                target = os.readlink(name, dir_fd=sfd)
                _unlink_entry(dfd, name)
                os.symlink(target, name, dir_fd=dfd)
                created.append(child)
            elif statmod.S_ISREG(st.st_mode):
                budget.reserve(st.st_size)
                await _copy_entry(sfd, dfd, name, budget, created, child)
            elif statmod.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) in ours:
                    raise OSError(errno.EINVAL, "cannot copy a directory into itself", child)
                if len(stack) >= _DEPTH_LIMIT:
                    raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), child)
                child_src = os.open(name, _DIR_FLAGS, dir_fd=sfd)
                try:
                    try:
                        os.mkdir(name, 0o755, dir_fd=dfd)
                        created.append(child)
                    except FileExistsError:
                        pass
                    child_dst = os.open(name, _DIR_FLAGS, dir_fd=dfd)
                except OSError:
                    os.close(child_src)
                    raise
                dst_st = os.fstat(child_dst)
                ours.add((dst_st.st_dev, dst_st.st_ino))
                stack.append((child_src, child_dst, _names(child_src), child))
            else:
                raise PermissionError(errno.EACCES, "not a regular file, directory or symlink", child)
    finally:
        for sfd, dfd, _names_left, _rel in stack:
            os.close(sfd)
            os.close(dfd)


def _names(dir_fd: int) -> list[str]:
    with os.scandir(dir_fd) as entries:
        # Reversed so pop() copies in name order.
        return sorted((e.name for e in entries), reverse=True)


def _unlink_entry(dir_fd: int, name: str) -> None:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if statmod.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
    os.unlink(name, dir_fd=dir_fd)


async def _copy_entry(sfd: int, dfd: int, name: str, budget: CopyBudget, created: list[str], child: str) -> None:
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=sfd)
    try:
        _require_regular(src, child)
        try:
            dst = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                          dir_fd=dfd)
            created.append(child)
        except FileExistsError:
            # An existing file is overwritten; an existing symlink is replaced, never written through.
            _unlink_entry(dfd, name)
            dst = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                          dir_fd=dfd)
        try:
            await copy_fd(src, dst, budget)
        finally:
            os.close(dst)
    finally:
        os.close(src)


def remove_created(root: Path, target_device: str, created: list[str]) -> None:
    """Undo a failed copy: remove what it created under `target_device`, newest first, inside the root only."""
    for rel in reversed(created):
        device = posixpath.join(target_device, rel) if rel else target_device
        try:
            host = resolve(root, device, follow=False)
            if host == root:
                continue
            st = os.lstat(host)
            if statmod.S_ISDIR(st.st_mode):
                os.rmdir(host)
            else:
                os.unlink(host)
        except OSError:
            continue
