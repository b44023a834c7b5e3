"""`farm web run` and `farm web probe` as library calls: set up the site, the backends and the
policy, join the run manifest, append results, write the report. A run's plan is stored in its manifest when it
starts, so a run stopped part-way (a used-up quota) can be resumed: the planned runs never started, or ended by an
infrastructure error, run again into the same results file, their records superseding the earlier ones."""

from __future__ import annotations

import datetime as dt
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from farm import manifest as mf
from farm.errors import FarmError
from farm.fsutil import atomic_write_text, create_new_text
from farm.llm.loop import Policy
from farm.manifest import LaneEntry, Manifest, code_fingerprint, utc_now
from farm.results.store import RunStore
from web_bench.browser.contract import BackendName, BrowserBackend
from web_bench.paired.matrix import PlannedRun
from web_bench.paired.records import to_record
from web_bench.paired.report import report_file, to_markdown
from web_bench.paired.results import MAX_TIMEOUT_MS, PolicyName, WebRun, append_run, read_results
from web_bench.paired.runner import RunContext, run_matrix
from web_bench.paired.site.catalog import SUITE_VERSION
from web_bench.paired.site.server import SiteServer
from web_bench.paired.stored_plan import WebPlan, matrix_spec, seed_ranges
from web_bench.paired.turn import WebBrief


class ModelChoice(BaseModel):
    """Model selection for the model policy (applied identically to both backends)."""

    model_config = ConfigDict(extra="forbid")

    provider: str | None = None
    """openai | anthropic (else FARM_LLM_PROVIDER)."""
    model: str | None = None
    """Model name (else FARM_LLM_MODEL)."""
    reasoning_effort: str | None = None
    """Reasoning effort (else FARM_LLM_REASONING_EFFORT)."""


def check_timeout_ms(timeout_ms: int) -> None:
    """FarmError unless 1 ≤ `timeout_ms` ≤ MAX_TIMEOUT_MS (the bound a results line is read with)."""
    if not 1 <= timeout_ms <= MAX_TIMEOUT_MS:
        raise FarmError(f"--timeout-ms: must be 1…{MAX_TIMEOUT_MS} (a day), got {timeout_ms}",
                        hint="pass the time limit of one run in milliseconds, e.g. --timeout-ms 120000")


def default_run_id() -> str:
    """`web-YYYYmmddTHHMMSSZ`."""
    return "web-" + dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")


@contextmanager
def open_backends(
    names: list[BackendName], site: SiteServer, *, chromium: str | None = None, serial: str | None = None,
    virtual_phone: bool = False,
) -> Iterator[dict[BackendName, BrowserBackend]]:
    """Backends by name, closed on exit. android-chrome needs a phone on the adb server, or
    `virtual_phone` (a virtual phone whose Chrome socket reaches a local Chromium)."""
    with ExitStack() as stack:
        backends: dict[BackendName, BrowserBackend] = {}
        for name in names:
            if name == "playwright":
                from web_bench.browser.playwright_backend import PlaywrightBackend

                backend: BrowserBackend = PlaywrightBackend(chromium)
                stack.callback(backend.close)
            elif name == "extension":
                from web_bench.browser.extension_backend import ExtensionBackend

                backend = ExtensionBackend(chromium)
                stack.callback(backend.close)
            else:
                from web_bench.browser.android_chrome import AndroidChromeBackend

                if virtual_phone:
                    from web_bench.paired.virtual_phone import VirtualChromePhone

                    phone = stack.enter_context(VirtualChromePhone(chromium))
                    android = AndroidChromeBackend(
                        site.port, phone.serial, adb_port=phone.adb_port,
                        chrome_hint="the virtual phone's Chromium stopped answering; check --chromium",
                    )
                else:
                    android = AndroidChromeBackend(site.port, serial)
                stack.callback(android.close)
                # Now, not at the first run: without Chrome every android run would fail the same way,
                # after the run directory exists.
                android.connect()
                backend = android
            backends[name] = backend
        yield backends


def make_policy(kind: PolicyName, choice: ModelChoice, stack: ExitStack) -> Policy[WebBrief]:
    """The scripted policy, or the model policy with a farm.llm client (closed with `stack`)."""
    if kind == "scripted":
        from web_bench.paired.scripted import ScriptedPolicy

        return ScriptedPolicy()
    from farm.llm.client import make_client
    from farm.llm.model_config import LLMConfig
    from web_bench.paired.model_policy import model_policy

    cfg = LLMConfig.from_env(
        {"provider": choice.provider, "model": choice.model, "reasoning_effort": choice.reasoning_effort}
    )
    client = make_client(cfg)
    stack.callback(client.close)
    return model_policy(client)


def _join_run(runs_dir: Path, run_id: str, detail: dict[str, JsonValue]) -> tuple[RunStore, bool]:
    """Join run `run_id` (created, with this command line, when there is none) before any file is written."""

    def new() -> Manifest:
        return Manifest(run_id=run_id, created_at=utc_now(), command=list(sys.argv), code=code_fingerprint())

    return RunStore.join(runs_dir, run_id, LaneEntry(lane="web", detail=detail), new=new)


def _relative(path: Path, base: Path) -> str:
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path.resolve())


def resume_command(run_id: str) -> str:
    """The command that continues run `run_id` (the runs directory being the default one)."""
    return f"farm web run --run {run_id} --resume"


@dataclass(frozen=True)
class _Pass:
    """One pass over (part of) a run's matrix: what a new run and a resumed one share."""

    run_id: str
    todo: list[PlannedRun]
    """The runs to start, in plan order."""
    total: int
    """Runs in the whole plan (the stop note counts the ones not started out of these)."""
    results: Path
    policy_kind: PolicyName
    choice: ModelChoice
    timeout_ms: int
    virtual_phone: bool
    resume_hint: str | None
    """The command that continues the run, named when a stop leaves runs unrun; None when it cannot be resumed."""
    earlier: frozenset[tuple[str, str]] = frozenset()
    """(pair id, backend) of the runs to start that already have a line: their new record supersedes the old."""


OpenRun = Callable[[], tuple[RunStore, bool, int]]
"""Opens the run once the backends are up: its store, whether this lane sets its status, and the lines already in
its results file."""


def _drive(
    step: _Pass, open_run: OpenRun, *, chromium: str | None, serial: str | None, on_run: Callable[[WebRun], None],
    policy: Policy[WebBrief] | None,
) -> RunStore:
    """Start the site, the backends and the policy, then open the run, and run `step.todo`, appending each result to
    the results file and each record to the run."""
    results = step.results
    backend_names = list(dict.fromkeys(r.backend for r in step.todo))
    with ExitStack() as stack:
        site = stack.enter_context(SiteServer())
        backends = stack.enter_context(
            open_backends(backend_names, site, chromium=chromium, serial=serial, virtual_phone=step.virtual_phone)
        )
        active_policy = policy or make_policy(step.policy_kind, step.choice, stack)
        store, owns_status, first_line = open_run()
        run_dir = store.run_dir
        devices: dict[str, str] = {
            name: str(serial_of) for name, b in backends.items() if (serial_of := getattr(b, "serial", None))
        }
        ctx = RunContext(run_id=step.run_id, site_url=site.base_url, policy=active_policy,
                         policy_name=step.policy_kind, timeout_ms=step.timeout_ms, provider=step.choice.provider,
                         model=step.choice.model, reasoning_effort=step.choice.reasoning_effort, devices=devices,
                         simulated={"android-chrome"} if step.virtual_phone else set())

        lines = first_line
        started = 0

        def record(run: WebRun) -> None:
            nonlocal lines, started
            append_run(results, run)
            lines += 1
            started += 1
            rec = to_record(run, source=f"{_relative(results, run_dir)}:{lines}")
            if (run.pair_id, run.backend) in step.earlier:
                # Same attempt key as the line it replaces: the run's current records count this one.
                store.supersede([rec])
            else:
                store.append([rec])
            on_run(run)

        finished = False
        try:
            run_matrix(step.todo, backends, ctx, record)
            finished = True
        finally:
            stop_note = None
            if ctx.stopped is not None:
                stop_note = (f"web: stopped dispatch: {ctx.stopped}; {len(step.todo) - started} of {step.total} "
                             "runs not started")
                # Said once, whatever the caller prints per run: the remaining runs were never tried.
                how = f"; resume with: {step.resume_hint}" if step.resume_hint else ""
                print(stop_note + how, file=sys.stderr, flush=True)
            if owns_status or stop_note is not None:
                def close(manifest: Manifest) -> None:
                    if stop_note is not None:
                        manifest.notes.append(stop_note)
                    if owns_status:
                        manifest.finished_at = utc_now()
                        manifest.status = "interrupted" if stop_note else "finished" if finished else "failed"

                store.update(close)
    return store


def _finish(store: RunStore, results: Path, report_path: Path, *, replace: bool) -> None:
    """The lane's own report, then the run's current report (`runs/<id>/report.*`, headline.json), which counts the
    web units beside every other lane's."""
    if results.stat().st_size:
        text = to_markdown(report_file(results))
        if replace:
            # Derived from the results file: a resumed run's report replaces the earlier one, whole or not at all.
            atomic_write_text(report_path, text)
        else:
            create_new_text(report_path, text, what="report")
    from farm.lane_plugins import current_report

    current_report(store.run_dir)


def run_lane(
    runs: list[PlannedRun], *, run_id: str, runs_dir: Path, output: Path | None, policy_kind: PolicyName,
    choice: ModelChoice, timeout_ms: int, chromium: str | None = None, serial: str | None = None,
    virtual_phone: bool = False, on_run: Callable[[WebRun], None] = lambda _: None,
    policy: Policy[WebBrief] | None = None, smoke: bool = False, resume_hint: str | None = None,
) -> tuple[Path, Path]:
    """Run the matrix; returns (results JSONL, report Markdown). Refuses an existing output. The run's current
    report (`runs/<id>/report.*`) is rebuilt at the end, counting the web units.

    When `runs` is a whole plan (`matrix.plan`), the plan is stored in the web lane's manifest entry, so a stopped
    run can be resumed (`resume_lane`); `resume_hint` is the command the stop line names (default: `resume_command`)."""
    check_timeout_ms(timeout_ms)
    results = output or runs_dir / run_id / "web" / "results.jsonl"
    if results.exists() or results.is_symlink():
        raise FarmError(f"{results}: output already exists",
                        hint="pass a new --out; results of different runs are never appended together")
    report_path = results.with_suffix(".report.md")
    spec = matrix_spec(runs)
    backend_names = list(dict.fromkeys(r.backend for r in runs))

    def open_run() -> tuple[RunStore, bool, int]:
        store, created = _join_run(
            runs_dir, run_id,
            {"suiteVersion": SUITE_VERSION, "policy": policy_kind, "backends": list(backend_names),
             "timeoutMs": timeout_ms, "runs": len(runs), "model": choice.model, "provider": choice.provider,
             "virtualPhone": virtual_phone},
        )
        run_dir = store.run_dir
        results.parent.mkdir(parents=True, exist_ok=True)
        create_new_text(results, "", what="results file")
        # The run-level record file every lane appends to (through the store); the shared aggregation reads it.
        outputs = [_relative(p, run_dir) for p in (results, report_path, store.records)]
        detail: dict[str, JsonValue] = {}
        if spec is not None:
            tasks, seeds, trials, backends = spec
            # Stored once the results file exists: a run whose plan is in its manifest can always be resumed.
            detail["plan"] = WebPlan(
                tasks=tasks, seeds=seed_ranges(seeds), trials=trials, backends=backends, smoke=smoke,
                policy=policy_kind, timeout_ms=timeout_ms, provider=choice.provider, model=choice.model,
                reasoning_effort=choice.reasoning_effort, virtual_phone=virtual_phone,
                results=_relative(results, run_dir), owns_status=created,
            ).model_dump(mode="json", by_alias=True)
        store.add_lane(LaneEntry(lane="web", outputs=outputs, detail=detail))
        return store, created, 0

    step = _Pass(run_id=run_id, todo=runs, total=len(runs), results=results, policy_kind=policy_kind, choice=choice,
                 timeout_ms=timeout_ms, virtual_phone=virtual_phone,
                 resume_hint=(resume_hint or resume_command(run_id)) if spec is not None else None)
    store = _drive(step, open_run, chromium=chromium, serial=serial, on_run=on_run, policy=policy)
    _finish(store, results, report_path, replace=False)
    return results, report_path


@dataclass(frozen=True)
class Resumable:
    """A web run as `--resume` finds it: its stored plan and the planned runs still to go."""

    store: RunStore
    """The run."""
    plan: WebPlan
    """The plan stored when it started."""
    results: Path
    """Its results file."""
    total: int
    """Runs in the plan."""
    todo: list[PlannedRun]
    """Planned runs whose latest line is missing or an infrastructure error, in plan order."""
    earlier: frozenset[tuple[str, str]]
    """(pair id, backend) of the runs in `todo` that already have a line (an infrastructure error)."""
    done: list[tuple[WebRun, int]]
    """The latest line of every other planned run, and its line number."""


def find_resumable(runs_dir: Path, run_id: str) -> Resumable:
    """Run `run_id`'s stored web plan and what is left of it; FarmError (naming the run and the fix) when there is
    no such run, no web lane in it, no stored plan, or a plan this code cannot continue."""
    run_dir = runs_dir / run_id
    if not mf.manifest_path(run_dir).is_file():
        raise FarmError(f"--resume: no run {run_id} in {runs_dir}",
                        hint="pass --run with the id of a run `farm web run` started (and --runs-dir if it is "
                             "elsewhere)")
    store = RunStore(run_dir)
    manifest = store.manifest()
    entry = next((lane for lane in manifest.lanes if lane.lane == "web"), None)
    if entry is None:
        raise FarmError(f"--resume: run {run_id} has no web lane",
                        hint=f"drop --resume to add one to it: farm web run --run {run_id}")
    new_run = "start the benchmark as a new run: farm web run --run NEW-ID"
    stored = entry.detail.get("plan")
    if stored is None:
        raise FarmError(f"--resume: run {run_id}'s web lane holds no stored plan (it started without one)",
                        hint=new_run)
    try:
        web_plan = WebPlan.model_validate(stored)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "plan"
        raise FarmError(f"--resume: run {run_id}'s stored web plan is unreadable ({where}: {err['msg']})",
                        hint=new_run) from None
    version = entry.detail.get("suiteVersion")
    if version != SUITE_VERSION:
        raise FarmError(f"--resume: run {run_id} ran task suite version {version}, this code has {SUITE_VERSION}",
                        hint=f"runs of two suite versions are not comparable; {new_run}")
    results = web_plan.results_path(run_dir)
    if not results.is_file():
        raise FarmError(f"--resume: {results}: run {run_id}'s results file is missing", hint=new_run)
    read = read_results(results)
    latest: dict[tuple[str, str], tuple[WebRun, int]] = {}
    for run, line in zip(read.runs, read.line_numbers, strict=True):
        if run.run_id == run_id:
            latest[(run.pair_id, run.backend)] = (run, line)
    matrix = web_plan.matrix()
    todo: list[PlannedRun] = []
    done: list[tuple[WebRun, int]] = []
    for planned in matrix:
        last = latest.get((planned.pair_id, planned.backend))
        if last is None or last[0].infrastructure_error:
            todo.append(planned)
        else:
            done.append(last)
    earlier = frozenset((p.pair_id, p.backend) for p in todo if (p.pair_id, p.backend) in latest)
    return Resumable(store=store, plan=web_plan, results=results, total=len(matrix), todo=todo, earlier=earlier,
                     done=done)


def _end_last_line(path: Path) -> int:
    """Lines of the results file, its last one ended first when a crash cut it (that line stays one rejected line,
    and the next run's line whole)."""
    with path.open("rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size:
            handle.seek(size - 1)
            if handle.read(1) != b"\n":
                handle.write(b"\n")
                handle.flush()
                os.fsync(handle.fileno())
        handle.seek(0)
        return sum(1 for _ in handle)


def resume_lane(
    found: Resumable, *, chromium: str | None = None, serial: str | None = None,
    on_run: Callable[[WebRun], None] = lambda _: None, policy: Policy[WebBrief] | None = None,
    resume_hint: str | None = None,
) -> tuple[Path, Path]:
    """Run what is left of a stopped web run (`find_resumable`), appending to its results file and superseding
    the records of the runs started again; returns (results JSONL, report Markdown). The lane's report is rewritten
    and the run's current report rebuilt. Nothing is touched when nothing is left."""
    store, web_plan, results = found.store, found.plan, found.results
    report_path = results.with_suffix(".report.md")
    run_id = store.run_dir.name
    if not found.todo:
        return results, report_path
    choice = ModelChoice(provider=web_plan.provider, model=web_plan.model, reasoning_effort=web_plan.reasoning_effort)

    def open_run() -> tuple[RunStore, bool, int]:
        run_dir = store.run_dir
        first_line = _end_last_line(results)
        # A run whose results line reached the file but whose record did not (a crash between the two) gets it now.
        store.append_new(to_record(run, source=f"{_relative(results, run_dir)}:{line}") for run, line in found.done)
        note = f"web: resumed at {utc_now()}: {len(found.todo)} of {found.total} runs to go"

        def reopen(manifest: Manifest) -> None:
            manifest.notes.append(note)
            if web_plan.owns_status:
                manifest.status = "running"
                manifest.finished_at = None

        store.update(reopen)
        return store, web_plan.owns_status, first_line

    step = _Pass(run_id=run_id, todo=found.todo, total=found.total, results=results, policy_kind=web_plan.policy,
                 choice=choice, timeout_ms=web_plan.timeout_ms, virtual_phone=web_plan.virtual_phone,
                 resume_hint=resume_hint or resume_command(run_id), earlier=found.earlier)
    _drive(step, open_run, chromium=chromium, serial=serial, on_run=on_run, policy=policy)
    _finish(store, results, report_path, replace=True)
    return results, report_path
