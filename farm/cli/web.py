"""`farm web …`: the local task site, the paired browser-backend runner, its report and a probe."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape

from farm.cli import agent_flags as af

if TYPE_CHECKING:
    from farm.cli.paths import DirSetting
    from web_bench.paired.results import WebRun

web_app = typer.Typer(
    name="web",
    help="Deterministic 127.0.0.1 task site and the paired playwright / extension / android-chrome benchmark.",
    no_args_is_help=True,
)
console = Console(highlight=False, soft_wrap=True)


def _default_backends(virtual_phone: bool) -> str:
    # --virtual-phone asks for android-chrome; without it, seed 001's pair.
    return "playwright,android-chrome" if virtual_phone else ""


@web_app.command("serve")
def serve(port: int = typer.Option(8765, "--port", metavar="PORT",
                                   help="Port on 127.0.0.1 (0 = any free port).")) -> None:
    """Serve the task site on 127.0.0.1 until interrupted."""
    from farm.errors import FarmError
    from web_bench.paired.site.server import SiteServer

    if not 0 <= port <= 65535:
        raise FarmError(f"--port: {port} is not a TCP port", hint="pass 0…65535 (0 = any free port)")
    server = SiteServer(port)
    server.start()
    console.print(f"task site on {server.base_url} (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        server.stop()


@web_app.command("run")
def run(
    ctx: typer.Context,
    tasks: str = typer.Option("", "--tasks", metavar="NAMES",
                              help="Web task names, comma-separated (default: all six)."),
    seeds: str = typer.Option("1-5", "--seeds", metavar="SEEDS", help="Seeds, e.g. 1-5 or 1,4,9."),
    trials: int = typer.Option(1, "--trials", metavar="N", help="Trials per (task, seed), 1 or more."),
    backends: str = typer.Option("", "--backends", metavar="NAMES", show_default=False,
                                 help="Backends to compare, comma-separated: playwright, extension, android-chrome "
                                      "(default playwright,extension; playwright,android-chrome with "
                                      "--virtual-phone)."),
    timeout_ms: int = typer.Option(120000, "--timeout-ms", metavar="MS", help="Time limit per run, 1 to 86400000 ms."),
    policy: str = typer.Option("model", "--policy", metavar="model|scripted", help="A model, or no model."),
    provider: str | None = typer.Option(None, "--provider", metavar="openai|anthropic",
                                        help="The model's API (else FARM_LLM_PROVIDER)."),
    model: str | None = typer.Option(None, "--model", metavar="NAME", help="Model name (else FARM_LLM_MODEL)."),
    reasoning_effort: str | None = typer.Option(None, "--reasoning-effort", metavar="LEVEL", help="Reasoning effort."),
    out: Path | None = typer.Option(None, "--out", metavar="FILE",
                                    help="New JSONL file (default <runs dir>/<run>/web/results.jsonl)."),
    output_alias: Path | None = typer.Option(None, "--output", metavar="FILE", hidden=True, help="Old name of --out."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the run matrix and exit."),
    smoke: bool = typer.Option(False, "--smoke", help="One seed of every task."),
    run_name: str | None = typer.Option(None, "--run", metavar="RUN", help="Run id (joins <runs dir>/<run>/ "
                                                                            "when it exists)."),
    run_id_alias: str | None = typer.Option(None, "--run-id", metavar="RUN", hidden=True, help="Old name of --run."),
    runs_dir: af.RunsDir = None,
    config: af.Config = None,
    device: str | None = typer.Option(None, "--device", metavar="SERIAL",
                                      help="Phone for android-chrome (default: the only one)."),
    serial_alias: str | None = typer.Option(None, "--serial", metavar="SERIAL", hidden=True,
                                            help="Old name of --device."),
    virtual_phone: bool = typer.Option(
        False, "--virtual-phone", help="android-chrome on a virtual phone backed by a local Chromium (simulated)."
    ),
    chromium: str | None = typer.Option(None, "--chromium", metavar="FILE",
                                        help="Chromium executable (default /usr/bin/chromium)."),
    resume: bool = typer.Option(False, "--resume",
                                help="Continue the stopped run --run RUN with its stored plan: the runs never "
                                     "started or ended by an infrastructure error run again."),
) -> None:
    """Run tasks × seeds × trials on every backend, pair by pair; append one JSON line per run, then rebuild the
    run's report (runs/<run>/report.*), which counts them beside the run's other lanes."""
    from farm.cli.aliases import either
    from farm.cli.current_report import print_current_report
    from farm.cli.paths import check_output_dir, runs_dir_setting
    from farm.errors import FarmError
    from farm.names import check_name
    from web_bench.paired.lane import ModelChoice, check_timeout_ms, default_run_id, run_lane
    from web_bench.paired.matrix import parse_backends, parse_seeds, parse_tasks, plan

    output, out_flag = either(out, output_alias, "--out", "--output")
    run_id, run_flag = either(run_name, run_id_alias, "--run", "--run-id")
    serial, _ = either(device, serial_alias, "--device", "--serial")
    if resume:
        given = {name for name in _PLAN_FLAGS if _given(ctx, name)}
        _resume(
            run_id, run_flag, given=given, tasks=tasks, seeds=seeds, trials=trials, backends=backends,
            timeout_ms=timeout_ms, policy=policy, choice=(provider, model, reasoning_effort), output=output,
            out_flag=out_flag, smoke=smoke, virtual_phone=virtual_phone, dry_run=dry_run, runs_dir=runs_dir,
            config=config, serial=serial, chromium=chromium,
        )
        return
    # Every value is checked here, before a dry run prints a plan it could not run.
    if policy not in ("model", "scripted"):
        raise FarmError(f"--policy: unknown policy {policy[:40]!r}", hint="use model or scripted")
    if trials < 1:
        raise FarmError(f"--trials: must be at least 1, got {trials}", hint="pass --trials 1 or more")
    check_timeout_ms(timeout_ms)
    if run_id is not None:
        check_name(run_id, run_flag)
    task_list = parse_tasks(tasks)
    seed_list = parse_seeds(seeds)[:1] if smoke else parse_seeds(seeds)
    backend_list = parse_backends(backends or _default_backends(virtual_phone))
    if "android-chrome" in backend_list:
        from farm.android.devices import local_port

        local_port()  # adbutils' own import fails on a bad ANDROID_ADB_SERVER_PORT, with a traceback
    matrix = plan(task_list, seed_list, 1 if smoke else trials, backend_list)
    if dry_run:
        from farm.cli.tables import print_table

        print_table(("#", "pair", "backend", "order"),
                    [[str(n), p.pair_id, p.backend, str(p.order_in_pair)] for n, p in enumerate(matrix, start=1)])
        console.print(f"{len(matrix)} runs")
        return
    rid = run_id or default_run_id()
    # Before the site, browsers or phone start: a directory that cannot be made would fail only at the first
    # write, after the run directory exists.
    found = runs_dir_setting(runs_dir, config)
    root = check_output_dir(found.value, found.what())
    results_dir = output.parent if output is not None else root / rid / "web"
    check_output_dir(results_dir, out_flag if output is not None else found.what())

    results, report = run_lane(
        matrix, run_id=rid, runs_dir=root, output=output, policy_kind="model" if policy == "model" else "scripted",
        choice=ModelChoice(provider=provider, model=model, reasoning_effort=reasoning_effort),
        timeout_ms=timeout_ms, chromium=chromium, serial=serial, virtual_phone=virtual_phone, on_run=_show,
        smoke=smoke, resume_hint=_resume_hint(rid, found, config, serial, chromium),
    )
    console.print(f"results: {results}\nreport:  {report}", markup=False)
    print_current_report(root / rid)


def _show(run: WebRun) -> None:
    why = escape(run.error or run.validation.detail)
    mark = "[green]ok[/]" if run.success else f"[red]FAIL[/] {run.status} {why}"
    console.print(f"{run.pair_id:<28} {run.backend:<15} {run.timings.completion_ms:>9.0f} ms  {mark}")


_PLAN_FLAGS = ("tasks", "seeds", "trials", "backends", "timeout_ms", "policy", "provider", "model",
               "reasoning_effort", "smoke", "virtual_phone", "out", "output_alias")
"""The parameters that make a run's plan: with --resume each must be left out or agree with the stored plan."""


def _given(ctx: typer.Context, name: str) -> bool:
    # By name: typer ships its own copy of click, whose ParameterSource is not click's.
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def _resume_hint(rid: str, found: DirSetting, config: Path | None, serial: str | None, chromium: str | None) -> str:
    """The command that continues run `rid` from here: the runs directory and machine settings as given now."""
    words = ["farm", "web", "run", "--run", rid, "--resume"]
    if found.source == "flag":
        words += ["--runs-dir", str(found.value)]
    elif found.source == "farm.yaml" and config is not None:
        words += ["--config", str(config)]
    for flag, value in (("--device", serial), ("--chromium", chromium)):
        if value is not None:
            words += [flag, value]
    return shlex.join(words)


def _resume(
    run_id: str | None, run_flag: str, *, given: set[str], tasks: str, seeds: str, trials: int, backends: str,
    timeout_ms: int, policy: str, choice: tuple[str | None, str | None, str | None], output: Path | None,
    out_flag: str, smoke: bool, virtual_phone: bool, dry_run: bool, runs_dir: Path | None, config: Path | None,
    serial: str | None, chromium: str | None,
) -> None:
    """`farm web run --run RUN --resume`: the stored plan's runs still to go, into the same results file."""
    from farm.cli.current_report import print_current_report
    from farm.cli.paths import check_output_dir, runs_dir_setting
    from farm.errors import FarmError
    from farm.names import check_name
    from web_bench.paired.lane import find_resumable, resume_lane
    from web_bench.paired.matrix import parse_backends, parse_seeds, parse_tasks

    if run_id is None:
        raise FarmError("--resume: no run named", hint="pass the run to continue: farm web run --run RUN --resume")
    check_name(run_id, run_flag)
    found = runs_dir_setting(runs_dir, config)
    resumable = find_resumable(found.value, run_id)
    stored = resumable.plan
    # Each plan flag given again must say what the run started with: one run, one plan.
    vp = virtual_phone if "virtual_phone" in given else stored.virtual_phone
    checks: list[tuple[str, str, Callable[[], object], object, str]] = [
        ("tasks", "--tasks", lambda: parse_tasks(tasks), stored.tasks, ",".join(stored.tasks)),
        ("smoke", "--smoke", lambda: smoke, stored.smoke, "--smoke" if stored.smoke else "no --smoke"),
        ("seeds", "--seeds", lambda: parse_seeds(seeds)[:1] if stored.smoke else parse_seeds(seeds),
         parse_seeds(stored.seeds), stored.seeds),
        ("trials", "--trials", lambda: 1 if stored.smoke else trials, stored.trials, str(stored.trials)),
        ("backends", "--backends", lambda: parse_backends(backends or _default_backends(vp)), stored.backends,
         ",".join(stored.backends)),
        ("virtual_phone", "--virtual-phone", lambda: virtual_phone, stored.virtual_phone,
         "--virtual-phone" if stored.virtual_phone else "no --virtual-phone"),
        ("timeout_ms", "--timeout-ms", lambda: timeout_ms, stored.timeout_ms, str(stored.timeout_ms)),
        ("policy", "--policy", lambda: policy, stored.policy, stored.policy),
        ("provider", "--provider", lambda: choice[0], stored.provider, stored.provider or "no --provider"),
        ("model", "--model", lambda: choice[1], stored.model, stored.model or "no --model"),
        ("reasoning_effort", "--reasoning-effort", lambda: choice[2], stored.reasoning_effort,
         stored.reasoning_effort or "no --reasoning-effort"),
        ("out", out_flag, lambda: output and output.resolve(), resumable.results.resolve(), str(resumable.results)),
        ("output_alias", out_flag, lambda: output and output.resolve(), resumable.results.resolve(),
         str(resumable.results)),
    ]
    for name, flag, value, want, shown in checks:
        if name in given and value() != want:
            raise FarmError(f"--resume: {flag} differs from run {run_id}'s stored plan ({shown})",
                            hint=f"drop {flag}: farm web run --run {run_id} --resume runs the plan it started with")
    left, total = len(resumable.todo), resumable.total
    if not left:
        console.print(f"web run {run_id}: all {total} planned runs done; nothing to resume", markup=False)
        return
    if dry_run:
        from farm.cli.tables import print_table

        print_table(("#", "pair", "backend", "order"),
                    [[str(n), p.pair_id, p.backend, str(p.order_in_pair)]
                     for n, p in enumerate(resumable.todo, start=1)])
        console.print(f"{left} of {total} runs to go", markup=False)
        return
    if "android-chrome" in stored.backends:
        from farm.android.devices import local_port

        local_port()  # adbutils' own import fails on a bad ANDROID_ADB_SERVER_PORT, with a traceback
    check_output_dir(resumable.results.parent, f"run {run_id}'s results directory")
    console.print(f"resuming web run {run_id}: {left} of {total} runs to go", markup=False)
    results, report = resume_lane(resumable, chromium=chromium, serial=serial, on_run=_show,
                                  resume_hint=_resume_hint(run_id, found, config, serial, chromium))
    console.print(f"results: {results}\nreport:  {report}", markup=False)
    print_current_report(resumable.store.run_dir)


@web_app.command("report")
def report(
    file: Path | None = typer.Argument(None, metavar="FILE", show_default=False,
                                       help="Results JSONL (default: the newest under <runs dir>/*/web/)."),
    as_json: bool = typer.Option(False, "--json", help="Print the numbers as one JSON object."),
    runs_dir: af.RunsDir = None,
    config: af.Config = None,
) -> None:
    """Report a results file: success first, then latency, pairs, penalty, intervals, tokens."""
    from farm.cli.paths import runs_dir_setting
    from farm.errors import FarmError
    from web_bench.paired.report import report_file, to_markdown

    if file is None:
        root = runs_dir_setting(runs_dir, config)
        found = sorted((p for p in root.value.glob("*/web/*.jsonl") if p.is_file()), key=lambda p: p.stat().st_mtime)
        if not found:
            raise FarmError(f"{root.value}: no web results found ({root.what()})", hint="pass the JSONL file")
        file = found[-1]
    rep = report_file(file)
    # On stderr, so `--json` output stays one JSON object; the report itself lists every line.
    if rep.rejected_lines:
        typer.echo(f"warning: {file}: {len(rep.rejected_lines)} line(s) rejected, first: {rep.rejected_lines[0]}",
                   err=True)
    if rep.duplicate_runs:
        typer.echo(f"warning: {file}: {len(rep.duplicate_runs)} run(s) written more than once, each counted once",
                   err=True)
    if as_json:
        print(rep.model_dump_json(by_alias=True, indent=2))
    else:
        print(to_markdown(rep), end="")


@web_app.command("probe")
def probe(
    backends: str = typer.Option("", "--backends", metavar="NAMES", show_default=False,
                                 help="Backends to probe, comma-separated (default playwright,extension; "
                                      "playwright,android-chrome with --virtual-phone)."),
    device: str | None = typer.Option(None, "--device", metavar="SERIAL", help="Phone for android-chrome."),
    serial_alias: str | None = typer.Option(None, "--serial", metavar="SERIAL", hidden=True,
                                            help="Old name of --device."),
    virtual_phone: bool = typer.Option(False, "--virtual-phone", help="android-chrome on a virtual phone."),
    chromium: str | None = typer.Option(None, "--chromium", metavar="FILE", help="Chromium executable."),
) -> None:
    """No model: each backend navigates, snapshots and clicks on the task site."""
    from farm.cli.aliases import either
    from farm.errors import FarmError
    from web_bench.paired.backend_probe import probe as run_probe
    from web_bench.paired.matrix import parse_backends

    serial, _ = either(device, serial_alias, "--device", "--serial")
    chosen = parse_backends(backends or _default_backends(virtual_phone))
    results = run_probe(chosen, chromium=chromium, serial=serial, virtual_phone=virtual_phone)
    for r in results:
        mark = "[green]OK[/]" if r.ok else "[red]FAIL[/]"
        console.print(f"{r.backend:<15} {mark} {r.elapsed_ms:>8.0f} ms  {escape(r.detail)}")
    failed = [r.backend for r in results if not r.ok]
    if failed:
        raise FarmError(f"probe failed on {', '.join(failed)}", hint="see the lines above")


def register(app: typer.Typer) -> None:
    """Add the `web` sub-app to the root app."""
    app.add_typer(web_app, name="web")
