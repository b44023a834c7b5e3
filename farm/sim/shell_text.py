"""Text and control commands of the simulated shell: grep, head, tail, wc, test, sleep, sh, export, exec."""

from __future__ import annotations

import asyncio
import os
import re

from farm.sim import rootfs
from farm.sim.shell_core import Shell, async_command, command
from farm.sim.shell_fs import parse_flags


@command("grep")
def _grep(sh: Shell, args: list[str]) -> int:
    flags, rest = parse_flags(args, "ivEFcqwo")
    if not rest:
        return sh.fail("usage: grep [-ivEFcq] PATTERN [FILE...]", 2)
    pattern, files = rest[0], rest[1:]
    data = sh.stdin
    if files:
        chunks = []
        room = sh.phone.profile.limits.copy_max_bytes
        for path in files:
            try:
                with rootfs.open_read(sh.host(path)) as handle:
                    chunks.append(handle.read(room + 1))
                room -= len(chunks[-1])
                if room < 0:
                    return sh.fail(f"grep: {path}: more than {sh.phone.profile.limits.copy_max_bytes} bytes", 2)
            except OSError as exc:
                sh.fail(f"grep: {path}: {exc.strerror}")
        data = b"".join(chunks)
    try:
        regex = re.compile(re.escape(pattern) if "F" in flags else pattern, re.IGNORECASE if "i" in flags else 0)
    except re.error:
        regex = re.compile(re.escape(pattern), re.IGNORECASE if "i" in flags else 0)
    invert = "v" in flags
    lines = [line for line in data.decode("utf-8", "replace").splitlines() if bool(regex.search(line)) != invert]
    if "c" in flags:
        sh.out(f"{len(lines)}\n")
    elif "q" not in flags:
        sh.out("".join(line + "\n" for line in lines))
    return 0 if lines else 1


def _head_tail_options(name: str, args: list[str]) -> tuple[str, str, list[str], set[str]] | str:
    """(unit `n`|`c`, count as typed, files, flags) of `head`/`tail`, or the usage error to print."""
    unit, count, files, flags = "n", "10", [], set()
    it = iter(args)
    for arg in it:
        if arg in ("-n", "-c"):
            value = next(it, None)
            if value is None:
                return f"{name}: Missing argument to {arg}"
            unit, count = arg[1], value
        elif arg[:2] in ("-n", "-c") and len(arg) > 2:
            unit, count = arg[1], arg[2:]
        elif arg.startswith("-") and arg[1:].isdigit():
            count = arg[1:]
        elif arg in ("-q", "-v", "-f", "-F"):
            flags.add(arg[1])
        else:
            files.append(arg)
    if not count.lstrip("+").isdigit():
        return f"{name}: Not integer: {count}"
    return unit, count, files, flags


def _inputs(sh: Shell, name: str, files: list[str]) -> list[tuple[str, bytes | OSError]]:
    """(name, content or the error) of each operand (stdin without one); bounded like any copy into memory."""
    if not files:
        return [("-", sh.stdin)]
    cap = sh.phone.profile.limits.copy_max_bytes
    out: list[tuple[str, bytes | OSError]] = []
    for path in files:
        try:
            with rootfs.open_read(sh.host(path)) as handle:
                data = handle.read(cap + 1)
            if len(data) > cap:
                raise OSError(0, f"more than {cap} bytes (limits.copy_max_bytes)")
            out.append((path, data))
        except OSError as exc:
            out.append((path, exc))
    return out


def _head_or_tail(sh: Shell, name: str, args: list[str]) -> int:
    parsed = _head_tail_options(name, args)
    if isinstance(parsed, str):
        return sh.fail(parsed)
    unit, count, files, flags = parsed
    number, from_start = int(count.lstrip("+")), count.startswith("+") and name == "tail"
    status = 0
    inputs = _inputs(sh, name, files)
    headers = "v" in flags or len(inputs) > 1 and "q" not in flags
    for index, (path, data) in enumerate(inputs):
        if isinstance(data, OSError):
            # toybox's loopfiles: `head: PATH: No such file or directory`, and on to the next operand.
            status = sh.fail(f"{name}: {path}: {data.strerror or 'No such file or directory'}")
            continue
        if headers:
            sh.out(("\n" if index else "") + f"==> {'standard input' if path == '-' else path} <==\n")
        if unit == "c":
            chunk = data[max(number - 1, 0):] if from_start else data[:number] if name == "head" else \
                data[len(data) - number:] if number else b""
        else:
            lines = data.splitlines(keepends=True)
            picked = lines[max(number - 1, 0):] if from_start else lines[:number] if name == "head" else \
                lines[len(lines) - number:] if number else []
            chunk = b"".join(picked)
        sh.out(chunk)
    return status


@command("head")
def _head(sh: Shell, args: list[str]) -> int:
    return _head_or_tail(sh, "head", args)


@command("tail")
def _tail(sh: Shell, args: list[str]) -> int:
    return _head_or_tail(sh, "tail", args)


@command("wc")
def _wc(sh: Shell, args: list[str]) -> int:
    text = sh.stdin.decode("utf-8", "replace")
    if "-l" in args:
        sh.out(f"{text.count(chr(10))}\n")
    else:
        sh.out(f"{text.count(chr(10)):>7} {len(text.split()):>7} {len(sh.stdin):>7}\n")
    return 0


@command("test", "[")
def _test(sh: Shell, args: list[str]) -> int:
    if args and args[-1] == "]":
        args = args[:-1]
    negate = bool(args) and args[0] == "!"
    if negate:
        args = args[1:]
    result = False
    if len(args) == 2 and args[0] in ("-e", "-f", "-d", "-s"):
        try:
            host = sh.host(args[1])
        except OSError:
            host = None
        if host is not None:
            result = {
                "-e": os.path.exists,
                "-f": os.path.isfile,
                "-d": os.path.isdir,
                "-s": lambda h: os.path.isfile(h) and os.path.getsize(h) > 0,
            }[args[0]](host)
    elif len(args) == 3 and args[1] in ("=", "==", "!="):
        result = (args[0] == args[2]) != (args[1] == "!=")
    elif len(args) == 2 and args[0] in ("-n", "-z"):
        result = bool(args[1]) == (args[0] == "-n")
    elif len(args) == 1:
        result = bool(args[0])
    return 0 if result != negate else 1


@async_command("sleep")
async def _sleep(sh: Shell, args: list[str]) -> int:
    try:
        await asyncio.sleep(min(float(args[0].rstrip("s")) if args else 0.0, 3600))
    except ValueError:
        return sh.fail(f"sleep: invalid number '{args[0]}'")
    return 0


@command("export")
def _export(sh: Shell, args: list[str]) -> int:
    for arg in args:
        key, sep, value = arg.partition("=")
        if sep:
            sh.env[key] = value
    return 0


@command("unset")
def _unset(sh: Shell, args: list[str]) -> int:
    for name in args:
        sh.env.pop(name, None)
    return 0


@async_command("exec")
async def _exec(sh: Shell, args: list[str]) -> int:
    if not args:
        return 0
    sh.exit_requested = True
    return await sh.run_argv(args)


@async_command("sh")
async def _sh(sh: Shell, args: list[str]) -> int:
    if len(args) >= 2 and args[0] == "-c":
        return await _with_positional(sh, args[2:3] or [sh.argv0], args[3:], args[1])
    if not args or args[0] == "-s":
        # The script is the standard input (`adb shell sh < script.sh`).
        script, sh.stdin = sh.stdin, b""
        return await sh.run(script.decode("utf-8", "replace"))
    if args[0].startswith("-"):
        return sh.fail(f"/system/bin/sh: {args[0]}: unknown option", 2)
    try:
        script = sh.phone.read_bytes(sh.device_abs(args[0]), sh.phone.profile.limits.copy_max_bytes)
    except OSError as exc:
        return sh.fail(f"/system/bin/sh: {args[0]}: {exc.strerror or 'No such file or directory'}", 127)
    return await _with_positional(sh, args[:1], args[1:], script.decode("utf-8", "replace"))


async def _with_positional(sh: Shell, argv0: list[str], positional: list[str], script: str) -> int:
    """Run `script` with `$0` and `$1`… set, as the child shell would have them (restored afterwards)."""
    saved = sh.argv0, sh.positional
    sh.argv0, sh.positional = argv0[0], positional
    try:
        return await sh.run(script)
    finally:
        sh.argv0, sh.positional = saved
