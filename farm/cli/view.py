"""`farm view`: serve the local viewer of runs, reports and trajectories on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import typer

from farm.view.server import DEFAULT_HOST, DEFAULT_PORT


def view(
    runs_dir: Path = typer.Option(Path("runs"), "--runs-dir", metavar="DIR", help="Where run directories are."),
    port: int = typer.Option(DEFAULT_PORT, "--port", metavar="N", help="Port on 127.0.0.1 (0 = any free port)."),
    host: str = typer.Option(DEFAULT_HOST, "--host", metavar="ADDRESS",
                             help="Loopback address to listen on; any other is refused."),
    open_browser: bool = typer.Option(False, "--open", help="Open the viewer in the default browser."),
) -> None:
    """Browse runs, their reports and each unit's steps (screenshots, screens, calls, checks) in a browser.

    Read-only and offline; serves this machine only. Ctrl-C stops it.
    """
    from farm.cli.paths import check_input_dir
    from farm.view.server import ViewServer, check_host, check_port

    # The address first: a refused --host is refused whatever else is wrong.
    check_host(host)
    check_port(port)
    check_input_dir(runs_dir, "--runs-dir", hint="pass the directory that holds your runs (default runs/)")
    server = ViewServer(runs_dir, host=host, port=port).start()
    print(f"farm view: {server.url} (runs in {runs_dir}; Ctrl-C to stop)", flush=True)
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
