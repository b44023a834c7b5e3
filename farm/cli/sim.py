"""`farm sim up|status|down`: virtual phones on loopback, attached to the adb server."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import typer
from rich.console import Console
from rich.table import Table

sim_app = typer.Typer(
    help="Virtual phones for demos and tests (a device-side adbd on 127.0.0.1).", no_args_is_help=True
)
console = Console(highlight=False)


@sim_app.command("up")
def up(
    count: int = typer.Option(1, "--count", "-n", help="How many phones to start."),
    profile: Path | None = typer.Option(None, "--profile", help="Phone profile YAML (default: a Pixel-like phone)."),
    adb_port: int | None = typer.Option(
        None, "--adb-port", help="adb server port (default ANDROID_ADB_SERVER_PORT or 5037)."
    ),
    disconnect_after_s: float | None = typer.Option(None, help="Drop the link this many seconds after attaching."),
    disconnect_after_bytes: int | None = typer.Option(None, help="Drop the link after sending this many bytes."),
    stall_after_bytes: int | None = typer.Option(None, help="Stop sending (link stays up) after this many bytes."),
    slow_link_bps: int | None = typer.Option(None, help="Throttle what phones send to this many bytes/s."),
    state: str = typer.Option("device", help="What adb sees: device, offline or unauthorized."),
    instrument_crash_after: int | None = typer.Option(None, help="The agent's instrumentation crashes after N tasks."),
    instrument_stop_after: int | None = typer.Option(None, help="The agent's instrumentation stops after N tasks."),
    hostile_eval_tree: bool = typer.Option(False, help="The agent app writes hostile file names."),
) -> None:
    """Start phones in the background, `adb connect` them and print their serials."""
    from farm.errors import FarmError
    from farm.sim import serve
    from farm.sim.profile import FaultSpec

    if state not in ("device", "offline", "unauthorized"):
        raise FarmError(f"--state: unknown state '{state}'", hint="use device, offline or unauthorized")
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
    started = serve.up(count, profile_file=profile, faults=faults, adb_port=adb_port)
    for phone in started.phones:
        print(phone.serial)


@sim_app.command("status")
def status() -> None:
    """Show the phones `farm sim up` started and how the adb server sees them."""
    from farm.sim import serve

    state, seen = serve.status()
    if state is None:
        console.print("no virtual phones running")
        return
    table = Table(title=f"virtual phones (pid {state.pid}, adb server :{state.adb_port})")
    for column in ("serial", "model", "state", "file system"):
        table.add_column(column)
    for phone in state.phones:
        table.add_row(phone.serial, phone.model, seen.get(phone.serial, "?"), phone.root)
    console.print(table)


@sim_app.command("down")
def down() -> None:
    """Stop the phones `farm sim up` started and `adb disconnect` them."""
    from farm.sim import serve

    state = serve.down()
    if state is None:
        console.print("no virtual phones running")
        return
    console.print(f"stopped {len(state.phones)} virtual phone(s): " + " ".join(p.serial for p in state.phones))


def register(app: typer.Typer) -> None:
    """Add the `sim` sub-app to the root app."""
    app.add_typer(sim_app, name="sim")
