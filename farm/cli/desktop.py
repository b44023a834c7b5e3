"""`farm desktop …`: the desktop-v1 ledger of human-executed runs (it never drives a desktop)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from farm.cli import agent_flags as af

desktop_app = typer.Typer(
    name="desktop",
    help=(
        "Plan, record and report human-executed desktop-v1 runs. Nothing here operates a desktop.\n\n"
        "Typical use: `farm desktop init config.json batch-000.json`, run a slot by hand, "
        "`farm desktop record batch-000.json calculator-add/1 result.json batch-001.json`, "
        "`farm desktop report batch-001.json`."
    ),
    no_args_is_help=True,
)
_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False, soft_wrap=True)


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        _err.print(f"warning: {warning}", markup=False)


@desktop_app.command("tasks")
def tasks_cmd() -> None:
    """List the desktop-v1 tasks with their setup, verification and expected result."""
    from farm.desktop.tasks import SUITE, TASKS

    _out.print(f"suite {SUITE}", markup=False)
    for task in TASKS:
        _out.print(f"\n{task.id} ({task.app})\n  goal: {task.goal}\n  setup: {task.setup}", markup=False)
        _out.print(f"  verify: {task.verify}\n  expected: {task.expected!r}", markup=False)


@desktop_app.command("init")
def init_cmd(
    config: Path = typer.Argument(..., metavar="CONFIG", help="config.json of the batch (mode 600, outside git)."),
    out: Path = typer.Argument(..., metavar="OUT",
                               help="New batch file to write, e.g. batch-000.json (never overwritten)."),
) -> None:
    """Validate CONFIG and write every task × repetition slot to OUT as pending, and start its ledger index
    (<OUT stem>.ledger.jsonl next to OUT)."""
    from farm.desktop.batch import init_batch

    batch, warnings = init_batch(config, out)
    _warn(warnings)
    _out.print(
        f"wrote {out}: {len(batch.slots)} pending slots ({batch.config.mode}/{batch.config.execution}, "
        f"{batch.config.repetitions} per task)",
        markup=False,
    )


@desktop_app.command("record")
def record_cmd(
    batch: Path = typer.Argument(..., metavar="BATCH", help="Latest batch file."),
    slot: str = typer.Argument(..., metavar="SLOT", help="Slot id <task>/<repetition>, e.g. calculator-add/1."),
    result: Path = typer.Argument(..., metavar="RESULT", help="result.json of the slot."),
    out: Path = typer.Argument(..., metavar="OUT", help="New batch file to write (never overwritten)."),
) -> None:
    """Record RESULT for a pending SLOT of BATCH into a new version OUT, linked by hash and listed in the ledger
    index. BATCH must be the latest version the index lists; OUT may be in any folder."""
    from farm.desktop.batch import record_result

    new, warnings = record_result(batch, slot, result, out)
    _warn(warnings)
    pending = sum(1 for s in new.slots if s.status == "pending")
    _out.print(f"wrote {out}: {slot} = {new.slot(slot).status}; {pending} slot(s) still pending", markup=False)


@desktop_app.command("verify")
def verify_cmd(
    batch: Path = typer.Argument(..., metavar="BATCH", help="Batch file whose version chain to check."),
) -> None:
    """Walk BATCH's version chain back to the plan and check every hash and every step against the ledger index."""
    from farm.desktop.chain import check_chain

    check = check_chain(batch)
    for link in check.links:
        _out.print(
            f"{link.sequence:>4}  {link.sha256[:16]}  {link.recordedSlot or '(plan)'}  {link.path}", markup=False
        )
    _out.print(f"chain ok: {len(check.links)} version(s)", markup=False)
    if len(check.entries) > len(check.links):
        # Still a valid version, but a reviewer comparing results must know it is not the whole record so far.
        _err.print(
            f"note: {batch} is not the latest version; the ledger index {check.ledger} lists "
            f"{len(check.entries)} version(s), the latest {check.latest()}",
            markup=False,
        )


@desktop_app.command("report")
def report_cmd(
    batches: list[Path] = typer.Argument(..., help="Exactly one batch file (its latest version)."),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON report instead of markdown."),
    html: Path | None = typer.Option(
        None, "--html", metavar="OUT", help="Also write the report as an HTML page to OUT (a new file)."
    ),
) -> None:
    """Summarise one batch: overall and per task (interim until every slot is recorded)."""
    from farm.desktop.report import build_report, report_json, report_markdown

    report = build_report(batches)
    if html is not None:
        from farm.cli.paths import check_output_dir
        from farm.desktop.report_section import batch_page_html
        from farm.fsutil import create_new_text

        check_output_dir(html.parent, "--html")
        create_new_text(html, batch_page_html(report), what="HTML report")
        typer.echo(f"wrote {html}", err=True)
    text = report_json(report) if as_json else report_markdown(report)
    # Plain echo: the JSON must reach stdout byte for byte, untouched by rich.
    typer.echo(text, nl=False)


@desktop_app.command("attach")
def attach_cmd(
    run: str = typer.Argument(..., metavar="RUN", help="Run id (<runs dir>/<RUN>/ is created if missing)."),
    batch: Path = typer.Argument(..., metavar="BATCH", help="Batch file to add to the run."),
    runs_dir: af.RunsDir = None,
    config: af.Config = None,
) -> None:
    """Add BATCH to the run manifest, write its reports into runs/<RUN>/desktop/ and rebuild the run's report
    (runs/<RUN>/report.*), which shows the batch beside the run's other lanes."""
    from farm.cli.current_report import print_current_report
    from farm.desktop.attach import attach_batch

    root = af.check_runs_dir(runs_dir, config)
    command = ["farm", "desktop", "attach", run, str(batch), "--runs-dir", str(root)]
    run_dir, outputs = attach_batch(root, run, batch, command=command)
    for rel in outputs:
        _out.print(f"wrote {run_dir / rel}", markup=False)
    print_current_report(run_dir)


def register(app: typer.Typer) -> None:
    """Add the `desktop` sub-app to the root app."""
    app.add_typer(desktop_app, name="desktop")
