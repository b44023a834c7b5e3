"""`farm agent check` and `farm schema`: the agent-app contract (docs/agent-app.md) from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from farm.cli import agent_flags as af
from farm.errors import FarmError

if TYPE_CHECKING:
    from farm.android.agent_tree_check import TreeReport

agent_app = typer.Typer(
    help="The on-device agent app's contract (docs/agent-app.md): check a tree an app wrote.\n\n"
         "Example: `farm agent check runs/r1/android/SERIAL/units/calc-add.try1`",
    no_args_is_help=True,
)
console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)
SHOWN = 50
"""Violations (and, apart, warnings) printed; the rest are counted in one line."""


@agent_app.command("check")
def check(
    tree: Annotated[Path | None, typer.Argument(metavar="TREE", show_default=False, help=(
        "An eval tree an app wrote: a pulled units/<unit>.tryN/, or any folder with scores.jsonl and <id>/run/."
    ))] = None,
    device: Annotated[str | None, typer.Option("--device", metavar="SERIAL", help=(
        "Check the phone's own eval/<run>/ instead (pulled into a temporary folder, removed after)."))] = None,
    run: Annotated[str | None, typer.Option("--run", metavar="RUN", help="Run name on the phone (with --device).")]
    = None,
    profile: af.Profile = None,
    config: af.Config = None,
) -> None:
    """Check an eval tree against the agent-app contract; one line per problem, exit 2 when any.

    Each line is `file:line:field: problem — fix`; warnings name what the reports and the viewer will lack.
    Examples: `farm agent check runs/r1/android/SERIAL/units/calc-add.try1`,
    `farm agent check --device emulator-5554 --run nightly`.
    """
    import tempfile

    from farm.android.agent_tree_check import check_device, check_tree

    if (tree is None) == (device is None):
        raise FarmError("give TREE or --device SERIAL --run RUN (one of them)",
                        hint="e.g. farm agent check runs/r1/android/SERIAL/units/calc-add.try1")
    if tree is not None:
        if run is not None:
            raise FarmError("--run goes with --device", hint="farm agent check --device SERIAL --run RUN")
        report = check_tree(tree)
    else:
        if run is None:
            raise FarmError("--device needs --run RUN (the run name on the phone)",
                            hint="farm agent check --device SERIAL --run RUN")
        # Before anything imports adbutils, whose import reads ANDROID_ADB_SERVER_PORT and fails on a bad one.
        af.check_adb_port()
        from farm.config import load_config

        with tempfile.TemporaryDirectory(prefix="farm-agent-check-") as tmp:
            report = check_device(load_config(config), serial=device or "", run=run, profile=profile,
                                  workdir=Path(tmp) / "tree")
    _print(report)


def _print(report: TreeReport) -> None:
    from farm.android.agent_contract import CONTRACT_VERSION
    from farm.exits import EXIT_BAD_INPUT

    for kept, more, prefix in ((report.problems, report.more_problems, ""),
                               (report.warnings, report.more_warnings, "warning: ")):
        for problem in kept[:SHOWN]:
            console.print(prefix + problem.text(), markup=False)
        hidden = len(kept) - SHOWN + more if len(kept) > SHOWN else more
        if hidden > 0:
            console.print(f"{prefix}… and {hidden} more", markup=False)
    warned = len(report.warnings) + report.more_warnings
    if report.violations:
        err_console.print(f"error: {report.violations} violation(s) of agent-app contract {CONTRACT_VERSION} in "
                          f"{report.root} — fix the lines listed above (docs/agent-app.md)", markup=False)
        raise typer.Exit(EXIT_BAD_INPUT)
    console.print(f"ok: {report.root} follows agent-app contract {CONTRACT_VERSION} ({report.tasks} tasks, "
                  f"{warned} warning(s))", markup=False)


def schema(
    name: Annotated[str | None, typer.Argument(metavar="NAME", show_default=False, help=(
        "bundle, score-line, metrics, step or final; none lists them."))] = None,
    write: Annotated[bool, typer.Option("--write", help="Regenerate every schema file in --out.")] = False,
    out: Annotated[Path | None, typer.Option("--out", metavar="DIR", help=(
        "Where --write puts the files (default docs/schemas/ of the source tree)."))] = None,
) -> None:
    """Print the JSON Schema of one agent-app file; list them without NAME.

    Examples: `farm schema score-line`, `farm schema` (the list), `farm schema --write` (after changing a model in
    farm/android/agent_contract.py).
    """
    from farm.android import agent_schemas as ac

    if write:
        if name is not None:
            raise FarmError("--write writes every schema: give no NAME", hint="farm schema --write")
        for path in ac.write_schemas(out or ac.default_schema_dir()):
            console.print(str(path), markup=False)
        return
    if name is None:
        from farm.cli.tables import print_table

        print_table(("name", "file", "describes"),
                    [(key, ac.schema_file(key), what) for key, (_model, what) in ac.SCHEMAS.items()],
                    title="agent-app contract schemas (farm schema NAME prints one)")
        return
    if name not in ac.SCHEMAS:
        raise FarmError(f"schema {name!r}: no such schema", hint=f"use one of {', '.join(ac.SCHEMAS)}")
    print(ac.schema_text(name), end="")


def register(app: typer.Typer) -> None:
    """Add `farm agent …` and `farm schema` to the root app."""
    app.add_typer(agent_app, name="agent")
    app.command("schema")(schema)
