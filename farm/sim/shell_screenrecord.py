"""`screenrecord` as on a phone whose video encoder cannot be created, and toybox `which`.

The phone has no H.264 encoder, so it answers as AOSP's screenrecord does when `MediaCodec::CreateByType("video/avc")`
fails: the output file is created first (screenrecord opens it before recording, for better diagnostics), then
`ERROR: unable to create video/avc codec instance` on stderr and `ScreenRecord: failed` in the log. main() returns
that UNKNOWN_ERROR (INT32_MIN) as its exit code, whose low byte is 0: the shell reports status 0, as on the phone.
Argument errors come first, as there (status 2).
"""

from __future__ import annotations

import re

from farm.sim import rootfs, system_log
from farm.sim.shell_core import ASYNC_COMMANDS, COMMANDS, Shell, command

_FLAGS = {"--verbose", "--rotate", "--bugreport", "--persistent-surface", "--help", "--monotonic-time"}
_WITH_ARG = {"--size", "--bit-rate", "--time-limit", "--output-format", "--codec-name", "--display-id", "--bframes"}
_MAX_TIME_LIMIT_S = 180
_MIN_BIT_RATE, _MAX_BIT_RATE = 100_000, 200_000_000
_FILE_FORMATS = ("mp4", "webm", "3gpp")
_USAGE = (
    "Usage: screenrecord [options] <filename>\n\n"
    "Android screenrecord v1.3.  Records the device's display to a .mp4 file.\n\n"
    "Options:\n"
    "--size WIDTHxHEIGHT\n    Set the video size, e.g. \"1280x720\".  Default is the device's main\n"
    "    display resolution.\n"
    "--bit-rate RATE\n    Set the video bit rate, in bits per second.  Value may be specified as\n"
    "    bits or megabits.\n"
    "--bugreport\n    Add additional information, such as a timestamp overlay.\n"
    "--time-limit TIME\n    Set the maximum recording time, in seconds.  Default / maximum is 180.\n"
    "--verbose\n    Display interesting information on stdout.\n"
    "--help\n    Show this message.\n\n"
    "Recording continues until Ctrl-C is hit or the time limit is reached.\n"
)
_SHELL_BUILTINS = {"cd", "exit", "export", "exec", "unset", "eval", "read", "wait", "set", "alias", "source"}


def _bit_rate(text: str) -> int | None:
    match = re.fullmatch(r"(\d+)([mM]?)", text)
    if not match:
        return None
    return int(match.group(1)) * (1_000_000 if match.group(2) else 1)


@command("screenrecord")
def _screenrecord(sh: Shell, args: list[str]) -> int:
    operands: list[str] = []
    output_format = "mp4"
    it = iter(args)
    for arg in it:
        name, eq, value = arg.partition("=")
        if arg == "--help":
            sh.out(_USAGE)
            return 0
        if name in _WITH_ARG:
            got = value if eq else next(it, None)
            if got is None:
                return sh.fail(f"screenrecord: option '{name}' requires an argument", 2)
            if name == "--time-limit" and not (got.isdigit() and 1 <= int(got) <= _MAX_TIME_LIMIT_S):
                shown = int(got) if got.lstrip("-").isdigit() else 0
                return sh.fail(f"Time limit {shown}s outside acceptable range [1,{_MAX_TIME_LIMIT_S}]", 2)
            if name == "--size" and not re.fullmatch(r"[1-9]\d*x[1-9]\d*", got):
                return sh.fail(f"Invalid size '{got}', must be width x height", 2)
            if name == "--bit-rate":
                rate = _bit_rate(got)
                if rate is None:
                    return sh.fail(f"Invalid bit rate '{got}'", 2)
                if not _MIN_BIT_RATE <= rate <= _MAX_BIT_RATE:
                    return sh.fail(f"Bit rate {rate}bps outside acceptable range [{_MIN_BIT_RATE},{_MAX_BIT_RATE}]", 2)
            if name == "--output-format":
                output_format = got
        elif arg in _FLAGS:
            continue
        elif arg.startswith("-") and arg != "-":
            return sh.fail(f"screenrecord: unrecognized option '{arg}'", 2)
        else:
            operands.append(arg)
    if len(operands) != 1:
        return sh.fail("Must specify output file (see --help).", 2)
    path = operands[0]
    if output_format in _FILE_FORMATS:
        try:
            with rootfs.open_write(sh.host(path), append=True, mode=0o644):
                pass  # O_CREAT without O_TRUNC, as screenrecord opens it
        except OSError as exc:
            return sh.fail(f"Unable to open '{path}': {exc.strerror}", 1)
    sh.err("ERROR: unable to create video/avc codec instance\n")
    system_log.screenrecord_failed(sh.phone, sh.phone.logs.new_pid())
    return 0


@command("which")
def _which(sh: Shell, args: list[str]) -> int:
    names = [a for a in args if a != "-a"]
    status = 0
    for name in names:
        base = name.rsplit("/", 1)[-1]
        known = (base in COMMANDS or base in ASYNC_COMMANDS) and base not in _SHELL_BUILTINS
        if known and ("/" not in name or name in (f"/system/bin/{base}", f"/bin/{base}")):
            sh.out(f"/system/bin/{base}\n")
        else:
            status = 1
    return status
