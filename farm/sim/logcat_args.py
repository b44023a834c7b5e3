"""logcat's command line, parsed as logcat's getopt_long loop parses it, with its error messages.

A bad option ends logcat with `logcat: MESSAGE` on stderr and status 1 (bionic `error(EXIT_FAILURE, …)`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from farm.sim.logbuf import BUFFERS, DEFAULT_BUFFERS
from farm.sim.logformat import LogFilter, LogFormat, parse_time

_WITH_ARG = set("tTGfrnvbPme")
_FLAGS = set("cdDhLgsQBSp")
_LONG: dict[str, tuple[str, str]] = {
    # name: (option it stands for, "" no argument / "=" required / "?" optional)
    "binary": ("B", ""), "buffer": ("b", "="), "buffer-size": ("g", "?"), "clear": ("c", ""), "debug": ("debug", ""),
    "dividers": ("D", ""), "file": ("f", "="), "format": ("v", "="), "grep": ("e", "="), "head": ("m", "="),
    "help": ("h", ""), "id": ("id", "="), "last": ("L", ""), "max-count": ("m", "="), "pid": ("pid", "="),
    "print": ("print", ""), "prune": ("p", "?"), "proto": ("proto", ""), "regex": ("e", "="),
    "rotate-count": ("n", "="), "rotate-kbytes": ("r", "="), "statistics": ("S", ""), "tail": ("t", "="),
    "uid": ("uid", "="), "wrap": ("wrap", "?"),
}
NOT_SIMULATED = {"B", "proto", "L", "G", "p", "P", "S", "r", "n", "id", "wrap", "Q"}
"""Valid logcat options this phone does not act on (binary/proto output, pstore, logd control, rotation)."""
_DELIMITERS = re.compile(r"[,:; \t\n\r\f]+")


class LogcatUsageError(ValueError):
    """What logcat prints (after `logcat: `) before it exits with status 1."""


@dataclass
class LogcatArgs:
    clear: bool = False
    dump: bool = False
    dividers: bool = False
    get_size: bool = False
    help: bool = False
    buffers: list[str] = field(default_factory=list)
    fmt: LogFormat = field(default_factory=LogFormat)
    filt: LogFilter = field(default_factory=LogFilter)
    tail: int = 0
    since: float | None = None
    regex: str | None = None
    max_count: int = 0
    print_anyway: bool = False
    pid: int = 0
    uids: set[int] = field(default_factory=set)
    file: str | None = None
    warnings: list[str] = field(default_factory=list)
    unsupported: str | None = None


def _options(argv: list[str]) -> tuple[list[tuple[str, str | None, str]], list[str]]:
    """getopt_long with permutation: ([(option, argument, as typed)], operands)."""
    opts: list[tuple[str, str | None, str]] = []
    operands: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            operands.extend(argv[i:])
            break
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if name not in _LONG:
                raise LogcatUsageError(f"Unknown option '{arg}'.")
            opt, kind = _LONG[name]
            if kind == "" and eq:
                raise LogcatUsageError(f"Unknown option '{arg}'.")
            if kind == "=" and not eq:
                if i >= len(argv):
                    raise LogcatUsageError(f"Option '{arg}' needs an argument.")
                value, i = argv[i], i + 1
            opts.append((opt, value if (eq or kind == "=") else None, arg))
            continue
        if not arg.startswith("-") or arg == "-":
            operands.append(arg)
            continue
        j = 1
        while j < len(arg):
            letter = arg[j]
            if letter in _FLAGS:
                opts.append((letter, None, arg))
                j += 1
            elif letter in _WITH_ARG:
                value = arg[j + 1 :]
                if not value:
                    if i >= len(argv):
                        raise LogcatUsageError(f"Option '{arg}' needs an argument.")
                    value, i = argv[i], i + 1
                opts.append((letter, value, arg))
                break
            else:
                raise LogcatUsageError(f"Unknown option '{arg}'.")
    return opts, operands


def _uint(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def parse(argv: list[str], env: dict[str, str], zone: ZoneInfo, now_year: int) -> LogcatArgs:
    """The options in force; LogcatUsageError for what logcat refuses."""
    import datetime as dt

    if argv == ["--help"]:
        return LogcatArgs(help=True)
    out = LogcatArgs()
    opts, operands = _options(argv)
    got_t = False
    has_format = False
    for opt, value, typed in opts:
        if opt in NOT_SIMULATED and out.unsupported is None:
            out.unsupported = typed
        if opt == "s":
            out.filt.add_rule("*:s")
        elif opt == "c":
            out.clear = True
        elif opt == "d":
            out.dump = True
        elif opt in ("t", "T") and value is not None:
            if opt == "t":
                got_t, out.dump = True, True
            if not value.isdigit():
                since = parse_time(value, zone, dt.datetime(now_year, 1, 1, tzinfo=zone))
                if since is None:
                    raise LogcatUsageError(f"-{opt} '{value}' not in time format.")
                out.since = since
            elif int(value) < 1:
                out.warnings.append(f"WARNING: -{opt} {value} invalid, setting to 1")
                out.tail = 1
            else:
                out.tail = int(value)
        elif opt == "D":
            out.dividers = True
        elif opt == "e" and value is not None:
            out.regex = value
        elif opt == "m" and value is not None:
            count = _uint(value)
            if not count:
                raise LogcatUsageError(f"-m '{value}' isn't an integer greater than zero.")
            out.max_count = count
        elif opt == "g" and value is None:
            out.get_size = True
        elif opt == "b" and value is not None:
            for name in _DELIMITERS.split(value):
                if not name:
                    continue
                if name == "default":
                    out.buffers += ["main", "system", "crash"]
                elif name == "all":
                    out.buffers += list(BUFFERS)
                elif name in BUFFERS:
                    out.buffers.append(name)
                else:
                    raise LogcatUsageError(f"Unknown -b buffer '{name}'.")
        elif opt == "f":
            out.file = value
        elif opt == "v" and value is not None:
            for word in _DELIMITERS.split(value):
                if word:
                    done = out.fmt.set(word)
                    if done < 0:
                        raise LogcatUsageError(f"Invalid -v '{word}'.")
                    has_format = has_format or done > 0
        elif opt == "h":
            out.help = True
            return out
        elif opt == "pid" and value is not None:
            if out.pid:
                raise LogcatUsageError("Only one --pid argument can be provided.")
            pid = _uint(value)
            if not pid:
                raise LogcatUsageError(f"pid '{value}' out of range.")
            out.pid = pid
        elif opt == "uid" and value is not None:
            for text in _DELIMITERS.split(value):
                if text and _uint(text) is None:
                    raise LogcatUsageError(f"Unable to parse UID '{text}'")
                if text:
                    out.uids.add(int(text))
        elif opt == "print":
            out.print_anyway = True
    if out.max_count and got_t:
        raise LogcatUsageError("Cannot use -m (--max-count) and -t together.")
    if out.print_anyway and not (out.regex and out.max_count):
        out.warnings.append("WARNING: --print ignored, to be used in combination with\n"
                            "         --regex <expr> and --max-count <N>")
        out.print_anyway = False
    if not has_format and env.get("ANDROID_PRINTF_LOG"):
        for word in _DELIMITERS.split(env["ANDROID_PRINTF_LOG"]):
            if word and out.fmt.set(word) < 0:
                out.warnings.append(f"invalid format in ANDROID_PRINTF_LOG '{word}'")
    if operands:
        for spec in operands:
            if not out.filt.add_string(spec):
                raise LogcatUsageError(f"Invalid filter expression '{spec}'.")
    elif env.get("ANDROID_LOG_TAGS") and not out.filt.add_string(env["ANDROID_LOG_TAGS"]):
        raise LogcatUsageError(f"Invalid filter expression '{env['ANDROID_LOG_TAGS']}' in ANDROID_LOG_TAGS.")
    ordered = [name for name in BUFFERS if name in (out.buffers or DEFAULT_BUFFERS)]
    out.buffers = ordered
    return out
