"""`farm webvoyager …`: the seed-002 WebVoyager runner (126 tasks, LLM judge), its data, backfill,
judge reset and report."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from farm.cli import agent_flags as af

webvoyager_app = typer.Typer(
    name="webvoyager",
    help="WebVoyager 126 tasks (Allrecipes, Apple, Amazon): per-task Chromium, LLM judge, resume, backfill, "
         "cost accounting. Fetch the data first: farm webvoyager data --fetch.",
    no_args_is_help=True,
)
console = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

_DATA_HELP = "Directory of the verified data files (default $FARM_WEBVOYAGER_DATA or ~/.cache/agent-farm/webvoyager)."


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def _run_dir(runs_dir: Path | None, config: Path | None, run: str) -> Path:
    """The directory of `--run RUN` under `--runs-dir`, else farm.yaml's `runs_dir`, else runs."""
    from farm.cli.paths import runs_dir_setting
    from farm.names import check_name

    check_name(run, "--run")
    return runs_dir_setting(runs_dir, config).value / run


@webvoyager_app.command("run")
def run(
    run_name: str | None = typer.Option(None, "--run", metavar="RUN",
                                        help="Run id: the run lives in <runs dir>/RUN/ (default wv-<UTC time>)."),
    runs_dir: af.RunsDir = None,
    config: af.Config = None,
    data_dir: Path | None = typer.Option(None, "--data", metavar="DIR", help=_DATA_HELP),
    ids: str | None = typer.Option(None, "--ids", metavar="IDS",
                                   help="Task ids, comma-separated (kept in data order)."),
    count: int | None = typer.Option(None, "--count", metavar="N", help="The first N tasks of the set."),
    concurrency: int = typer.Option(1, "--concurrency", metavar="N",
                                    help="Tasks at once, 1–8 (each its own Chromium)."),
    timeout_ms: int | None = typer.Option(None, "--timeout-ms", metavar="MS", show_default=False,
                                          help="Agent time limit per task (default 600000)."),
    timeout_alias: int | None = typer.Option(None, "--timeout", metavar="MS", hidden=True,
                                             help="The seed's name of --timeout-ms."),
    max_rounds: int = typer.Option(50, "--max-rounds", metavar="N", help="Model rounds per task."),
    reasoning_effort: str | None = typer.Option(
        None, "--reasoning-effort", metavar="LEVEL",
        help="none|minimal|low|medium|high|xhigh|max (else EVAL_REASONING_EFFORT)."),
    headed: bool = typer.Option(True, "--headed/--headless", help="Visible browser windows (the formal condition)."),
    judge: str = typer.Option("reference", "--judge", metavar="reference|evidence|none",
                              help="reference: the pinned upstream prompt; evidence: cites browser observations; "
                                   "none: judge later with --judge-only."),
    preflight_timeout_ms: int = typer.Option(60000, "--preflight-timeout", metavar="MS",
                                             help="Longest wait for the service check before the run."),
    resume: bool = typer.Option(False, "--resume",
                                help="Continue the run in place: quota-interrupted tasks first, then tasks that "
                                     "never ran."),
    retry_from: Path | None = typer.Option(None, "--retry-from", metavar="DIR",
                                           help="Recover an older run (only read) into the new --run."),
    rerun_ids: str | None = typer.Option(None, "--rerun-ids", metavar="IDS",
                                         help="Replace these tasks' results with a new attempt (owner's request)."),
    new_rerun: bool = typer.Option(False, "--new-rerun", help="With --rerun-ids: another independent attempt."),
    judge_only: bool = typer.Option(False, "--judge-only", help="Only judge saved results without a verdict."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan; no credential, model or browser."),
    record_har: Path | None = typer.Option(None, "--record-har", metavar="DIR",
                                           help="Save each task's network traffic as DIR/TASK_ID.har."),
    replay_har: Path | None = typer.Option(None, "--replay-har", metavar="DIR",
                                           help="Serve pages from DIR/TASK_ID.har; nothing leaves the machine."),
    stand_in: Path | None = typer.Option(None, "--stand-in", metavar="DIR", hidden=True,
                                         help="Serve the three sites from local stand-in pages."),
    chromium: str | None = typer.Option(None, "--chromium", metavar="FILE", help="Chromium executable."),
) -> None:
    """Run the WebVoyager tasks: each in its own Chromium, scored by an independent LLM judge; then rebuild the
    run's report (runs/<run>/report.*), which counts them beside the run's other lanes."""
    from farm.cli.aliases import either
    from farm.cli.current_report import print_current_report
    from farm.cli.paths import check_output_dir, runs_dir_setting
    from farm.errors import FarmError
    from farm.names import check_name
    from web_bench.webvoyager.lane import run_webvoyager
    from web_bench.webvoyager.options import DEFAULT_TIMEOUT_MS, RunOptions

    if judge not in ("reference", "evidence", "none"):
        raise FarmError(f"--judge: unknown judge {judge[:40]!r}", hint="use reference, evidence or none")
    if not 1 <= concurrency <= 8:
        raise FarmError(f"--concurrency: must be 1…8, got {concurrency}", hint="pass --concurrency 1 to 8")
    limit, _ = either(timeout_ms, timeout_alias, "--timeout-ms", "--timeout")
    run_id = run_name or "wv-" + dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    check_name(run_id, "--run")
    found = runs_dir_setting(runs_dir, config)
    if not dry_run:
        check_output_dir(found.value, found.what())
    try:
        opts = RunOptions(
            run_id=run_id, runs_dir=found.value, data_dir=data_dir, ids=_split(ids), count=count,
            concurrency=concurrency, timeout_ms=DEFAULT_TIMEOUT_MS if limit is None else limit, max_rounds=max_rounds,
            reasoning_effort=reasoning_effort,
            headed=headed, judge=judge, preflight_timeout_ms=preflight_timeout_ms,
            resume=resume, retry_from=retry_from, rerun_ids=_split(rerun_ids) or [], new_rerun=new_rerun,
            judge_only=judge_only, dry_run=dry_run, record_har=record_har, replay_har=replay_har,
            stand_in=stand_in, chromium=chromium,
        )
    except ValueError as exc:
        from pydantic import ValidationError

        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        where = "--" + str(first["loc"][0]).replace("_", "-") if first else "options"
        raise FarmError(f"{where}: {first['msg'] if first else exc}", hint="see farm webvoyager run --help") from None
    outcome = run_webvoyager(opts, on_progress=lambda line: err.print(escape(line)))
    for line in outcome.lines:
        console.print(escape(line))
    if outcome.report is not None:
        console.print(f"report: {outcome.report}", markup=False)
        print_current_report(outcome.root.parent)
    raise typer.Exit(outcome.exit_status)


@webvoyager_app.command("data")
def data(
    data_dir: Path | None = typer.Option(None, "--data", metavar="DIR", help=_DATA_HELP),
    fetch: bool = typer.Option(False, "--fetch", help="Download the files from their pinned upstream commits."),
    from_dir: Path | None = typer.Option(None, "--from", metavar="DIR", help="Take the files from a local copy."),
    base_url: str | None = typer.Option(None, "--base-url", metavar="URL", hidden=True,
                                        help="Fetch from this mirror instead of raw GitHub (loopback or https)."),
) -> None:
    """Fetch or copy the WebVoyager data and verify every SHA-256; without a switch, show what is there."""
    from farm.cli.tables import print_table
    from farm.errors import FarmError
    from web_bench.webvoyager import data_files as wv_data

    dest = data_dir or wv_data.default_data_dir()
    if fetch and from_dir is not None:
        raise FarmError("--fetch and --from cannot go together", hint="download, or copy from a local directory")
    if fetch:
        wv_data.fetch(dest, base_url=base_url, progress=lambda line: err.print(escape(line)))
    elif from_dir is not None:
        wv_data.copy_from(from_dir, dest)
    rows = [[s.name, "yes" if s.present else "no", "ok" if s.sha_ok else ("—" if not s.present else "MISMATCH")]
            for s in wv_data.status(dest)]
    print_table(("file", "present", "sha256"), rows)
    console.print(f"data: {dest}")
    if not all(s.sha_ok for s in wv_data.status(dest)):
        from farm.exits import EXIT_BAD_INPUT

        raise typer.Exit(EXIT_BAD_INPUT)


@webvoyager_app.command("backfill")
def backfill(
    run_name: str = typer.Option(..., "--run", metavar="RUN", help="The older run to extend."),
    runs_dir: af.RunsDir = None,
    config: af.Config = None,
    data_dir: Path | None = typer.Option(None, "--data", metavar="DIR", help=_DATA_HELP),
    ids: str | None = typer.Option(None, "--ids", metavar="IDS", hidden=True,
                                   help="Target selection (default: all 126 tasks)."),
    count: int | None = typer.Option(None, "--count", metavar="N", help="Target selection: the first N tasks."),
    execute: bool = typer.Option(False, "--execute", help="Apply the plan (without it: a read-only audit)."),
) -> None:
    """Audit (read-only) or extend an older run to a bigger selection; finished tasks are protected."""
    from web_bench.webvoyager import backfill as wv_backfill
    from web_bench.webvoyager import dataset
    from web_bench.webvoyager.data_files import default_data_dir
    from web_bench.webvoyager.run import existing_root

    root = existing_root(_run_dir(runs_dir, config, run_name))
    target = dataset.select(dataset.load_tasks(data_dir or default_data_dir()), _split(ids), count)
    plan = wv_backfill.audit(root, target)
    console.print(f"protected: {len(plan.protected_task_ids)}  missing: {len(plan.missing_task_ids)}")
    for task_id in plan.pending:
        console.print(f"pending  {task_id}")
    if execute:
        wv_backfill.execute(root, target, plan)
        console.print(f"extended; run the pending tasks with: farm webvoyager run --run {run_name} --resume")
    else:
        console.print("read-only audit; apply with --execute")


@webvoyager_app.command("reset-judge")
def reset_judge(
    run_name: str = typer.Option(..., "--run", metavar="RUN", help="The run whose verdicts to clear."),
    runs_dir: af.RunsDir = None,
    config: af.Config = None,
    execute: bool = typer.Option(False, "--execute", help="Delete (without it: list what would go)."),
) -> None:
    """Clear every judge verdict and judge log (dry run first); agent results, traces and screenshots stay."""
    from web_bench.webvoyager import reset_judge as wv_reset
    from web_bench.webvoyager.run import existing_root

    root = existing_root(_run_dir(runs_dir, config, run_name))
    plan = wv_reset.plan(root)
    for line in plan.lines():
        console.print(escape(line))
    if execute:
        wv_reset.execute(root, plan)
        console.print(f"verdicts cleared; judge again with: farm webvoyager run --run {run_name} --judge-only")
    else:
        console.print("dry run; apply with --execute")


@webvoyager_app.command("report")
def report(
    run_name: str = typer.Option(..., "--run", metavar="RUN", help="The run to report."),
    runs_dir: af.RunsDir = None,
    config: af.Config = None,
    data_dir: Path | None = typer.Option(None, "--data", metavar="DIR", help=_DATA_HELP),
) -> None:
    """Rebuild summary.json, report.md and task-metrics from the run's result revisions, and the run's report
    (runs/<run>/report.*)."""
    from farm.cli.current_report import print_current_report
    from web_bench.webvoyager.lane import rebuild_report
    from web_bench.webvoyager.run import existing_root

    root = existing_root(_run_dir(runs_dir, config, run_name))
    path = rebuild_report(root, data_dir)
    console.print(f"report: {path}", markup=False)
    print_current_report(root.parent)


def register(app: typer.Typer) -> None:
    """Add `farm webvoyager` to the CLI."""
    app.add_typer(webvoyager_app, name="webvoyager")
