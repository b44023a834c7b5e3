"""`log` (toybox) writes to the phone's log; `logcat` reads it: dump (`-d`, `-t N`), clear, sizes, filters, formats,
and the streaming reader that prints each new line as it is logged until the host closes the stream."""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import re
from collections.abc import Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from farm.sim import rootfs, system_log
from farm.sim.logbuf import BUFFERS, INFO, MAX_ENTRY, MAX_PAYLOAD, SHELL_UID, LogEntry
from farm.sim.logcat_args import LogcatArgs, LogcatUsageError, parse
from farm.sim.shell_core import Shell, async_command, command

_LOG_PRIORITIES = {"v": 2, "d": 3, "i": 4, "w": 5, "e": 6, "f": 7, "s": 8}
_LOG_MAX_ARGS = 1024
"""toybox `log` joins its arguments into a 1024-byte buffer and cuts there."""
QUIET_S = 1.0
"""After this long without a new entry a streaming reader sees the phone's background chatter (healthd's battery
line): clients such as adbutils' `logcat()` stop only when their next line arrives, as they do on a real phone."""
_USAGE = """
  Usage: logcat [OPTION]... [FILTERSPEC]...

  -b BUFFER  main system radio events crash default all   -c  clear   -d  dump and exit
  -v FORMAT  brief long process raw tag thread threadtime time (+ color epoch monotonic usec UTC year zone)
  -s  silence all but the FILTERSPECs   -e EXPR  regex   -m N  max count   -t N|TIME  -T N|TIME
  -f FILE  log to FILE   -g  ring buffer sizes   -D  dividers   --pid=PID   --uid=UIDS

  FILTERSPEC: <tag>[:priority] with priority V D I W E F S; '*' by itself means '*:D'.
"""


def _zone(sh: Shell) -> ZoneInfo:
    try:
        return ZoneInfo(sh.phone.profile.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


@command("log")
def _log(sh: Shell, args: list[str]) -> int:
    tag, priority, buffer = "log", INFO, "main"
    words: list[str] = []
    it = iter(args)
    for arg in it:
        if arg == "--":
            words.extend(it)
        elif arg in ("-t", "-p", "-b") or arg[:2] in ("-t", "-p", "-b") and len(arg) > 2:
            value = arg[2:] or next(it, None)
            if value is None:
                return sh.fail(f'log: Missing argument to {arg} (see "log --help")')
            if arg[1] == "t":
                tag = value
            elif arg[1] == "p":
                if len(value) != 1 or value.lower() not in _LOG_PRIORITIES:
                    return sh.fail(f"log: bad -p '{value}'")
                priority = _LOG_PRIORITIES[value.lower()]
            elif value in BUFFERS:
                buffer = value
            else:
                return sh.fail(f"log: unknown log buffer: {value}")
        elif arg.startswith("-") and len(arg) > 1:
            return sh.fail(f"log: Unknown option '{arg[1:]}' (see \"log --help\")")
        else:
            words.append(arg)
    logs, pid = sh.phone.logs, sh.phone.logs.new_pid()
    status = 0
    if not words:
        # Each line of stdin is one entry; toybox then writes its (empty) argument buffer too.
        for line in sh.stdin.decode("utf-8", "replace").splitlines():
            logs.write(priority, tag, line, buffer=buffer, pid=pid, uid=SHELL_UID)
        message = ""
    else:
        message = " ".join(words)
        raw = message.encode()
        if len(raw) >= _LOG_MAX_ARGS:
            message = raw[:_LOG_MAX_ARGS].decode("utf-8", "ignore")
            status = sh.fail("log: log cut at 1024 bytes")
    logs.write(priority, tag, message, buffer=buffer, pid=pid, uid=SHELL_UID)
    return status


class _Printer:
    """What one logcat run prints: filters, `-e`/`-m`, dividers between buffers, and where lines go (`-f`)."""

    def __init__(self, sh: Shell, opts: LogcatArgs, regex: re.Pattern[str] | None) -> None:
        self.sh, self.opts, self.regex = sh, opts, regex
        self.zone = _zone(sh)
        self.printed = 0
        self.last_buffer: str | None = None
        self.started: set[str] = set()

    @property
    def done(self) -> bool:
        return bool(self.opts.max_count) and self.printed >= self.opts.max_count

    def lines(self, entries: list[LogEntry]) -> str:
        o, out = self.opts, []
        for entry in entries:
            if self.done:
                break
            if o.pid and entry.pid != o.pid or o.uids and entry.uid not in o.uids:
                continue
            if o.since is not None and entry.wall < o.since:
                continue
            if not o.filt.allows(entry.tag, entry.priority):
                continue
            match = self.regex is None or self.regex.search(entry.message) is not None
            self.printed += match
            if not match and not o.print_anyway:
                continue
            if entry.buffer != self.last_buffer:
                if entry.buffer not in self.started or o.dividers:
                    verb = "switch to" if entry.buffer in self.started else "beginning of"
                    out.append(f"--------- {verb} {entry.buffer}\n")
                self.started.add(entry.buffer)
                self.last_buffer = entry.buffer
            out.append(o.fmt.render(entry, self.zone, self.sh.phone.booted_at))
        return "".join(out)


def _sizes(sh: Shell, buffers: list[str]) -> str:
    def human(value: int) -> str:
        units = ("", "Ki", "Mi", "Gi")
        i = 0
        while i < len(units) - 1 and value >= 1024:
            value, i = value // 1024, i + 1
        return f"{value} {units[i]}B"

    logs = sh.phone.logs
    return "".join(
        f"{name}: ring buffer is {human(logs.ring_bytes)} ({human(logs.used(name))} consumed, "
        f"{human(logs.used(name))} readable), max entry is {MAX_ENTRY} B, max payload is {MAX_PAYLOAD} B\n"
        for name in buffers
    )


def _file_sink(sh: Shell, path: str) -> Callable[[str], None]:
    def write(text: str) -> None:
        if text:
            with rootfs.open_write(sh.host(path), append=True, mode=0o640) as handle:
                handle.write(text.encode())

    return write


def _clear_files(sh: Shell, path: str) -> int:
    """`logcat -c -f FILE`: delete FILE and its rotations (FILE.1, FILE.2 …) instead of the log."""
    directory, name = posixpath.split(sh.device_abs(path))
    try:
        names = os.listdir(sh.host(directory))
    except OSError as exc:
        return sh.fail(f"logcat: failed to open log directory '{directory}': {exc.strerror}")
    for entry in names:
        rest = entry[len(name):]
        if entry == name or entry.startswith(name) and rest[:1] == "." and rest[1:].isdigit():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(sh.host(posixpath.join(directory, entry), follow=False))
    return 0


@async_command("logcat")
async def _logcat(sh: Shell, args: list[str]) -> int:
    try:
        opts = parse(args, sh.env, _zone(sh), sh.phone.now().year)
    except LogcatUsageError as exc:
        return sh.fail(f"logcat: {exc}")
    if opts.help:
        sh.out(_USAGE)
        return 0
    for warning in opts.warnings:
        sh.err(warning + "\n")
    if opts.unsupported is not None:
        return sh.fail(f"logcat: {opts.unsupported}: not supported by this virtual phone")
    try:
        regex = re.compile(opts.regex) if opts.regex is not None else None
    except re.error as exc:
        # std::regex throws and nothing catches it: libc++ aborts the process.
        sh.err(f"libc++abi: terminating due to uncaught exception of type std::__1::regex_error: {exc}\n")
        return 134
    if opts.file is not None and opts.clear:
        return _clear_files(sh, opts.file)
    logs = sh.phone.logs
    if opts.clear:
        logs.clear(opts.buffers)
    if opts.get_size:
        sh.out(_sizes(sh, opts.buffers))
    if opts.clear or opts.get_size:
        return 0
    emit: Callable[[str], None] = sh.out if opts.file is None else _file_sink(sh, opts.file)
    printer = _Printer(sh, opts, regex)
    entries, cursor = logs.read(opts.buffers)
    if opts.tail:
        entries = entries[-opts.tail:]
    try:
        emit(printer.lines(entries))
    except OSError as exc:
        return sh.fail(f"logcat: couldn't open output file '{opts.file}': {exc.strerror}")
    # A pipe or a redirect holds output until the command ends, so a reader there could never be read: dump.
    if opts.dump or printer.done or sh.capturing or sh.wait_host_close is None:
        return 0
    await sh.flush()
    return await _follow(sh, printer, emit, cursor)


async def _follow(sh: Shell, printer: _Printer, emit: Callable[[str], None], cursor: int) -> int:
    """Print what is logged after `cursor` as it comes, until the host closes the stream or `-m` is reached."""
    logs = sh.phone.logs
    assert sh.wait_host_close is not None
    closed = asyncio.ensure_future(sh.wait_host_close())
    try:
        while not closed.done() and not printer.done:
            fresh = asyncio.ensure_future(logs.wait_new(cursor))
            try:
                done, _ = await asyncio.wait({fresh, closed}, timeout=QUIET_S, return_when=asyncio.FIRST_COMPLETED)
            finally:
                fresh.cancel()
                await asyncio.gather(fresh, return_exceptions=True)
            if closed.done():
                break
            if not done:
                system_log.idle(sh.phone)  # a phone's log is never quiet for long: readers wait for its next line
            entries, cursor = logs.read(printer.opts.buffers, cursor)
            try:
                emit(printer.lines(entries))
            except OSError as exc:
                return sh.fail(f"logcat: Write to output file failed: {exc.strerror}")
            await sh.flush()
    finally:
        closed.cancel()
        await asyncio.gather(closed, return_exceptions=True)
    return 0

