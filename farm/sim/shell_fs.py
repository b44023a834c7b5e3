"""File and text commands of the simulated shell (toybox output formats)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import stat as statmod
import time
from functools import lru_cache
from pathlib import Path

from farm.sim.phone import PathEscapeError
from farm.sim.shell_core import Shell, command

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


def _missing(sh: Shell, tool: str, path: str) -> int:
    return sh.fail(f"{tool}: {path}: No such file or directory")


def _host(sh: Shell, path: str) -> str | None:
    try:
        return sh.host(path)
    except PathEscapeError:
        return None


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
    host = _host(sh, target)
    if host is None or not os.path.isdir(host):
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


@command("cat")
def _cat(sh: Shell, args: list[str]) -> int:
    if not args:
        sh.out(sh.stdin)
        return 0
    status = 0
    for path in args:
        host = _host(sh, path)
        try:
            if host is None:
                raise FileNotFoundError
            if os.path.isdir(host):
                status = sh.fail(f"cat: {path}: Is a directory")
                continue
            with open(host, "rb") as handle:
                sh.out(handle.read())
        except OSError:
            status = _missing(sh, "cat", path)
    return status


def _mode_string(mode: int) -> str:
    return statmod.filemode(mode)


def _ls_long(name: str, st: os.stat_result) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(st.st_mtime))
    owner = "shell" if statmod.S_ISREG(st.st_mode) else "root"
    return f"{_mode_string(st.st_mode)} {st.st_nlink:>2} {owner:<8} {owner:<8} {st.st_size:>8} {when} {name}\n"


@command("ls")
def _ls(sh: Shell, args: list[str]) -> int:
    flags, paths = parse_flags(args, "laAR1dhtsSrnF")
    paths = paths or ["."]
    status = 0
    many = len(paths) > 1
    for index, path in enumerate(paths):
        host = _host(sh, path)
        if host is None or not os.path.lexists(host):
            status = sh.fail(f"ls: {path}: No such file or directory")
            continue
        if not os.path.isdir(host) or "d" in flags:
            st = os.lstat(host)
            sh.out(_ls_long(path, st) if "l" in flags else path + "\n")
            continue
        names = sorted(os.listdir(host))
        if "a" in flags:
            names = [".", ".."] + names
        elif "A" not in flags:
            names = [n for n in names if not n.startswith(".")]
        if many:
            sh.out(("\n" if index else "") + f"{path}:\n")
        if "l" in flags:
            blocks = 0
            lines = []
            for name in names:
                st = os.lstat(os.path.join(host, name))
                blocks += (st.st_size + 4095) // 4096 * 4
                lines.append(_ls_long(name, st))
            sh.out(f"total {blocks}\n" + "".join(lines))
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
        host = _host(sh, path)
        if host is None:
            status = sh.fail(f"mkdir: '{path}': Permission denied")
            continue
        try:
            if "p" in flags:
                os.makedirs(host, exist_ok=True)
            else:
                os.mkdir(host)
        except FileExistsError:
            status = sh.fail(f"mkdir: '{path}': File exists")
        except OSError:
            status = sh.fail(f"mkdir: '{path}': No such file or directory")
    return status


@command("rm")
def _rm(sh: Shell, args: list[str]) -> int:
    flags, paths = parse_flags(args, "rRfvd")
    recursive = bool(flags & {"r", "R"})
    status = 0
    for path in paths:
        host = _host(sh, path)
        if host is None or sh.phone.root == Path(host).resolve():
            status = sh.fail(f"rm: {path}: Permission denied")
            continue
        if not os.path.lexists(host):
            if "f" not in flags:
                status = _missing(sh, "rm", path)
            continue
        if os.path.isdir(host) and not os.path.islink(host):
            if not recursive:
                status = sh.fail(f"rm: {path}: Is a directory")
                continue
            shutil.rmtree(host, ignore_errors=True)
        else:
            os.unlink(host)
    return status


@command("rmdir")
def _rmdir(sh: Shell, args: list[str]) -> int:
    status = 0
    for path in args:
        host = _host(sh, path)
        try:
            os.rmdir(host or "\0")
        except (OSError, ValueError):
            status = sh.fail(f"rmdir: {path}: No such file or directory")
    return status


@command("touch")
def _touch(sh: Shell, args: list[str]) -> int:
    status = 0
    for path in [a for a in args if not a.startswith("-")]:
        host = _host(sh, path)
        try:
            Path(host or "\0").touch()
        except (OSError, ValueError):
            status = sh.fail(f"touch: '{path}': No such file or directory")
    return status


def _copy_or_move(sh: Shell, args: list[str], tool: str) -> int:
    flags, paths = parse_flags(args, "rRfpav")
    if len(paths) < 2:
        return sh.fail(f"{tool}: Needs 2 arguments")
    *sources, dest = paths
    dest_host = _host(sh, dest)
    if dest_host is None:
        return sh.fail(f"{tool}: '{dest}': Permission denied")
    status = 0
    for src in sources:
        src_host = _host(sh, src)
        if src_host is None or not os.path.lexists(src_host):
            status = sh.fail(f"{tool}: {src}: No such file or directory")
            continue
        target = os.path.join(dest_host, os.path.basename(src_host)) if os.path.isdir(dest_host) else dest_host
        try:
            if tool == "mv":
                shutil.move(src_host, target)
            elif os.path.isdir(src_host):
                if not flags & {"r", "R", "a"}:
                    status = sh.fail(f"cp: Skipped dir '{src}'")
                    continue
                shutil.copytree(src_host, target, dirs_exist_ok=True)
            else:
                shutil.copyfile(src_host, target)
        except OSError as exc:
            status = sh.fail(f"{tool}: '{dest}': {exc.strerror}")
    return status


@command("cp")
def _cp(sh: Shell, args: list[str]) -> int:
    return _copy_or_move(sh, args, "cp")


@command("mv")
def _mv(sh: Shell, args: list[str]) -> int:
    return _copy_or_move(sh, args, "mv")


@command("chmod", "chown", "sync", "setenforce", "log", "am_ignore")
def _noop(sh: Shell, args: list[str]) -> int:
    return 0


@command("md5sum")
def _md5sum(sh: Shell, args: list[str]) -> int:
    status = 0
    for path in [a for a in args if not a.startswith("-")]:
        host = _host(sh, path)
        if host is not None and os.path.isfile(host):
            digest = hashlib.md5()
            with open(host, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
            sh.out(f"{digest.hexdigest()}  {path}\n")
        elif sh.device_abs(path) == U2_JAR:
            # The uiautomator2 server is part of the simulated system image.
            sh.out(f"{u2_jar_md5()}  {path}\n")
        else:
            status = sh.fail(f"md5sum: {path}: No such file or directory")
    return status


@command("toybox")
def _toybox(sh: Shell, args: list[str]) -> int:
    if not args:
        sh.out("md5sum cat ls mkdir rm echo df date getprop\n")
        return 0
    from farm.sim.shell_core import COMMANDS

    fn = COMMANDS.get(args[0])
    if fn is None:
        return sh.fail(f"toybox: Unknown command {args[0]}", 1)
    return fn(sh, args[1:])


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
