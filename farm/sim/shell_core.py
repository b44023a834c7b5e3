"""A small POSIX-ish shell interpreter: quoting, `$?`/`$VAR`, `;` `&&` `||` `|`, redirections.

Nothing here runs on the host: every command is a Python function over the phone's state.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import posixpath
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from farm.sim import rootfs
from farm.sim.phone import PhoneState
from farm.sim.shell_stdin import reads_stdin

Part = tuple[str, bool, bool]
"""(text, expand variables, may glob) — one piece of a word."""
Emit = Callable[[bytes], Awaitable[None]]
SyncCommand = Callable[["Shell", list[str]], int]
AsyncCommand = Callable[["Shell", list[str]], Awaitable[int]]

COMMANDS: dict[str, SyncCommand] = {}
ASYNC_COMMANDS: dict[str, AsyncCommand] = {}
CMD_SERVICES: dict[str, SyncCommand] = {}
"""Binder services `cmd SERVICE …` reaches besides `package` (handled in shell_pm), keyed by service name."""
_OPERATORS = ("&&", "||", ";;", ";", "|", "&", "\n")


def command(*names: str) -> Callable[[SyncCommand], SyncCommand]:
    """Register a synchronous shell command under `names`."""

    def deco(fn: SyncCommand) -> SyncCommand:
        for name in names:
            COMMANDS[name] = fn
        return fn

    return deco


def cmd_service(*names: str) -> Callable[[SyncCommand], SyncCommand]:
    """Register the shell-command handler of a binder service (`cmd uimode …`)."""

    def deco(fn: SyncCommand) -> SyncCommand:
        for name in names:
            CMD_SERVICES[name] = fn
        return fn

    return deco


def async_command(*names: str) -> Callable[[AsyncCommand], AsyncCommand]:
    """Register a command that streams output or waits."""

    def deco(fn: AsyncCommand) -> AsyncCommand:
        for name in names:
            ASYNC_COMMANDS[name] = fn
        return fn

    return deco


class ShellSyntaxError(ValueError):
    """Unterminated quote or misplaced operator."""


@dataclass
class Simple:
    """One simple command: assignments, words, redirections."""

    words: list[list[Part]] = field(default_factory=list)
    redirects: list[tuple[str, list[Part]]] = field(default_factory=list)


Pipeline = list[Simple]
Script = list[tuple[Pipeline, str]]
"""Pipelines with the operator that follows each (`;`, `&&`, `||`, `&`)."""


def tokenize(text: str) -> list[list[Part] | str]:
    """Split into words (lists of parts) and operator strings (`;`, `&&`, `>`, `2>&1`, …)."""
    tokens: list[list[Part] | str] = []
    word: list[Part] = []
    has_word = False
    i, n = 0, len(text)

    def end_word() -> None:
        nonlocal word, has_word
        if has_word:
            tokens.append(word)
        word, has_word = [], False

    while i < n:
        c = text[i]
        if c in " \t":
            end_word()
            i += 1
        elif c == "#" and not has_word:
            while i < n and text[i] != "\n":
                i += 1
        elif c == "'":
            j = text.find("'", i + 1)
            if j < 0:
                raise ShellSyntaxError("unterminated quoted string")
            word.append((text[i + 1 : j], False, False))
            has_word = True
            i = j + 1
        elif c == '"':
            buf, i = [], i + 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\$`\n':
                    buf.append(text[i + 1] if text[i + 1] != "$" else "\0$")
                    i += 2
                else:
                    buf.append(text[i])
                    i += 1
            if i >= n:
                raise ShellSyntaxError("unterminated quoted string")
            word.append(("".join(buf), True, False))
            has_word = True
            i += 1
        elif c == "\\":
            if i + 1 < n and text[i + 1] != "\n":
                word.append((text[i + 1], False, False))
                has_word = True
            i += 2
        elif c in "<>" or (c in "012" and not has_word and i + 1 < n and text[i + 1] in "<>"):
            end_word()
            j = i + 1 if c in "012" else i
            op = (c if c in "012" else "") + text[j]
            j += 1
            if j < n and text[j] == ">" and op.endswith(">"):
                op += ">"
                j += 1
            if j < n and text[j] == "&":
                k = j + 1
                while k < n and text[k].isdigit():
                    k += 1
                op += text[j:k]
                j = k
            tokens.append(op)
            i = j
        elif any(text.startswith(op, i) for op in _OPERATORS):
            end_word()
            op = next(op for op in _OPERATORS if text.startswith(op, i))
            tokens.append(";" if op == "\n" else op)
            i += len(op)
        else:
            j = i
            while j < n and text[j] not in " \t'\"\\;&|<>\n":
                j += 1
            word.append((text[i:j], True, True))
            has_word = True
            i = j
    end_word()
    return tokens


def parse(text: str) -> Script:
    """Parse a command line into pipelines joined by `;`, `&&`, `||`, `&`."""
    script: Script = []
    pipeline: Pipeline = []
    simple = Simple()
    pending_redirect: str | None = None
    for tok in tokenize(text):
        if isinstance(tok, list):
            if pending_redirect is not None:
                simple.redirects.append((pending_redirect, tok))
                pending_redirect = None
            else:
                simple.words.append(tok)
            continue
        if pending_redirect is not None:
            raise ShellSyntaxError(f"syntax error: unexpected '{tok}'")
        if tok[-1] in "<>":
            pending_redirect = tok
        elif "&" in tok and tok[0] in "012>" and tok not in ("&&", "&"):
            simple.redirects.append((tok, []))
        elif tok == "|":
            if not simple.words:
                raise ShellSyntaxError("syntax error: unexpected '|'")
            pipeline.append(simple)
            simple = Simple()
        else:
            if simple.words or simple.redirects:
                pipeline.append(simple)
            elif pipeline or tok != ";":
                raise ShellSyntaxError(f"syntax error: unexpected '{tok}'")
            if pipeline:
                script.append((pipeline, tok))
            pipeline, simple = [], Simple()
    if pending_redirect is not None:
        raise ShellSyntaxError("syntax error: unexpected newline")
    if simple.words or simple.redirects:
        pipeline.append(simple)
    if pipeline:
        script.append((pipeline, ";"))
    return script


class Shell:
    """One shell session on a phone: cwd, variables, the last status, output sinks."""

    def __init__(self, phone: PhoneState, emit_out: Emit, emit_err: Emit) -> None:
        self.phone = phone
        self.cwd = "/"
        self.env: dict[str, str] = {
            "PATH": "/product/bin:/apex/com.android.runtime/bin:/system/bin:/system/xbin:/vendor/bin",
            "HOME": "/",
            "SHELL": "/system/bin/sh",
            "USER": "shell",
            "HOSTNAME": phone.profile.device,
            "EXTERNAL_STORAGE": "/sdcard",
            "ANDROID_DATA": "/data",
            "ANDROID_ROOT": "/system",
            "TMPDIR": "/data/local/tmp",
        }
        self.status = 0
        self.positional: list[str] = []
        """`$1`… of the script running (`sh FILE ARGS`, `sh -c CMD NAME ARGS`); `$0` is `argv0`."""
        self.argv0 = "/system/bin/sh"
        self.stdin = b""
        self.closed_by_host = False
        self.exit_requested = False
        self._depth = 0
        self.wait_host_close: Callable[[], Awaitable[None]] | None = None
        """Completes when the host closes the stream (for commands that run until killed)."""
        self.host_stdin: Callable[[], Awaitable[bytes]] | None = None
        """The host's stdin to its end (close-stdin or CLSE), for the first command that reads stdin; None when
        the session has none to give (an interactive shell reads its command lines from it)."""
        self._emit_out = emit_out
        self._emit_err = emit_err
        self._out = bytearray()
        self._err = bytearray()
        self._captures: list[tuple[bytearray, bytearray | None]] = []

    # -- output --
    def out(self, data: str | bytes) -> None:
        """Write to stdout (or the current capture)."""
        raw = data.encode() if isinstance(data, str) else data
        (self._captures[-1][0] if self._captures else self._out).extend(raw)

    def err(self, data: str | bytes) -> None:
        """Write to stderr (or the current capture)."""
        raw = data.encode() if isinstance(data, str) else data
        if self._captures:
            sink = self._captures[-1][1]
            if sink is not None:
                sink.extend(raw)
        else:
            self._err.extend(raw)

    def fail(self, message: str, status: int = 1) -> int:
        """Print `message` on stderr and return `status`."""
        self.err(message if message.endswith("\n") else message + "\n")
        return status

    async def flush(self) -> None:
        """Send buffered stdout/stderr to the host (no-op while captured)."""
        if self._captures:
            return
        if self._out:
            data = bytes(self._out)
            self._out.clear()
            await self._emit_out(data)
        if self._err:
            data = bytes(self._err)
            self._err.clear()
            await self._emit_err(data)

    @property
    def capturing(self) -> bool:
        """Whether output goes into a pipe or a redirect (held in memory) rather than to the host."""
        return bool(self._captures)

    # -- paths --
    def host(self, device_path: str, *, follow: bool = True) -> Path:
        """Host path for a device path relative to cwd, inside the phone's root (`rootfs.resolve`).

        OSError when it cannot be resolved there: PathEscapeError (EACCES) for a link leading out.
        """
        return self.phone.host_path(device_path, self.cwd, follow=follow)

    def device_abs(self, device_path: str) -> str:
        """Absolute device path relative to cwd."""
        return posixpath.normpath(posixpath.join(self.cwd, device_path))

    # -- execution --
    async def run(self, text: str) -> int:
        """Parse and run a command line; returns the final status."""
        try:
            script = parse(text)
        except ShellSyntaxError as exc:
            self.status = 2
            self.fail(f"/system/bin/sh: {exc}")
            await self.flush()
            return 2
        prev_op = ";"
        self._depth += 1
        try:
            for pipeline, op in script:
                skipped = prev_op == "&&" and self.status != 0 or prev_op == "||" and self.status == 0
                if not skipped:
                    self.status = await self._run_pipeline(pipeline)
                    await self.flush()
                prev_op = op
                if self.closed_by_host or self.exit_requested:
                    break
        finally:
            self._depth -= 1
            if self._depth > 0:
                self.exit_requested = False  # `exit` inside `sh -c` ends only that shell
        return self.status

    async def _run_pipeline(self, pipeline: Pipeline) -> int:
        # `self.stdin` on entry is input this shell has not consumed yet (a pipe into `sh -c`): the first command
        # that reads stdin takes it, else the host's stdin. A command that does not read it leaves it there.
        pending = self.stdin
        data = b""
        if self._reads_stdin(pipeline[0]):
            data, pending = pending, b""
            if not data and self.host_stdin is not None:
                try:
                    data = await self.host_stdin()
                except OSError as exc:
                    self.stdin = b""
                    return self.fail(f"/system/bin/sh: stdin: {exc.strerror}")
        status = 0
        for index, simple in enumerate(pipeline):
            last = index == len(pipeline) - 1
            self.stdin = data
            if last:
                status = await self._run_simple(simple)
            else:
                cap_out = bytearray()
                self._captures.append((cap_out, self._captures[-1][1] if self._captures else self._err))
                try:
                    await self._run_simple(simple)
                finally:
                    self._captures.pop()
                data = bytes(cap_out)
        self.stdin = pending
        return status

    def _reads_stdin(self, simple: Simple) -> bool:
        if any(op == "<" for op, _ in simple.redirects):
            return False
        argv = [arg for word in simple.words for arg in self.expand(word)]
        while argv and "=" in argv[0] and argv[0].split("=", 1)[0].isidentifier():
            argv.pop(0)
        return reads_stdin(argv)

    def expand(self, word: list[Part]) -> list[str]:
        """Variables, then globbing of unquoted parts that contain `*` or `?`."""
        text = ""
        pattern = ""
        globbing = False
        for part, expand, may_glob in word:
            value = self._expand_vars(part) if expand else part
            text += value
            if may_glob and any(ch in value for ch in "*?["):
                globbing = True
                pattern += value
            else:
                pattern += "".join(f"[{ch}]" if ch in "*?[" else ch for ch in value)
        if globbing:
            matches = self._glob(pattern)
            if matches:
                return matches
        return [text]

    def _expand_vars(self, text: str) -> str:
        out: list[str] = []
        i = 0
        while i < len(text):
            c = text[i]
            if c == "\0" and text.startswith("\0$", i):
                out.append("$")
                i += 2
            elif c == "$" and i + 1 < len(text):
                nxt = text[i + 1]
                if nxt == "?":
                    out.append(str(self.status))
                    i += 2
                elif nxt.isdigit() or nxt in "#*@":
                    out.append(self._param(nxt))
                    i += 2
                elif nxt == "{":
                    j = text.find("}", i)
                    name = text[i + 2 : j] if j > 0 else ""
                    out.append(self._param(name))
                    i = j + 1 if j > 0 else len(text)
                elif nxt.isalnum() or nxt == "_":
                    j = i + 1
                    while j < len(text) and (text[j].isalnum() or text[j] == "_"):
                        j += 1
                    out.append(self.env.get(text[i + 1 : j], ""))
                    i = j
                else:
                    out.append(c)
                    i += 1
            else:
                out.append(c)
                i += 1
        return "".join(out)

    def _param(self, name: str) -> str:
        """A variable, or a positional parameter (`0`, `1`…, `#`, `*`, `@` — `@` joined like `*`)."""
        if name.isdigit():
            n = int(name)
            return self.argv0 if n == 0 else self.positional[n - 1] if n <= len(self.positional) else ""
        if name == "#":
            return str(len(self.positional))
        if name in ("*", "@"):
            return " ".join(self.positional)
        return self.env.get(name, "")

    def _glob(self, pattern: str) -> list[str]:
        absolute = pattern.startswith("/")
        parts = [p for p in pattern.split("/") if p]
        bases = ["/" if absolute else ""]
        for part in parts:
            nxt: list[str] = []
            for base in bases:
                if not any(ch in part for ch in "*?[") or part.startswith("[") and len(part) == 3:
                    literal = part[1] if part.startswith("[") and len(part) == 3 else part
                    nxt.append(posixpath.join(base, literal) if base else literal)
                    continue
                try:
                    names = sorted(os.listdir(self.host(base or ".")))
                except OSError:
                    continue
                for name in names:
                    if name.startswith(".") and not part.startswith("."):
                        continue
                    if fnmatch.fnmatchcase(name, part):
                        nxt.append(posixpath.join(base, name) if base else name)
            bases = nxt
        return [b for b in bases if self._lexists(b)]

    def _lexists(self, path: str) -> bool:
        try:
            return os.path.lexists(self.host(path, follow=False))
        except OSError:
            return False

    async def _run_simple(self, simple: Simple) -> int:
        argv: list[str] = []
        for word in simple.words:
            argv.extend(self.expand(word))
        assignments: dict[str, str] = {}
        while argv and "=" in argv[0] and argv[0].split("=", 1)[0].isidentifier():
            key, value = argv.pop(0).split("=", 1)
            assignments[key] = value
        if not argv:
            self.env.update(assignments)
            return 0
        saved_env = dict(self.env)
        self.env.update(assignments)
        out_target: tuple[str, bool] | None = None
        err_mode: str | None = None
        out_to_err = False
        for op, word in simple.redirects:
            target = " ".join(self.expand(word)) if word else ""
            if op in (">", "1>", ">>", "1>>"):
                out_target = (target, op.endswith(">>"))
            elif op in ("2>", "2>>"):
                err_mode = "null" if target == "/dev/null" else "file:" + target
            elif op == "2>&1":
                err_mode = "merge"
            elif op in (">&2", "1>&2"):
                out_to_err = True
            elif op == "<":
                try:
                    with rootfs.open_read(self.host(target)) as handle:
                        self.stdin = handle.read(self.phone.profile.limits.copy_max_bytes + 1)
                    if len(self.stdin) > self.phone.profile.limits.copy_max_bytes:
                        raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))
                except OSError as exc:
                    self.env = saved_env
                    return self.fail(f"/system/bin/sh: can't open {target}: {exc.strerror}")
        redirected = out_target is not None or err_mode is not None or out_to_err
        try:
            if not redirected:
                return await self._dispatch(argv)
            cap_out = bytearray()
            cap_err = bytearray()
            outer_err = self._captures[-1][1] if self._captures else self._err
            err_sink: bytearray | None = cap_err
            if err_mode == "merge":
                err_sink = cap_out
            elif err_mode is None:
                err_sink = outer_err
            self._captures.append((cap_out, err_sink))
            try:
                status = await self._dispatch(argv)
            finally:
                self._captures.pop()
            if out_to_err:
                self.err(bytes(cap_out))
            elif out_target is None or out_target[0] == "/dev/null":
                if out_target is None:
                    self.out(bytes(cap_out))
            elif not self._write_file(out_target[0], bytes(cap_out), out_target[1]):
                status = 1
            if err_mode and err_mode.startswith("file:"):
                self._write_file(err_mode[5:], bytes(cap_err), False)
            return status
        finally:
            if assignments:
                self.env = saved_env

    def _write_file(self, path: str, data: bytes, append: bool) -> bool:
        try:
            with rootfs.open_write(self.host(path), append=append) as handle:
                handle.write(data)
            return True
        except OSError as exc:
            self.fail(f"/system/bin/sh: can't create {path}: {exc.strerror}")
            return False

    async def run_argv(self, argv: list[str]) -> int:
        """Run one already-split command (for `exec` and `toybox`-style dispatch)."""
        return await self._dispatch(argv)

    async def _dispatch(self, argv: list[str]) -> int:
        name = argv[0]
        base = name.rsplit("/", 1)[-1] if name.startswith(("/system/bin/", "/system/xbin/", "/bin/")) else name
        sync_fn = COMMANDS.get(base)
        if sync_fn is not None:
            return sync_fn(self, argv[1:])
        async_fn = ASYNC_COMMANDS.get(base)
        if async_fn is not None:
            return await async_fn(self, argv[1:])
        return self.fail(f"/system/bin/sh: {name}: inaccessible or not found", 127)


@command("exit")
def _exit(sh: Shell, args: list[str]) -> int:
    sh.exit_requested = True
    try:
        return int(args[0]) & 0xFF if args else sh.status
    except ValueError:
        return sh.fail(f"/system/bin/sh: exit: Illegal number: {args[0]}", 2)
