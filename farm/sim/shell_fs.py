"""File and text commands of the simulated shell (toybox output formats)."""

from __future__ import annotations

import errno
import hashlib
import importlib.util
import os
import posixpath
import shutil
import stat as statmod
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from farm.sim import fileinfo, rootfs
from farm.sim.shell_core import ASYNC_COMMANDS, COMMANDS, Shell, async_command, command

U2_JAR = "/data/local/tmp/u2.jar"
U2_JAR_MD5 = "d4f2cb5299dfd894a40fdde067b56bc9"
"""md5 of the u2.jar bundled with uiautomator2 3.7.1 (used if the wheel's asset cannot be read)."""


@lru_cache(maxsize=1)
def u2_jar_md5() -> str:
    """md5 of the jar the installed uiautomator2 would push, so it sees its server as installed."""
    spec = importlib.util.find_spec("uiautomator2")
    if spec is not None and spec.origin:
        jar = Path(spec.origin).parent / "assets" / "u2.jar"
        if jar.is_file():
            return hashlib.md5(jar.read_bytes()).hexdigest()
    return U2_JAR_MD5


def _why(exc: OSError) -> str:
    return exc.strerror or os.strerror(exc.errno or errno.ENOENT)


def parse_flags(args: list[str], known: str) -> tuple[set[str], list[str]]:
    """Split combined single-letter flags (`-rf`) from operands."""
    flags: set[str] = set()
    rest: list[str] = []
    for arg in args:
        if arg.startswith("-") and len(arg) > 1 and arg != "--" and all(c in known for c in arg[1:]):
            flags.update(arg[1:])
        else:
            rest.append(arg)
    return flags, rest


@command("true")
def _true(sh: Shell, args: list[str]) -> int:
    return 0


@command("false")
def _false(sh: Shell, args: list[str]) -> int:
    return 1


@command("echo")
def _echo(sh: Shell, args: list[str]) -> int:
    newline = True
    if args and args[0] == "-n":
        newline, args = False, args[1:]
    elif args and args[0] == "-e":
        args = [a.encode().decode("unicode_escape") for a in args[1:]]
    sh.out(" ".join(args) + ("\n" if newline else ""))
    return 0


@command("pwd")
def _pwd(sh: Shell, args: list[str]) -> int:
    sh.out(sh.cwd + "\n")
    return 0


@command("cd")
def _cd(sh: Shell, args: list[str]) -> int:
    target = sh.device_abs(args[0] if args else "/")
    try:
        host = sh.host(target)
    except OSError as exc:
        return sh.fail(f"/system/bin/sh: cd: {target}: {_why(exc)}", 2)
    if not os.path.isdir(host):
        return sh.fail(f"/system/bin/sh: cd: {target}: No such file or directory", 2)
    sh.cwd = target
    return 0


@command("id")
def _id(sh: Shell, args: list[str]) -> int:
    sh.out("uid=2000(shell) gid=2000(shell) groups=2000(shell),1004(input),1007(log),1011(adb),1015(sdcard_rw),"
           "1028(sdcard_r),3001(net_bt_admin),3002(net_bt),3003(inet),3006(net_bw_stats) context=u:r:shell:s0\n")
    return 0


@command("whoami")
def _whoami(sh: Shell, args: list[str]) -> int:
    sh.out("shell\n")
    return 0


@async_command("cat")
async def _cat(sh: Shell, args: list[str]) -> int:
    if not args:
        sh.out(sh.stdin)
        return 0
    status = 0
    # Into a pipe or a redirect the output is held in memory: that is a copy, with a copy's cap.
    cap = sh.phone.profile.limits.copy_max_bytes if sh.capturing else None
    total = 0
    for path in args:
        try:
            with rootfs.open_read(sh.host(path)) as handle:
                while chunk := handle.read(rootfs.CHUNK):
                    total += len(chunk)
                    if cap is not None and total > cap:
                        return sh.fail(f"cat: {path}: more than {cap} bytes into a pipe (limits.copy_max_bytes)")
                    sh.out(chunk)
                    await sh.flush()
        except OSError as exc:
            status = sh.fail(f"cat: {path}: {_why(exc)}")
    return status


def _mode_string(mode: int) -> str:
    return statmod.filemode(mode)


def _long_lines(sh: Shell, entries: list[tuple[str, os.stat_result, str, Path]]) -> list[str]:
    """toybox `ls -l` lines of (shown name, lstat, device path, host path): mode, links, user, group, size, date,
    name — links and size right-aligned, user and group left-aligned to the widest in the listing."""
    rows = []
    zone = sh.phone.now().tzinfo
    for name, st, device, host in entries:
        info = fileinfo.shown(sh.phone, device, st)
        when = datetime.fromtimestamp(st.st_mtime, zone).strftime("%Y-%m-%d %H:%M")
        if statmod.S_ISLNK(st.st_mode):
            try:
                name = f"{name} -> {os.readlink(host)}"
            except OSError:
                pass
        rows.append((_mode_string(info.mode), str(st.st_nlink), info.user, info.group, str(info.size), when, name))
    widths = [max((len(r[i]) for r in rows), default=0) for i in range(5)]
    return [f"{mode} {links:>{widths[1]}} {user:<{widths[2]}} {group:<{widths[3]}} {size:>{widths[4]}} {when} {name}\n"
            for mode, links, user, group, size, when, name in rows]


def _ls_operand(sh: Shell, path: str, flags: set[str]) -> tuple[Path, os.stat_result]:
    """(host path to show, its lstat) of one `ls` operand; a symlink to a directory is listed unless -d,
    any other symlink (dangling ones included) is shown as itself."""
    host = sh.host(path, follow=False)
    st = os.lstat(host)
    if statmod.S_ISLNK(st.st_mode) and "d" not in flags:
        try:
            target = sh.host(path)
            target_st = os.lstat(target)
        except FileNotFoundError:
            return host, st
        if statmod.S_ISDIR(target_st.st_mode):
            return target, target_st
    return host, st


@command("ls")
def _ls(sh: Shell, args: list[str]) -> int:
    flags, paths = parse_flags(args, "laAR1dhtsSrnF")
    paths = paths or ["."]
    status = 0
    many = len(paths) > 1
    for index, path in enumerate(paths):
        try:
            host, st = _ls_operand(sh, path, flags)
        except OSError as exc:
            status = sh.fail(f"ls: {path}: {_why(exc)}")
            continue
        device = _device_of(sh, host)
        if not statmod.S_ISDIR(st.st_mode) or "d" in flags:
            sh.out("".join(_long_lines(sh, [(path, st, device, host)])) if "l" in flags else path + "\n")
            continue
        names = sorted(os.listdir(host))
        if "a" in flags:
            names = [".", ".."] + names
        elif "A" not in flags:
            names = [n for n in names if not n.startswith(".")]
        if many:
            sh.out(("\n" if index else "") + f"{path}:\n")
        if "l" in flags:
            entries = []
            for name in names:
                if name == ".":
                    entry_host, entry_device = host, device
                elif name == "..":
                    # `..` of the phone's `/` is `/` itself: the host's parent of the root is not the phone's.
                    entry_host = host if host == sh.phone.root else host.parent
                    entry_device = posixpath.dirname(device) or "/"
                else:
                    entry_host, entry_device = host / name, posixpath.join(device, name)
                entries.append((name, os.lstat(entry_host), entry_device, entry_host))
            blocks = sum((e[1].st_size + 4095) // 4096 * 4 for e in entries)
            sh.out(f"total {blocks}\n" + "".join(_long_lines(sh, entries)))
        else:
            sh.out("".join(n + "\n" for n in names))
    return status


@command("mkdir")
def _mkdir(sh: Shell, args: list[str]) -> int:
    flags, paths = parse_flags(args, "pv")
    if not paths:
        return sh.fail("mkdir: Needs 1 argument")
    status = 0
    for path in paths:
        try:
            host = sh.host(path)
            if "p" in flags:
                os.makedirs(host, exist_ok=True)
            else:
                os.mkdir(host)
        except FileExistsError:
            status = sh.fail(f"mkdir: '{path}': File exists")
        except OSError as exc:
            status = sh.fail(f"mkdir: '{path}': {_why(exc)}")
    return status


@command("rm")
def _rm(sh: Shell, args: list[str]) -> int:
    flags, paths = parse_flags(args, "rRfvd")
    recursive = bool(flags & {"r", "R"})
    status = 0
    for path in paths:
        try:
            host = sh.host(path, follow=False)
            st = os.lstat(host)
        except FileNotFoundError:
            if "f" not in flags:
                status = sh.fail(f"rm: {path}: No such file or directory")
            continue
        except OSError as exc:
            status = sh.fail(f"rm: {path}: {_why(exc)}")
            continue
        if host == sh.phone.root:
            status = sh.fail(f"rm: {path}: Permission denied")
        elif statmod.S_ISDIR(st.st_mode):
            if not recursive:
                status = sh.fail(f"rm: {path}: Is a directory")
                continue
            # rmtree never follows a symlink inside the tree (it walks with O_NOFOLLOW descriptors).
            shutil.rmtree(host, ignore_errors=True)
        else:
            os.unlink(host)
    return status


@command("rmdir")
def _rmdir(sh: Shell, args: list[str]) -> int:
    status = 0
    for path in args:
        try:
            host = sh.host(path, follow=False)
            if host == sh.phone.root:
                raise PermissionError(errno.EBUSY, os.strerror(errno.EBUSY))
            os.rmdir(host)
        except OSError as exc:
            status = sh.fail(f"rmdir: {path}: {_why(exc)}")
    return status


@command("touch")
def _touch(sh: Shell, args: list[str]) -> int:
    status = 0
    for path in [a for a in args if not a.startswith("-")]:
        try:
            rootfs.touch(sh.host(path))
        except OSError as exc:
            status = sh.fail(f"touch: '{path}': {_why(exc)}")
    return status


def _landing(sh: Shell, src: str, dest_host: Path, dest_is_dir: bool, dest: str) -> str:
    """Device path where `src` lands: inside `dest` when it is a directory (named as the operand), else `dest`."""
    if not dest_is_dir:
        return sh.device_abs(dest)
    name = posixpath.basename(sh.phone.canonical(src, sh.cwd))
    return posixpath.join(_device_of(sh, dest_host), name)


def _device_of(sh: Shell, host: Path) -> str:
    """The device path of a resolved host path (it holds no symlink, so it names the same place)."""
    rel = host.relative_to(sh.phone.root).as_posix()
    return "/" if rel == "." else "/" + rel


async def _copy_one(sh: Shell, src: str, landing: str, recursive: bool, budget: rootfs.CopyBudget) -> int:
    root = sh.phone.root
    try:
        src_host = sh.host(src, follow=not recursive)
        st = os.lstat(src_host)
        # A link copied as a link replaces what stands at the target; a file is written where a link
        # inside the phone there points (a link leading out is refused by the resolver).
        target = sh.host(landing, follow=not statmod.S_ISLNK(st.st_mode))
    except OSError as exc:
        return sh.fail(f"cp: {src}: {_why(exc)}")
    if statmod.S_ISDIR(st.st_mode) and not recursive:
        return sh.fail(f"cp: Skipped dir '{src}'")
    if statmod.S_ISDIR(st.st_mode) and (target == src_host or src_host in target.parents):
        return sh.fail(f"cp: '{src}' -> '{_device_of(sh, target)}': can't copy a directory into itself")
    if target == root:
        return sh.fail(f"cp: '{landing}': File exists")
    created: list[str] = []
    target_device = _device_of(sh, target)
    try:
        if statmod.S_ISLNK(st.st_mode):
            # Copied as a link, never followed: where it points is resolved (inside the phone) when used.
            if os.path.lexists(target):
                if os.path.isdir(target) and not os.path.islink(target):
                    raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
                os.unlink(target)
            os.symlink(os.readlink(src_host), target)
            created.append("")
        elif statmod.S_ISDIR(st.st_mode):
            await rootfs.copy_tree(src_host, target, budget, created)
        else:
            if not os.path.lexists(target):
                created.append("")
            await rootfs.copy_file(src_host, target, budget)
    except BaseException as exc:
        # A failed, capped or cancelled copy leaves nothing half-written behind.
        rootfs.remove_created(root, target_device, created)
        if not isinstance(exc, OSError):
            raise
        inner = exc.filename if isinstance(exc.filename, str) and not exc.filename.startswith("/") else ""
        where = f"{src}/{inner}" if inner and statmod.S_ISDIR(st.st_mode) else src
        return sh.fail(f"cp: {where}: {_why(exc)}", 1)
    return 0


@async_command("cp")
async def _cp(sh: Shell, args: list[str]) -> int:
    flags, paths = parse_flags(args, "rRfpavnPdiF")
    if len(paths) < 2:
        return sh.fail("cp: Needs 2 arguments")
    *sources, dest = paths
    recursive = bool(flags & {"r", "R", "a"})
    try:
        dest_host = sh.host(dest)
    except OSError as exc:
        return sh.fail(f"cp: '{dest}': {_why(exc)}")
    dest_is_dir = os.path.isdir(dest_host)
    if len(sources) > 1 and not dest_is_dir:
        return sh.fail(f"cp: '{dest}' not directory")
    limits = sh.phone.profile.limits
    budget = rootfs.CopyBudget(limits.copy_max_bytes, limits.copy_max_seconds)
    status = 0
    for src in sources:
        landing = _landing(sh, src, dest_host, dest_is_dir, dest)
        status = await _copy_one(sh, src, landing, recursive, budget) or status
        if budget.exhausted:
            break
    return status


@command("mv")
def _mv(sh: Shell, args: list[str]) -> int:
    _flags, paths = parse_flags(args, "fivnT")
    if len(paths) < 2:
        return sh.fail("mv: Needs 2 arguments")
    *sources, dest = paths
    try:
        dest_host = sh.host(dest)
    except OSError as exc:
        return sh.fail(f"mv: '{dest}': {_why(exc)}")
    dest_is_dir = os.path.isdir(dest_host)
    if len(sources) > 1 and not dest_is_dir:
        return sh.fail(f"mv: '{dest}' not directory")
    status = 0
    for src in sources:
        try:
            # rename() moves the entry itself: a symlink is moved as a link, never followed.
            src_host = sh.host(src, follow=False)
            os.lstat(src_host)
            target = sh.host(_landing(sh, src, dest_host, dest_is_dir, dest), follow=False)
            if sh.phone.root in (src_host, target):
                raise PermissionError(errno.EBUSY, os.strerror(errno.EBUSY))
            os.rename(src_host, target)
        except OSError as exc:
            status = sh.fail(f"mv: {src}: {_why(exc)}")
    return status


@command("chmod", "chown", "sync", "setenforce", "log", "am_ignore")
def _noop(sh: Shell, args: list[str]) -> int:
    return 0


@command("md5sum")
def _md5sum(sh: Shell, args: list[str]) -> int:
    status = 0
    for path in [a for a in args if not a.startswith("-") or a == "-"] or ["-"]:
        if path == "-":
            sh.out(f"{hashlib.md5(sh.stdin).hexdigest()}  -\n")  # no operand: stdin, named `-` as toybox does
            continue
        try:
            with rootfs.open_read(sh.host(path)) as handle:
                digest = hashlib.md5()
                while chunk := handle.read(rootfs.CHUNK):
                    digest.update(chunk)
            sh.out(f"{digest.hexdigest()}  {path}\n")
        except FileNotFoundError:
            if sh.device_abs(path) == U2_JAR:
                # The uiautomator2 server is part of the simulated system image.
                sh.out(f"{u2_jar_md5()}  {path}\n")
            else:
                status = sh.fail(f"md5sum: {path}: No such file or directory")
        except OSError as exc:
            status = sh.fail(f"md5sum: {path}: {_why(exc)}")
    return status


@async_command("toybox")
async def _toybox(sh: Shell, args: list[str]) -> int:
    if not args:
        sh.out("md5sum cat ls mkdir rm echo df date getprop\n")
        return 0
    if args[0] not in COMMANDS and args[0] not in ASYNC_COMMANDS:
        return sh.fail(f"toybox: Unknown command {args[0]}", 1)
    return await sh.run_argv(args)


def _df_rows(sh: Shell) -> list[tuple[str, int, int, str]]:
    p = sh.phone.profile
    total = p.storage_total_mb * 1024
    free = min(p.storage_free_mb, p.storage_total_mb) * 1024
    return [
        ("/dev/block/dm-6", 5127032, 0, "/"),
        ("tmpfs", 3841728, 3840000, "/dev"),
        ("/dev/block/dm-47", total, free, "/data"),
        ("/dev/fuse", total, free, "/storage/emulated"),
    ]


def _human(kib: int) -> str:
    value = float(kib)
    for unit in ("K", "M", "G", "T"):
        if value < 1024:
            return f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}"
        value /= 1024
    return f"{value:.0f}P"


@command("df")
def _df(sh: Shell, args: list[str]) -> int:
    flags, paths = parse_flags(args, "hkaPT")
    rows = _df_rows(sh)
    if paths:
        wanted = [sh.phone.canonical(p, sh.cwd) for p in paths]
        picked = []
        for want in wanted:
            best = max((r for r in rows if want == r[3] or want.startswith(r[3].rstrip("/") + "/") or r[3] == "/"),
                       key=lambda r: len(r[3]))
            if want.startswith("/sdcard"):
                best = rows[3]
            picked.append(best)
        rows = picked
    if "h" in flags:
        sh.out("Filesystem        Size Used Avail Use% Mounted on\n")
        for dev, total, free, mount in rows:
            used = total - free
            pct = (used * 100 + total - 1) // total if total else 0
            sh.out(f"{dev:<17} {_human(total):>4} {_human(used):>4} {_human(free):>5} {pct:>3}% {mount}\n")
    else:
        sh.out("Filesystem       1K-blocks     Used Available Use% Mounted on\n")
        for dev, total, free, mount in rows:
            used = total - free
            pct = (used * 100 + total - 1) // total if total else 0
            sh.out(f"{dev:<16} {total:>9} {used:>8} {free:>9} {pct:>3}% {mount}\n")
    return 0
