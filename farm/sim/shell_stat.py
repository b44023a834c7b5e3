"""`stat` and the SHA checksum commands of the simulated shell (toybox formats, as on Android 14)."""

from __future__ import annotations

import hashlib
import os
import stat as statmod
from datetime import datetime

from farm.sim import fileinfo, rootfs
from farm.sim.shell_core import Shell, command
from farm.sim.shell_fs import parse_flags

_DEFAULT_FORMAT = (
    "  File: %N\n  Size: %s\t Blocks: %b\t IO Blocks: %o\t%F\nDevice: %Dh/%dd\t Inode: %i\t Links: %h\t"
    " Device type: %t,%T\nAccess: (%a/%A)\tUid: (%5u/%8U)\tGid: (%5g/%8G)\nAccess: %x\nModify: %y\nChange: %z"
)
"""toybox stat's format without -c (and without -f)."""
_TYPES = {
    statmod.S_IFCHR: "character device", statmod.S_IFDIR: "directory", statmod.S_IFBLK: "block device",
    statmod.S_IFREG: "regular file", statmod.S_IFLNK: "symbolic link", statmod.S_IFSOCK: "socket",
    statmod.S_IFIFO: "FIFO (named pipe)",
}


def _why(exc: OSError) -> str:
    return exc.strerror or "No such file or directory"


def _date(seconds: float, nanoseconds: int, sh: Shell) -> str:
    # toybox date_stat_format: "%Y-%m-%d %H:%M:%S" + ".%09ld" + " %z" in local time.
    at = datetime.fromtimestamp(seconds, sh.phone.now().tzinfo)
    return at.strftime("%Y-%m-%d %H:%M:%S") + f".{nanoseconds % 1_000_000_000:09d}" + at.strftime(" %z")


def _field(sh: Shell, spec: str, letter: str, name: str, device: str, st: os.stat_result, host_link: str | None
           ) -> str:
    info = fileinfo.shown(sh.phone, device, st)
    kind = statmod.S_IFMT(info.mode)
    values: dict[str, object] = {
        "s": info.size, "b": st.st_blocks, "B": 512, "o": st.st_blksize, "h": st.st_nlink, "i": st.st_ino,
        "a": f"{info.mode & 0o7777:o}", "A": statmod.filemode(info.mode), "u": info.uid, "U": info.user,
        "g": info.gid, "G": info.group, "f": f"{info.mode:x}", "d": st.st_dev, "D": f"{st.st_dev:x}",
        "t": f"{os.major(st.st_rdev):x}", "T": f"{os.minor(st.st_rdev):x}", "n": name,
        "N": f"'{name}'" + (f" -> '{host_link}'" if host_link is not None else ""),
        "X": int(st.st_atime), "Y": int(st.st_mtime), "Z": int(st.st_ctime),
        "x": _date(st.st_atime, st.st_atime_ns, sh), "y": _date(st.st_mtime, st.st_mtime_ns, sh),
        "z": _date(st.st_ctime, st.st_ctime_ns, sh),
        "F": "regular empty file" if kind == statmod.S_IFREG and info.size == 0 else _TYPES.get(kind, "unknown"),
        "C": "u:object_r:fuse:s0" if device.startswith("/sdcard") else "u:object_r:system_data_file:s0",
    }
    value = values.get(letter, "?")
    width = spec[1:-1]
    if width.lstrip("-").isdigit():
        return f"{value!s:>{width}}" if not width.startswith("-") else f"{value!s:<{width[1:]}}"
    return str(value)


def _format(sh: Shell, fmt: str, name: str, device: str, st: os.stat_result, link: str | None) -> str:
    out: list[str] = []
    i = 0
    while i < len(fmt):
        if fmt[i] != "%" or i + 1 >= len(fmt):
            out.append(fmt[i])
            i += 1
            continue
        j = i + 1
        while j < len(fmt) and (fmt[j].isdigit() or fmt[j] == "-"):
            j += 1
        if j >= len(fmt):
            out.append(fmt[i:])
            break
        if fmt[j] == "%":
            out.append("%")
        else:
            out.append(_field(sh, fmt[i:j + 1], fmt[j], name, device, st, link))
        i = j + 1
    return "".join(out)


@command("stat")
def _stat(sh: Shell, args: list[str]) -> int:
    fmt: str | None = None
    rest: list[str] = []
    it = iter(args)
    for arg in it:
        if arg == "-c":
            fmt = next(it, None)
            if fmt is None:
                return sh.fail("stat: Missing argument to -c")
        elif arg.startswith("--format="):
            fmt = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    flags, paths = parse_flags(rest, "Lt")
    if not paths:
        return sh.fail("stat: Needs 1 argument")
    status = 0
    for path in paths:
        try:
            host = sh.host(path, follow="L" in flags)
            st = os.lstat(host)
        except OSError as exc:
            status = sh.fail(f"stat: '{path}': {_why(exc)}")
            continue
        device = _device_of(sh, host)
        link = None
        if statmod.S_ISLNK(st.st_mode):
            try:
                link = os.readlink(host)
            except OSError:
                link = None
        if "t" in flags and fmt is None:
            fmt = "%n %s %b %f %u %g %D %i %h %t %T %X %Y %Z %o"
        sh.out(_format(sh, fmt if fmt is not None else _DEFAULT_FORMAT, path, device, st, link) + "\n")
    return status


def _device_of(sh: Shell, host: os.PathLike[str]) -> str:
    rel = os.path.relpath(host, sh.phone.root)
    return "/" if rel == "." else "/" + rel.replace(os.sep, "/")


def _digest(sh: Shell, args: list[str], algorithm: str) -> int:
    name = f"{algorithm}sum"
    paths = [a for a in args if not a.startswith("-") or a == "-"] or ["-"]
    status = 0
    for path in paths:
        digest = hashlib.new(algorithm)
        if path == "-":
            digest.update(sh.stdin)
        else:
            try:
                with rootfs.open_read(sh.host(path)) as handle:
                    while chunk := handle.read(rootfs.CHUNK):
                        digest.update(chunk)
            except OSError as exc:
                status = sh.fail(f"{name}: {path}: {_why(exc)}")
                continue
        sh.out(f"{digest.hexdigest()}  {path}\n")
    return status


@command("sha1sum")
def _sha1sum(sh: Shell, args: list[str]) -> int:
    return _digest(sh, args, "sha1")


@command("sha224sum")
def _sha224sum(sh: Shell, args: list[str]) -> int:
    return _digest(sh, args, "sha224")


@command("sha256sum")
def _sha256sum(sh: Shell, args: list[str]) -> int:
    return _digest(sh, args, "sha256")


@command("sha384sum")
def _sha384sum(sh: Shell, args: list[str]) -> int:
    return _digest(sh, args, "sha384")


@command("sha512sum")
def _sha512sum(sh: Shell, args: list[str]) -> int:
    return _digest(sh, args, "sha512")
