"""`farm view`: serve the local viewer of runs, reports and trajectories on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import typer

from farm.view.server import DEFAULT_HOST, DEFAULT_PORT


def runs_root(runs_dir: Path | None, config: Path | None) -> Path:
    """The directory `farm view` serves: `--runs-dir`, else farm.yaml's `runs_dir`, else runs/; a one-line
    FarmError naming where it came from when it is not a readable directory."""
    from farm.cli.paths import check_input_dir, runs_dir_setting

    found = runs_dir_setting(runs_dir, config)
    return check_input_dir(found.value, found.what(), hint="pass --runs-dir DIR, the directory that holds your runs")


def view(
    runs_dir: Path | None = typer.Option(None, "--runs-dir", metavar="DIR",
                                         help="Where run directories are (default farm.yaml runs_dir, else runs/)."),
    config: Path | None = typer.Option(None, "--config", metavar="FILE",
                                       help="farm.yaml (default ./farm.yaml if present)."),
    port: int = typer.Option(DEFAULT_PORT, "--port", metavar="N", help="Port on 127.0.0.1 (0 = any free port)."),
    host: str = typer.Option(DEFAULT_HOST, "--host", metavar="ADDRESS",
                             help="Loopback address to listen on; any other is refused."),
    open_browser: bool = typer.Option(False, "--open", help="Open the viewer in the default browser."),
    tasks_dir: Path | None = typer.Option(None, "--tasks-dir", metavar="DIR",
                                          help="The task set whose goals the run pages search (default farm.yaml "
                                               "tasks_dir; a goal shows only while its task file is unchanged)."),
) -> None:
    """Browse runs, their reports and each unit's steps (screenshots, screens, calls, checks) in a browser.

    Read-only and offline; serves this machine only. Ctrl-C stops it.
    """
    from farm.view.server import ViewServer, check_host, check_port

    # The address first: a refused --host is refused whatever else is wrong.
    check_host(host)
    check_port(port)
    root = runs_root(runs_dir, config)
    if tasks_dir is None:
        from farm.config import load_config

        tasks_dir = Path(load_config(config).tasks_dir)
    server = ViewServer(root, host=host, port=port, tasks_dir=tasks_dir).start()
    print(f"farm view: {server.url} (runs in {root}; Ctrl-C to stop)", flush=True)
    if open_browser:
        import webbrowser

        webbrowser.open(server.url)
    try:
        server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def register(app: typer.Typer) -> None:
    """Add this module's command to the root app."""
    app.command("view")(view)
