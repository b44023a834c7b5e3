"""`farm run`, `farm devices`, `farm pull`, `farm instrument parse`: the android lane's commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from farm.cli import agent_flags as af
from farm.cli import selection as sel
from farm.errors import FarmError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from farm.android.adb_hosts import LastSeen
    from farm.android.devices import UnreachableServer
    from farm.sweep.sweep import SweepResult

instrument_app = typer.Typer(help="Tools for `am instrument` output.", no_args_is_help=True)


@instrument_app.command("parse")
def instrument_parse(
    file: Path = typer.Argument(..., metavar="FILE", help="A captured `am instrument -w -r` output."),
) -> None:
    """Print the parsed events of a capture as JSON lines."""
    from farm.android.instrument_parser import InstrumentParser

    try:
        data = file.read_bytes()
    except OSError as exc:
        raise FarmError(f"{file}: cannot read ({exc.strerror})") from None
    parser = InstrumentParser()
    parser.feed(data.decode("utf-8", "replace"))
    parser.close()
    for event in parser.events:
        print(json.dumps(event.as_json(), ensure_ascii=False, separators=(",", ":")))


def run(
    split: af.Split = None,
    device: af.Device = None,
    all_phones: bool = typer.Option(False, "--all-phones", help="Every healthy phone (default: the only one)."),
    all_alias: bool = typer.Option(False, "--all", hidden=True, help="Old name of --all-phones."),
    run_name: af.RunName = None,
    run_id_alias: af.RunIdAlias = None,
    resume: af.Resume = None,
    idle_timeout: float | None = typer.Option(None, "--idle-timeout", metavar="SECONDS",
                                              help="Seconds without output per task."),
    deadline: float | None = typer.Option(None, "--deadline", metavar="SECONDS",
                                          help="Seconds until no task starts (the rest are recorded unfinished)."),
    batch: int = typer.Option(1, "--batch", min=1, max=1000, metavar="N",
                              help="instrument executor: tasks per am instrument call (1: each record at once)."),
    max_tries: int = typer.Option(3, "--max-tries", min=1, max=100, metavar="N",
                                  help="Tries of a task after infrastructure failures."),
    fail_under: af.FailUnder = None,
    quiet: bool = typer.Option(False, "--quiet", help="No progress bars."),
    wait: bool = typer.Option(False, "--wait", help="A phone another run or sweep holds: wait until it is free "
                                                    "(default: refuse, naming the holder)."),
    sets: sel.SetNames = None,
    keyword: sel.Keyword = None,
    exclude: sel.Exclude = None,
    only_failed_from: sel.OnlyFailedFrom = None,
    yes: sel.Yes = False,
    profile: af.Profile = None,
    executor: af.ExecutorName = "instrument",
    allow_irreversible: af.AllowIrreversible = False,
    price_in: af.PriceIn = None,
    price_out: af.PriceOut = None,
    price_cached: af.PriceCached = None,
    on_takeover: af.OnTakeover = None,
    channel: af.Channel = None,
    flags: af.Flags = None,
    learn_skills: af.LearnSkills = False,
    memory: af.Memory = False,
    tasks_dir: af.TasksDir = None,
    runs_dir: af.RunsDir = None,
    config: af.Config = None,
    policy: af.Policy = None,
    model: af.Model = None,
    provider: af.Provider = None,
    base_url: af.BaseUrl = None,
    api_key_env: af.ApiKeyEnv = None,
    reasoning_effort: af.ReasoningEffort = None,
    screenshots: af.Screenshots = False,
    scripts_dir: af.ScriptsDir = None,
) -> None:
    """Run a split of the task set on connected phones and write the reports.

    The pool is --split (default tune; all with --only-failed-from); --set (repeatable, a union), -k,
    --exclude and --only-failed-from choose within it. Each task's record is written the moment it is
    scored; a task whose phone failed for an infrastructure reason is tried again (--max-tries). Ctrl-C or
    SIGTERM starts no new task, lets running ones finish, writes the reports and says how to continue
    (--resume RUN). The run leases its phones: one that a sweep or another run holds is refused with the
    holder named, or waited for with --wait (`farm devices` shows every lease).

    Exit status: 0 every task finished and passed (or the rate reached --fail-under); 1 some failed;
    3 tasks were left unfinished (stopped, phone lost, deadline); 4 the pass rate is below --fail-under;
    5 infrastructure errors after every try; 2 bad input, no healthy phone, or the phone is leased.
    """
    import sys

    from farm.android.options import check_seconds
    from farm.cli.aliases import either
    from farm.names import check_name

    run_id, run_flag = either(run_name, run_id_alias, "--run", "--run-id")
    if resume and run_id:
        raise FarmError("--resume RUN continues that run", hint=f"leave out {run_flag}")
    if resume and (sets or keyword is not None or exclude or only_failed_from):
        raise FarmError("--resume RUN continues that run with its own selection",
                        hint="leave out --set, -k, --exclude and --only-failed-from")
    for value, what in ((run_id, run_flag), (resume, "--resume")):
        if value is not None:
            check_name(value, what)
    check_seconds(idle_timeout, "--idle-timeout")
    check_seconds(deadline, "--deadline")
    af.check_fraction(fail_under, "--fail-under")
    pool = split or ("all" if only_failed_from else "tune")
    agent = af.agent_options(
        split=pool, set_prefix=None, allow_irreversible=allow_irreversible, price_in=price_in,
        price_out=price_out, price_cached=price_cached, on_takeover=on_takeover, channel=channel, flags=flags,
        learn_skills=learn_skills, memory=memory,
    )
    host = af.host_settings(executor, policy=policy, model=model, provider=provider, base_url=base_url,
                            api_key_env=api_key_env, reasoning_effort=reasoning_effort, screenshots=screenshots,
                            scripts_dir=scripts_dir)
    af.check_adb_port()
    af.check_runs_dir(runs_dir, config)
    chosen = sel.for_run(agent, sets=sets, keyword=keyword, exclude=exclude, only_failed_from=only_failed_from,
                         runs_dir=runs_dir, tasks_dir=tasks_dir, config=config, resume=resume,
                         allow_irreversible=allow_irreversible, yes=yes)
    if chosen is None:
        return
    agent, request_selection = chosen
    from farm.sweep.dev_run import run as run_lane
    from farm.sweep.dev_run import run_request

    req = run_request(
        agent=agent, serials=device or [], all_phones=all_phones or all_alias, profile=profile,
        executor=af.executor_name(executor), run_id=resume or run_id, resume=resume is not None,
        tasks_dir=tasks_dir, runs_dir=runs_dir, config=config, idle_timeout_s=idle_timeout, deadline_s=deadline,
        batch=batch, max_tries=max_tries, fail_under=fail_under, command=["farm", *sys.argv[1:]],
        show_progress=not quiet, host=host, selection=request_selection, wait=wait,
    )
    print_summary(run_lane(req))


def print_summary(result: SweepResult) -> None:
    """What `farm run` and `farm sweep` print at the end: each phone's line, the run's headline as its report
    shows it, the report paths; then exit with the run's status."""
    import sys

    from rich.console import Console

    from farm.android.health import left_out
    from farm.report.headline import disagreement_text, headline, headline_text

    for h in result.left_out:
        print(left_out(h), file=sys.stderr)
    out = Console(highlight=False, soft_wrap=True)
    for phone in result.phones:
        line = headline_text(headline(phone.records, phone.label)) + disagreement_text(phone.records)
        out.print(f"{phone.label}: {line}", markup=False)
    if result.headline:
        out.print(f"run {result.run_id}: {result.headline}", markup=False)
    for note in result.notes:
        print(note, file=sys.stderr)
    print(f"run: {result.run_dir}")
    for path in [*result.reports, *result.history]:
        print(path)
    if result.exit_code:
        raise typer.Exit(result.exit_code)


def devices_cmd(
    config: af.Config = None,
    profile: str | None = typer.Option(None, "--profile", metavar="NAME",
                                       help="Instrument profile whose agent app is checked."),
    as_json: bool = typer.Option(False, "--json", help="Print the phones and adb servers as one JSON object."),
    runs_dir: af.RunsDir = None,
) -> None:
    """List phones on every adb server with their health verdict.

    An adb server farm.yaml lists that does not answer gets one line on stderr, with the phones it had on the
    last run (from the runs directory); the other servers' phones are listed. The lease column names the run or
    sweep holding each phone (`farm.leases`), and says when that holder is dead. Exit status: 0 when at least one
    adb server answered; 2 when none did (one line naming each), no phone was found, or bad input.
    """
    import sys

    from farm.android import devices, health
    from farm.android.adb_hosts import last_seen, lost_host_line
    from farm.android.device_listing import device_listing
    from farm.cli.paths import runs_dir_setting
    from farm.cli.tables import print_table
    from farm.config import load_config

    # The sweep's naming of one serial listed by two servers (`<serial>@<host:port>`), so both lists agree.
    from farm.sweep.runner import name_apart

    devices.local_port()
    cfg = load_config(config)
    _name, prof = cfg.profile(profile)
    found = devices.discover_all(cfg)
    if not found.answered:
        raise found.none_answered_error()
    seen = last_seen(runs_dir_setting(runs_dir, config).value, [u.address for u in found.unreachable]) \
        if found.unreachable else {}
    marked = [u for u in found.unreachable if _is_lost(u, seen)]
    for down in marked:
        print(lost_host_line(down, seen.get(down.address)), file=sys.stderr, flush=True)
    phones = name_apart(found.phones, [])
    if not phones:
        where = "any adb server that answered" if marked else "any adb server"
        raise FarmError(f"no phone found on {where}", hint=devices.NO_PHONE_HINT)
    healths = [health.check(phone, cfg.health, prof) for phone in phones]
    health.name_phones(healths, cfg.phone_labels)
    from farm.android.device_listing import lease_rows
    from farm.leases import leases_dir, list_leases

    held = lease_rows(healths, list_leases(leases_dir(cfg.leases)), cfg.leases.stale_s)
    listing = device_listing(healths, found, seen, held)
    if as_json:
        print(listing.model_dump_json(indent=2))
        return
    rows = []
    for d in listing.devices:
        battery = "" if d.battery is None else f"{d.battery}%" + (" ⚡" if d.charging else "")
        rows.append([d.name, d.serial, d.server, d.model or "", d.android or "", battery, d.state, d.health,
                     d.reason or "", d.lease.words() if d.lease else "free"])
    print_table(("phone", "serial", "adb server", "model", "Android", "battery", "state", "health", "reason",
                 "lease"), rows)


def _is_lost(down: UnreachableServer, seen: Mapping[str, LastSeen]) -> bool:
    """A server that did not answer is a lost host when farm.yaml lists it, or when the last run had phones on
    it. The local server farm.yaml does not list is otherwise not named: a controller that reaches only other
    hosts' servers runs none, and a line every time would teach people to ignore these lines."""
    return down.listed or down.address in seen


def pull(
    device: str = typer.Option(..., "--device", metavar="SERIAL", help="Phone serial."),
    run_id: str = typer.Option(..., "--run", metavar="RUN", help="Run name on the phone (eval/<run>/)."),
    split: str = typer.Option("all", "--split", metavar="tune|holdout|all", help="Pool to file it under."),
    runs_dir: af.RunsDir = None,
    tasks_dir: Path | None = typer.Option(None, "--tasks-dir", metavar="DIR",
                                          help="Task set scored against when the phone holds no bundle (default "
                                               "farm.yaml tasks_dir, else tasks/)."),
    profile: str | None = typer.Option(None, "--profile", metavar="NAME", help="Instrument profile (agent app "
                                                                                "package)."),
    config: af.Config = None,
) -> None:
    """Pull eval/<run>/ from a phone (a run started elsewhere) and normalise it into records."""
    import sys

    # Before anything imports adbutils, whose import reads ANDROID_ADB_SERVER_PORT and fails on a bad one.
    af.check_adb_port()
    af.check_runs_dir(runs_dir, config)

    from farm.android.pull_run import pull_run
    from farm.config import load_config

    cfg = load_config(config)
    cfg = cfg.model_copy(update={"tasks_dir": str(af.tasks_root(tasks_dir, config))})
    summary = pull_run(
        cfg, serial=device, run=run_id, split=split, runs_dir=af.runs_root(runs_dir, config), profile=profile,
        command=["farm", *sys.argv[1:]],
    )
    for entry in summary.refused:
        print(f"refused {entry}", file=sys.stderr)
    already = f" ({summary.already} already in the run)" if summary.already else ""
    print(f"{summary.records} new records{already} → {summary.run_dir / 'records.jsonl'}")
    print(f"scored by the host against {summary.tasks_from}")
    print(f"raw: {summary.raw}")
    # The run's current report now counts what was pulled.
    from farm.lane_plugins import current_report

    built = current_report(summary.run_dir)
    print(f"run {summary.run_dir.name}: {built.headline_text}")
    for path in built.paths:
        print(path)
    if summary.problems:
        raise FarmError(
            f"{summary.problems[0]}: corrupt scores.jsonl line (kept as an error record)",
            hint=f"{len(summary.problems)} corrupt line(s); the other lines were normalised",
        )


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("run")(run)
    app.command("devices")(devices_cmd)
    app.command("pull")(pull)
    app.add_typer(instrument_app, name="instrument")
