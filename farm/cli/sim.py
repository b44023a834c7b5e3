"""`farm sim up|status|down`: virtual phones on loopback, attached to the adb server."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import typer
from rich.console import Console

sim_app = typer.Typer(
    help="Virtual phones for demos and tests (a device-side adbd on 127.0.0.1).", no_args_is_help=True
)
console = Console(highlight=False, soft_wrap=True)
MAX_PHONES = 64
"""Most virtual phones one `farm sim up` starts (each is a set of loopback servers and a file tree)."""
MAX_PROFILE_BYTES = 1 << 20
"""Largest phone profile read (1 MiB)."""


def _check_profile(path: Path) -> None:
    """`--profile` is a readable UTF-8 YAML file of sane size and nesting, refused in one line before the
    background process is started (which would only leave its error in a log)."""
    from farm.errors import FarmError
    from farm.sim.profile import load_profile

    if path.is_dir():
        raise FarmError(f"--profile {path}: is a directory", hint="pass a phone profile YAML file")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_PROFILE_BYTES + 1)
    except OSError as exc:
        raise FarmError(f"--profile {path}: cannot read ({exc.strerror or exc})",
                        hint="pass an existing YAML file") from None
    if len(data) > MAX_PROFILE_BYTES:
        raise FarmError(f"--profile {path}: larger than 1 MiB", hint="see farm/sim/profiles/default.yaml")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FarmError(f"--profile {path}: not UTF-8 text (byte {exc.start})", hint="save it as UTF-8") from None
    try:
        load_profile(path)
    except RecursionError:
        raise FarmError(f"--profile {path}: nested too deeply", hint="see farm/sim/profiles/default.yaml") from None


def _check_state_file() -> None:
    """The sim's state file, when there is one, is a file (a directory there would fail every read)."""
    from farm.errors import FarmError
    from farm.sim.serve import state_path

    path = state_path()
    if path.exists() and not path.is_file():
        raise FarmError(f"{path}: the sim state file is not a file", hint="remove it if no sim is running")


@sim_app.command("up")
def up(
    count: int = typer.Option(1, "--count", "-n", min=1, max=MAX_PHONES, metavar="N",
                              help="How many phones to start."),
    profile: Path | None = typer.Option(None, "--profile", metavar="FILE",
                                        help="Phone profile YAML (default: a Pixel-like phone)."),
    adb_port: int | None = typer.Option(
        None, "--adb-port", min=1, max=65535, metavar="PORT",
        help="adb server port (default ANDROID_ADB_SERVER_PORT or 5037)."
    ),
    disconnect_after_s: float | None = typer.Option(None, metavar="SECONDS",
                                                    help="Drop the link this many seconds after attaching."),
    disconnect_after_bytes: int | None = typer.Option(None, min=0, metavar="BYTES",
                                                      help="Drop the link after sending this many bytes."),
    stall_after_bytes: int | None = typer.Option(None, min=0, metavar="BYTES",
                                                 help="Stop sending (link stays up) after this many bytes."),
    slow_link_bps: int | None = typer.Option(None, min=1, metavar="BPS",
                                             help="Throttle what phones send to this many bytes/s."),
    state: str = typer.Option("device", metavar="device|offline|unauthorized", help="What adb sees."),
    instrument_crash_after: int | None = typer.Option(None, min=0, metavar="N",
                                                      help="The agent's instrumentation crashes after N tasks."),
    instrument_stop_after: int | None = typer.Option(None, min=0, metavar="N",
                                                     help="The agent's instrumentation stops after N tasks."),
    hostile_eval_tree: bool = typer.Option(False, help="The agent app writes hostile file names."),
) -> None:
    """Start phones in the background, `adb connect` them and print their serials."""
    from farm.android.devices import local_port
    from farm.android.options import check_seconds
    from farm.errors import FarmError
    from farm.sim import serve
    from farm.sim.profile import FaultSpec

    if state not in ("device", "offline", "unauthorized"):
        raise FarmError(f"--state: unknown state '{state}'", hint="use device, offline or unauthorized")
    check_seconds(disconnect_after_s, "--disconnect-after-s")
    _check_state_file()
    if profile is not None:
        _check_profile(profile)
    # The port is settled here, once: a bad ANDROID_ADB_SERVER_PORT is named before anything starts.
    port = adb_port if adb_port is not None else local_port()
    link_state: Literal["device", "offline", "unauthorized"] = state  # type: ignore[assignment]
    faults = FaultSpec(
        disconnect_after_s=disconnect_after_s,
        disconnect_after_bytes=disconnect_after_bytes,
        stall_after_bytes=stall_after_bytes,
        slow_link_bps=slow_link_bps,
        state=link_state,
        instrument_crash_after_tasks=instrument_crash_after,
        instrument_stop_after_tasks=instrument_stop_after,
        hostile_eval_tree=hostile_eval_tree,
    )
    started = serve.up(count, profile_file=profile, faults=faults, adb_port=port)
    for phone in started.phones:
        print(phone.serial)


@sim_app.command("status")
def status() -> None:
    """Show the phones `farm sim up` started and how the adb server sees them."""
    from farm.android.devices import forbid_adb_autostart, local_port
    from farm.sim import serve

    _check_state_file()
    local_port()  # importing adbutils reads ANDROID_ADB_SERVER_PORT: name a bad value instead of crashing
    forbid_adb_autostart()

    state, seen = serve.status()
    if state is None:
        console.print("no virtual phones running")
        return
    from farm.cli.tables import print_table

    print_table(("serial", "model", "state", "file system"),
                [[p.serial, p.model, seen.get(p.serial, "?"), p.root] for p in state.phones],
                title=f"virtual phones (pid {state.pid}, adb server :{state.adb_port})")


@sim_app.command("down")
def down() -> None:
    """Stop the phones `farm sim up` started and `adb disconnect` them."""
    from farm.android.devices import forbid_adb_autostart, local_port
    from farm.sim import serve

    _check_state_file()
    local_port()  # importing adbutils reads ANDROID_ADB_SERVER_PORT: name a bad value instead of crashing
    forbid_adb_autostart()

    state = serve.down()
    if state is None:
        console.print("no virtual phones running")
        return
    console.print(f"stopped {len(state.phones)} virtual phone(s): " + " ".join(p.serial for p in state.phones))


def register(app: typer.Typer) -> None:
    """Add the `sim` sub-app to the root app."""
    app.add_typer(sim_app, name="sim")
