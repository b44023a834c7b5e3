"""`farm sweep`: the nightly sweep across every phone of every farm host."""

from __future__ import annotations

import sys
from typing import cast

import typer

from farm.cli import agent_flags as af
from farm.cli import selection as sel
from farm.errors import FarmError

_HELP = (
    "Run the task set on every healthy phone of every adb server, from one durable queue.\n\n"
    "Units (task × phone or any phone × repeat) are journaled in the run directory: each record is written "
    "the moment its unit is scored, a unit whose phone fails for an infrastructure reason moves to another "
    "eligible phone (each try is kept), a phone that keeps failing is quarantined, and Ctrl-C/SIGTERM stop "
    "dispatch and leave the run resumable with --resume RUN, which continues it with its own task set, farm.yaml, "
    "selection, spread and repeats.\n\n"
    "The pool is --split (default all); --set (repeatable, a union), -k, --exclude and --only-failed-from "
    "choose within it.\n\n"
    "Exit status: 0 every unit finished and passed (or the rate reached --fail-under); 1 some failed; 3 units "
    "were left unfinished (phones lost or quarantined, or the sweep was stopped: resume it); 4 the pass rate is "
    "below --fail-under; 5 infrastructure errors after every try; 6 a listed adb server (a farm host) did not "
    "answer (its line on stderr names it and the phones it had); 2 bad input, no healthy phone, too little free "
    "space, a changed code/task/config on resume, or another sweep holds the farm's lock.\n\n"
    "After every sweep, farm.yaml's notify: section (a command, an http(s) URL) receives the run's headline JSON; "
    "a notifier that fails is logged and never changes the exit status."
)


def sweep_cmd(
    split: af.Split = None,
    spread: str = typer.Option("every-phone", "--spread", metavar="every-phone|shard",
                               help="every-phone (each phone runs every task it can) or shard (each task once)."),
    repeats: int = typer.Option(1, "--repeats", min=1, max=1000, metavar="K",
                                help="Runs of each unit (pass@k, pass^k, flaky list)."),
    device: af.Device = None,
    all_phones: bool = typer.Option(True, "--all-phones/--listed-phones",
                                    help="Every healthy phone (the default), or only --device ones."),
    label: str | None = typer.Option(None, "--label", metavar="LABEL",
                                     help="Tag of the run, e.g. nightly (see farm history)."),
    run_name: af.RunName = None,
    run_id_alias: af.RunIdAlias = None,
    resume: af.Resume = None,
    retry_from: str | None = typer.Option(None, "--retry-from", metavar="RUN",
                                          help="New run (--run) reusing RUN's finished units (mixed provenance)."),
    batch: int = typer.Option(1, "--batch", min=1, max=1000, metavar="N",
                              help="instrument executor: units of distinct tasks per am instrument call."),
    max_tries: int = typer.Option(3, "--max-tries", min=1, max=100, metavar="N",
                                  help="Tries of a unit after infrastructure failures."),
    quarantine_after: int = typer.Option(3, "--quarantine-after", min=1, max=1000, metavar="N",
                                         help="Infrastructure failures in a row that quarantine a phone."),
    recheck: float = typer.Option(60.0, "--recheck", metavar="SECONDS",
                                  help="Seconds between health checks of quarantined phones."),
    fail_under: af.FailUnder = None,
    quiet: bool = typer.Option(False, "--quiet", help="No line per finished unit."),
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
    from farm.android.options import check_seconds
    from farm.cli.aliases import either
    from farm.names import check_name
    from farm.sweep.plan import Spread
    from farm.sweep.request import SweepRequest
    from farm.sweep.sweep import sweep

    run_id, run_flag = either(run_name, run_id_alias, "--run", "--run-id")
    if spread not in ("every-phone", "shard"):
        raise FarmError(f"--spread {spread}: invalid", hint="use every-phone or shard")
    if resume and (retry_from or run_id):
        raise FarmError("--resume RUN continues that run", hint=f"leave out {run_flag} and --retry-from")
    if resume and (sets or keyword is not None or exclude or only_failed_from):
        raise FarmError("--resume RUN continues that run with its own selection",
                        hint="leave out --set, -k, --exclude and --only-failed-from")
    if retry_from and not run_id:
        raise FarmError("--retry-from OLD makes a new run", hint="pass --run NEW")
    if not all_phones and not device:
        raise FarmError("--listed-phones without --device", hint="name the phones with --device SERIAL")
    # Names first: the sweep takes the farm lock (a file in the runs directory) before it reaches a phone.
    for value, what in ((resume, "--resume"), (run_id, run_flag), (retry_from, "--retry-from"), (label, "--label")):
        if value is not None:
            check_name(value, what)
    check_seconds(recheck, "--recheck")
    af.check_fraction(fail_under, "--fail-under")
    agent = af.agent_options(
        split=split or "all", set_prefix=None, allow_irreversible=allow_irreversible, price_in=price_in,
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
    req = SweepRequest(
        agent=agent, spread=cast(Spread, spread), repeats=repeats, host=host,
        executor=af.executor_name(executor), selection=request_selection,
        serials=device or [], profile=profile, run_id=resume or run_id, resume=resume is not None,
        retry_from=retry_from, label=label, batch=batch, max_tries=max_tries, quarantine_after=quarantine_after,
        recheck_s=recheck, fail_under=fail_under, tasks_dir=tasks_dir, runs_dir=runs_dir, config=config,
        command=["farm", *sys.argv[1:]], show_progress=not quiet,
    )
    from farm.cli.android import print_summary
    from farm.config import load_config
    from farm.notify import notify_refused, notify_sweep

    # Read before the sweep: a bad `notify:` section is refused (exit 2) before anything runs. A resume reads the
    # farm.yaml of the run it continues (unless --config names one), as the sweep does.
    if resume is not None:
        from farm.sweep.resume_request import resumed_config

        notify = resumed_config(af.runs_root(runs_dir, config) / resume, config).notify
    else:
        notify = load_config(config).notify
    try:
        result = sweep(req)
    except FarmError as exc:
        # A night that did not start (no healthy phone, the farm's lock held) or stopped with an error (a full
        # disk) is news too; the error stays the exit.
        if notify is not None:
            notify_refused(exc, notify, run=req.run_id, label=label)
        raise
    c = result.counts
    print(f"units: {c['done']} finished · {c['unfinished']} unfinished · {c['pending'] + c['leased']} not run"
          + (" (interrupted)" if result.interrupted else ""))
    # A quarantined phone was one of the sweep's phones: named as its per-phone line names it.
    captions = {phone.serial: phone.label for phone in result.phones}
    for serial, why in result.quarantined.items():
        print(f"quarantined {captions.get(serial, serial)}: {'; '.join(why)}", file=sys.stderr)
    try:
        print_summary(result)  # ends with the sweep's exit status
    finally:
        # After the summary, whatever it raised: a notifier logs its failure and never changes that status.
        if notify is not None:
            sys.stdout.flush()
            notify_sweep(result, notify)


sweep_cmd.__doc__ = _HELP


def register(app: typer.Typer) -> None:
    """Add `farm sweep` to the root app."""
    app.command("sweep", help=_HELP)(sweep_cmd)

