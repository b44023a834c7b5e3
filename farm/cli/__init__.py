"""The `farm` command: thin typer sub-apps that parse, call the library and print."""

from __future__ import annotations

import datetime as dt
import importlib.abc
import importlib.machinery
import os
import sys
import traceback
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

import typer
import typer._click as click
from rich.console import Console
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer.exceptions import Abort

from farm.errors import FarmError
from farm.exits import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED

LOG_DIR_ENV = "FARM_LOG_DIR"
"""Where internal-error logs go, overriding the per-user state directory."""
MAX_MESSAGE = 200
"""Characters of an internal error's message kept on its one line (the log has all of it)."""

_EXIT_HELP = (
    "Exit status: 0 success (run, sweep: every attempted unit passed, or the rate reached --fail-under); 1 (run, "
    "sweep) every unit finished, some failed; 2 bad input (one line on stderr naming the flag, file, field or "
    "device and the fix), no healthy phone, no adb server, a model key refused or an endpoint that does not "
    "answer; 3 (run, sweep) units left unfinished; 4 (run, sweep) pass rate below --fail-under; 5 (run, sweep) "
    "infrastructure errors after every try; 6 (run, sweep) a listed adb server (a farm host) lost; 70 internal "
    "error (one line naming the log file with the traceback, "
    f"under ${LOG_DIR_ENV}, else $XDG_STATE_HOME/agent-farm/logs or ~/.local/state/agent-farm/logs); 130 "
    "interrupted."
)

app = typer.Typer(
    name="farm",
    help=(
        "Evaluate AI agents on phones, browsers and desktops.\n\n"
        "Typical use: `farm sim up` (or plug in a phone), `farm devices`, "
        "`farm run --split tune`, then open the report path it prints.\n\n" + _EXIT_HELP
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

err_console = Console(stderr=True, highlight=False, soft_wrap=True)
_registered = False


def _print_version(value: bool) -> None:
    if value:
        from farm import __version__

        print(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print the agent-farm version and exit."
    ),
) -> None:
    """Evaluate AI agents on phones, browsers and desktops."""


@app.command("version")
def version() -> None:
    """Print the agent-farm version."""
    from farm import __version__

    print(__version__)


def _register() -> None:
    # Each module adds its own commands or sub-app; the order is the order of `farm --help`.
    from farm.cli import agent, android, desktop, history, report, settings, sim, sweep, tasks, view, web, webvoyager

    for module in (tasks, sim, android, agent, sweep, report, history, view, web, webvoyager, desktop, settings):
        module.register(app)


def command_tree(*, plain_help: bool | None = None) -> click.Command:
    """The click command of `farm` with every sub-command registered. `plain_help` (default: stdout is not a
    terminal) gives click's plain help instead of rich panels: a pipe then gets every line whole (rich cuts help
    to 80 columns and elides with `…`), and each command's first sentence is listed uncut."""
    import typer.main

    global _registered
    if not _registered:
        _register()
        _registered = True
    root = typer.main.get_command(app)
    _named_arguments(root)
    if plain_help is None:
        from farm.cli.tables import stdout_is_terminal

        plain_help = not stdout_is_terminal()
    if plain_help:
        _plain_help(root)
    return root


def _named_arguments(command: click.Command) -> None:
    """An argument given a metavar (`RUN`, `FILE`) is shown by it alone: typer would add its Python type
    (`<list[str]>`, `<path>`) beside it."""
    for param in command.params:
        if param.param_type_name == "argument" and param.metavar:
            setattr(param, "display_type_rich", lambda ctx: None)  # noqa: B010 - this one parameter's help only
    for sub in getattr(command, "commands", {}).values():
        _named_arguments(sub)


def _plain_help(command: click.Command) -> None:
    from typer._click.utils import make_default_short_help

    # Typer draws rich help unless the command's markup mode is None.
    setattr(command, "rich_markup_mode", None)  # noqa: B010 - typer's commands carry it, click's do not
    if command.short_help is None and command.help:
        # Click cuts a command's first sentence to fit the listing; a long limit keeps it whole.
        command.short_help = make_default_short_help(command.help, 10_000)
    for sub in getattr(command, "commands", {}).values():
        _plain_help(sub)


def log_dir() -> Path:
    """Where internal-error logs go: $FARM_LOG_DIR, else the XDG state directory of agent-farm."""
    if os.environ.get(LOG_DIR_ENV):
        return Path(os.environ[LOG_DIR_ENV])
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state) if state and os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "agent-farm" / "logs"


def _one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _write_log(exc: BaseException, argv: list[str]) -> Path:
    """The traceback of `exc` in a new file of `log_dir()`, credentials removed; OSError when it cannot be written."""
    from farm import __version__
    from farm.redact import redact_argv, redact_text, secret_values

    directory = log_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S-%f")
    path = directory / f"farm-{stamp}-{os.getpid()}.log"
    text = "".join(traceback.format_exception(exc))
    body = (f"agent-farm {__version__}, python {sys.version.split()[0]}\n"
            f"command: farm {' '.join(redact_argv(argv))}\n\n{text}")
    # Owner-only and never an existing file: a log may quote paths and input the user gave.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as handle:
        handle.write(redact_text(body, secret_values(argv=argv)))
    return path


def _describe(exc: BaseException, argv: list[str]) -> str:
    """`Type: message` on one line, truncated, credentials removed."""
    from farm.redact import redact_text, secret_values

    return _one_line(redact_text(f"{type(exc).__name__}: {exc}", secret_values(argv=argv)))


def _internal_error(exc: BaseException, argv: list[str]) -> int:
    """One line for a bug (the traceback goes to a log file, never to the terminal); the exit status."""
    what = _describe(exc, argv)
    try:
        where = f"details in {_write_log(exc, argv)}"
    except Exception as log_exc:  # noqa: BLE001 - the one line must still come out
        where = f"no log written ({_one_line(f'{log_dir()}: {log_exc}', 120)})"
    err_console.print(f"error: internal error ({what}); {where}", markup=False)
    return EXIT_INTERNAL


def _thread_hook(argv: list[str]) -> None:
    """A worker thread that dies of a bug leaves one line and a log, like the main thread (the default hook
    would print its traceback on the terminal)."""
    import threading

    def hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is None or isinstance(args.exc_value, SystemExit):
            return
        name = args.thread.name if args.thread is not None else "?"
        what = _describe(args.exc_value, argv)
        try:
            where = f"details in {_write_log(args.exc_value, argv)}"
        except Exception as log_exc:  # noqa: BLE001 - the one line must still come out
            where = f"no log written ({_one_line(str(log_exc), 120)})"
        err_console.print(f"error: internal error in thread {name} ({what}); {where}", markup=False)

    threading.excepthook = hook


def _usage_error(exc: UsageError) -> str:
    """A click usage error (unknown option, bad value, missing argument) as one line naming the command."""
    path = exc.ctx.command_path if exc.ctx is not None else "farm"
    return f"{path}: {_one_line(exc.format_message(), 400)} — see `{path} --help`"


class _NoAdbAutostart(importlib.abc.MetaPathFinder):
    """Patches adbutils the moment it is imported so that no command of this process — whichever lane, whichever
    library calls adbutils — starts an adb server as a side effect (see `patch_adb_connection`)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "adbutils._adb":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            load(module)
            from farm.android.devices import patch_adb_connection

            patch_adb_connection(module)

        setattr(spec.loader, "exec_module", exec_module)  # noqa: B010 - this one spec's loader only
        return spec


def _guard_adb() -> None:
    if "adbutils._adb" in sys.modules:
        from farm.android.devices import forbid_adb_autostart

        forbid_adb_autostart()
    elif not any(isinstance(f, _NoAdbAutostart) for f in sys.meta_path):
        sys.meta_path.insert(0, _NoAdbAutostart())


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point. Whatever happens, the terminal sees at most one error line:
    FarmError and usage errors exit 2, Ctrl-C 130, anything else 70 with the traceback in a log file."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        _thread_hook(args)
        _guard_adb()
        code = command_tree().main(args=args, prog_name="farm", standalone_mode=False)
    except FarmError as exc:
        err_console.print(f"error: {exc.line()}", markup=False)
        sys.exit(exc.exit_code)
    except NoArgsIsHelpError:
        # The help was printed (stdout) on the way: a group without its command is asking for it.
        sys.exit(EXIT_BAD_INPUT)
    except UsageError as exc:
        err_console.print(f"error: {_usage_error(exc)}", markup=False)
        sys.exit(EXIT_BAD_INPUT)
    except ClickException as exc:
        err_console.print(f"error: {_one_line(exc.format_message(), 400)}", markup=False)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, Abort):
        code = EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the top-level handler: a bug becomes one line and a log
        sys.exit(_internal_error(exc, args))
    if code == EXIT_INTERRUPTED:
        err_console.print("error: interrupted", markup=False)
    sys.exit(code if isinstance(code, int) else 0)
