"""`farm run`: discover phones, gate their health, resolve tasks, execute, pull, normalise, report."""

from __future__ import annotations

import datetime as dt
import hashlib
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from farm import manifest as mf
from farm.android import devices, health
from farm.android.bundle import bundle_device_path
from farm.android.executor import Executor, ExecutorOutcome, PhoneJob, ResolvedTask
from farm.android.options import AgentOptions, HostSettings, RunOptions
from farm.android.paths import raw_dir
from farm.android.prepare import PhoneFacts, Prepared, Resolver, installed_packages, prepare, signed_in
from farm.android.progress import PhoneProgress, make_progress
from farm.config import FarmConfig, InstrumentProfile, load_config
from farm.errors import FarmError
from farm.results.normalise import Context, error_record, normalise_file
from farm.results.record import Execution, Record
from farm.results.store import RECORDS_FILE, append_records
from farm.scoring.rescore import rescore_records
from farm.signals import stop_on_signals
from farm.taskset.loader import LoadedTask
from farm.taskset.probes import ProbeSpec, load_catalogue
from farm.taskset.rules import select_valid_tasks

if TYPE_CHECKING:
    from rich.progress import Progress


@dataclass
class RunRequest:
    """Everything `farm run` was asked to do: the agent's options and how the lane should run them."""

    agent: AgentOptions = field(default_factory=AgentOptions)
    """What the agent run is asked to do (split, set, prices, agent switches)."""
    serials: list[str] = field(default_factory=list)
    """`--device`: the phones to use; empty = the only phone, or every phone with `all_phones`."""
    all_phones: bool = False
    """`--all`: every healthy phone."""
    profile: str | None = None
    """Instrument profile name in farm.yaml; null = its default profile."""
    executor: str = "instrument"
    """`instrument` (the agent app on the phone) or `host` (host_agent)."""
    run_id: str | None = None
    """Run id; null = `<yyyymmdd-hhmm>-<split>-<short hash>`."""
    tasks_dir: Path | None = None
    """Task set root; null = farm.yaml `tasks_dir`."""
    runs_dir: Path | None = None
    """Where run directories go; null = farm.yaml `runs_dir`."""
    config: Path | None = None
    """farm.yaml; null = ./farm.yaml when present, else the defaults."""
    idle_timeout_s: float | None = None
    """No-output watchdog per phone; null = farm.yaml `idle_timeout_s`."""
    deadline_s: float | None = None
    """Seconds from the start after which every phone stops; null = no deadline."""
    command: list[str] = field(default_factory=list)
    """The command line, recorded in the manifest."""
    show_progress: bool = True
    """Live progress bars on the terminal."""
    probes_dir: Path | None = None
    """Probe catalogue; null = the built-in one."""
    host: HostSettings | None = None
    """Policy and model flags for `--executor host`."""


@dataclass
class PhoneResult:
    """What happened on one phone."""

    serial: str
    label: str
    records: list[Record]
    outcome: ExecutorOutcome | None
    problems: list[str] = field(default_factory=list)


@dataclass
class RunResult:
    """The finished run."""

    run_id: str
    run_dir: Path
    phones: list[PhoneResult]
    left_out: list[health.PhoneHealth]
    reports: list[Path]
    interrupted: bool = False
    """Stopped by Ctrl-C or SIGTERM: tasks not started are unfinished (infrastructure errors)."""


def default_run_id(split: str, tasks: list[LoadedTask]) -> str:
    """`<yyyymmdd-hhmm>-<split>-<short hash>`."""
    now = dt.datetime.now(dt.UTC)
    digest = hashlib.sha256(f"{time.time_ns()}:{','.join(t.sha256 for t in tasks)}".encode()).hexdigest()[:6]
    return f"{now:%Y%m%d-%H%M}-{split}-{digest}"


def load_executor(name: str, cfg: FarmConfig, host: HostSettings | None = None) -> Executor:
    """The executor by name (imported on demand: the host executor pulls in uiautomator2 and the model SDKs)."""
    if name == "instrument":
        from farm.android.instrument_executor import InstrumentExecutor

        return InstrumentExecutor(cfg.pull)
    if name == "host":
        from farm.android.host_executor import make_executor

        return make_executor(cfg, host)
    raise FarmError(f"--executor {name}: unknown executor", hint="use instrument or host")


def phone_labels(healths: list[health.PhoneHealth]) -> dict[str, str]:
    """Serial → `<model> #n`, numbered per model by serial (reports never show serials)."""
    counts: dict[str, int] = {}
    out = {}
    for h in sorted(healths, key=lambda h: (h.model or "device", h.serial)):
        model = h.model or "device"
        counts[model] = counts.get(model, 0) + 1
        out[h.serial] = f"{model} #{counts[model]}"
    return out


def _skip_record(ctx: Context, loaded: LoadedTask, reason: str, execution: Execution) -> Record:
    t = loaded.task
    return Record(
        run=ctx.run, lane="android", device=ctx.device, task_id=t.id, category=loaded.directory,
        partition=t.partition, expect=t.expect, outcome="skipped", passed=False, reasons=[reason],
        execution=execution, executor=ctx.executor, split=ctx.split, source="harness",
    )


SUMMARY_FILE = "summary.md"
"""The agent's own summary at the top of a pulled tree; its 人工改判 section holds re-judgements."""


def with_evidence(records: list[Record], raw: Path, run_dir: Path) -> list[Record]:
    """Each record naming its run record (`<raw>/<id>/run/`, relative to the run directory) as `evidence`,
    when that directory was pulled; the others are returned unchanged."""
    found: dict[str, str | None] = {}
    out: list[Record] = []
    for rec in records:
        if rec.task_id not in found:
            # A task id is one path component; anything else (from a damaged or hostile scores line) names
            # no directory of this tree.
            single = rec.task_id not in ("", ".", "..") and Path(rec.task_id).name == rec.task_id
            run_record = raw / rec.task_id / "run"
            found[rec.task_id] = run_record.relative_to(run_dir).as_posix() if single and run_record.is_dir() else None
        evidence = found[rec.task_id]
        out.append(rec.model_copy(update={"evidence": evidence}) if evidence is not None else rec)
    return out


def summary_source(raw: Path, run_dir: Path, serial: str) -> mf.OverrideSource | None:
    """The pulled tree's summary.md as a source of re-judgements for that phone, when the tree has one."""
    summary = raw / SUMMARY_FILE
    if not summary.is_file():
        return None
    return mf.OverrideSource(path=summary.relative_to(run_dir).as_posix(), device=serial)


def phone_records(
    ctx: Context, prepared: Prepared, outcome: ExecutorOutcome | None, raw: Path, execution: Execution,
    run_dir: Path,
) -> tuple[list[Record], list[str]]:
    """Records of one phone: harness skips, the pulled scores, and errors for what never finished.

    Every record whose run record was pulled (`<raw>/<id>/run/`) names it as its `evidence`.
    """
    records = [_skip_record(ctx, lt, why, execution) for lt, why in prepared.skipped]
    normalised = normalise_file(raw / "scores.jsonl", ctx, "scores.jsonl")
    if any(r.execution == "simulated" for r in normalised.records):
        execution = "simulated"
        records = [r.model_copy(update={"execution": execution}) for r in records]
    by_id: dict[str, ResolvedTask] = {t.id: t for t in prepared.tasks}
    if ctx.executor == "instrument":
        # The phone's verdict is kept as device_verdict; the host scores the transcript itself.
        records += rescore_records(normalised.records, {t.id: t.task for t in prepared.tasks}, raw)
    else:
        records += normalised.records
    have = {r.task_id for r in normalised.records}
    infra = (outcome.infrastructure_error if outcome else None) or "executor did not run"
    for tid, rt in by_id.items():
        if tid in have:
            continue
        status = outcome.statuses.get(tid) if outcome else None
        if outcome is not None and tid in outcome.finished:
            why = (
                "agent process crashed while executing this task"
                if outcome.crashed and status == "failed"
                else f"finished on the phone (status {status}) but no scores.jsonl line was pulled"
            )
            if not outcome.pulled:
                why += f"; pull failed ({infra})"
        else:
            why = f"unfinished: {infra}"
        extra = {"instrumentStatus": status} if status else {}
        records.append(
            error_record(
                ctx, tid, why, source="harness", category=rt.directory, partition=rt.task.partition,
                expect=rt.task.expect, markers=list(rt.markers), extra=extra,
            ).model_copy(update={"execution": execution})
        )
    return with_evidence(records, raw, run_dir), normalised.problems


class _Lane:
    def __init__(self, req: RunRequest) -> None:
        self.req = req
        self.cfg = load_config(req.config)
        # Resolved once: every phone gets the same options, and --deadline counts from the lane's start.
        self.opts = RunOptions.resolve(
            req.agent, self.cfg, req.profile, idle_timeout_s=req.idle_timeout_s, deadline_s=req.deadline_s,
            started=time.monotonic(),
        )
        self.agent = self.opts.agent
        self.split = self.agent.split
        self.executor = load_executor(req.executor, self.cfg, req.host)
        self.tasks_dir = req.tasks_dir or Path(self.cfg.tasks_dir)
        self.runs_dir = req.runs_dir or Path(self.cfg.runs_dir)
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def run(self) -> RunResult:
        if not self.tasks_dir.is_dir():
            raise FarmError(f"{self.tasks_dir}: no such task directory", hint="pass --tasks-dir DIR")
        # Every per-task rule of the task set holds before anything runs; the set-wide coverage rules
        # (counts per directory, holdout share) are `farm tasks check`'s, so a small set can still run.
        tasks = select_valid_tasks(self.tasks_dir, self.split, self.agent.set_prefix, whole_set=False)
        if not tasks:
            raise FarmError(f"{self.tasks_dir}: no task matches split={self.split} set={self.agent.set_prefix}")
        catalogue = load_catalogue(self.req.probes_dir)
        run_id = self.req.run_id or default_run_id(self.split, tasks)
        if (self.runs_dir / run_id).exists():
            raise FarmError(f"{self.runs_dir / run_id}: run already exists", hint="pass a new --run-id")
        phones = devices.select(devices.discover(self.cfg), self.req.serials, self.req.all_phones)
        manifest = mf.Manifest(
            run_id=run_id, created_at=mf.utc_now(), command=self.req.command, code=mf.code_fingerprint(),
            config=mf.redact(self.cfg.model_dump(mode="json")),
            tasks=[mf.TaskEntry(id=t.task.id, sha256=t.sha256) for t in tasks],
            lanes=[mf.LaneEntry(lane="android", detail={
                "split": self.split, "set": self.agent.set_prefix, "executor": self.executor.name,
                "profile": self.opts.profile_name, "allow_irreversible": self.agent.allow_irreversible,
            })],
        )
        run_dir = mf.create_run_dir(self.runs_dir, manifest)
        try:
            return self._execute(run_dir, run_id, phones, tasks, catalogue)
        except BaseException as exc:
            failed = mf.load(run_dir)
            if failed.status == "running":
                # A second Ctrl-C: the user stopped it, nothing broke.
                failed.status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
                failed.finished_at = mf.utc_now()
                failed.notes.append(exc.line() if isinstance(exc, FarmError) else f"stopped: {type(exc).__name__}")
                mf.save(run_dir, failed)
            raise

    def _execute(
        self, run_dir: Path, run_id: str, phones: list[devices.FoundPhone], tasks: list[LoadedTask],
        catalogue: dict[str, ProbeSpec],
    ) -> RunResult:
        manifest = mf.load(run_dir)
        with ThreadPoolExecutor(max_workers=max(1, len(phones))) as pool:
            gated = list(pool.map(lambda p: health.check(p, self.cfg.health, self._gate_profile()), phones))
        labels = phone_labels(gated)
        manifest.phones = [
            mf.PhoneEntry(serial=h.serial, adb_server=h.server, model=h.model, android=h.android,
                          agent_version=h.agent_version, status="used" if h.ok else "left_out", reason=h.reason)
            for h in gated
        ]
        mf.save(run_dir, manifest)
        healthy = [(p, h) for p, h in zip(phones, gated, strict=True) if h.ok]
        left_out = [h for h in gated if not h.ok]
        if not healthy:
            manifest.status = "failed"
            manifest.finished_at = mf.utc_now()
            manifest.notes.append("no phone passed the health gate")
            mf.save(run_dir, manifest)
            reasons = "; ".join(f"{labels[h.serial]}: {h.reason}" for h in left_out)
            raise FarmError(f"no healthy phone ({reasons})", hint="see `farm devices`")
        progress = make_progress(self.req.show_progress)
        results: list[PhoneResult] = []
        if progress is not None:
            progress.start()
        def stopping(name: str) -> None:
            print(f"{name}: no new tasks; running tasks finish, then the reports are written", file=sys.stderr)

        try:
            with stop_on_signals(self.stop, stopping), ThreadPoolExecutor(max_workers=len(healthy)) as pool:
                futures = [
                    pool.submit(self._phone, p, labels[p.serial], tasks, catalogue, run_id, run_dir, progress)
                    for p, _h in healthy
                ]
                results = [f.result() for f in futures]
        finally:
            if progress is not None:
                progress.stop()
        manifest = mf.load(run_dir)
        for res in results:
            if res.outcome and res.outcome.infrastructure_error:
                manifest.notes.append(f"{res.label}: {res.outcome.infrastructure_error}")
            if res.outcome and res.outcome.pull_refused:
                manifest.notes.append(f"{res.label}: pull refused {len(res.outcome.pull_refused)} entries")
            manifest.notes += [f"{res.label}: corrupt scores line {p}" for p in res.problems]
        outputs = [RECORDS_FILE] + [
            str(raw_dir(run_dir, r.serial, self.split).relative_to(run_dir)) for r in results
        ]
        from farm.report.build import build_reports

        # The status before the reports are built: their headline reads it.
        interrupted = self.stop.is_set()
        manifest.status = "interrupted" if interrupted else "finished"
        manifest.finished_at = None if interrupted else mf.utc_now()
        if interrupted:
            manifest.notes.append("stopped by the user: tasks not started are recorded unfinished")
        mf.save(run_dir, manifest)
        # A run that selected the holdout pool on purpose shows it; `farm report` hides it by default.
        reports = build_reports([run_dir], include_holdout=self.split != "tune")
        outputs += [str(p.relative_to(run_dir)) for p in reports]
        mf.update(run_dir, lambda m: setattr(m.lanes[0], "outputs", outputs))
        return RunResult(run_id, run_dir, results, left_out, reports, interrupted)

    def _gate_profile(self) -> InstrumentProfile | None:
        return self.opts.profile if self.executor.name == "instrument" else None

    def _phone(
        self, phone: devices.FoundPhone, label: str, tasks: list[LoadedTask], catalogue: dict[str, ProbeSpec],
        run_id: str, run_dir: Path, progress: Progress | None,
    ) -> PhoneResult:
        from adbutils import AdbError

        device = phone.device()
        raw = raw_dir(run_dir, phone.serial, self.split)
        ctx = Context(
            run=run_id, device=phone.serial, split=self.split, executor=self.executor.name,
            categories={t.task.id: t.directory for t in tasks},
        )
        # The built-in `sim` profile is the virtual phone's agent app: its results are simulated.
        execution: Execution = "simulated" if self.opts.profile_name == "sim" else "live"
        outcome: ExecutorOutcome | None = None
        prepared = Prepared()
        try:
            facts = PhoneFacts(installed_packages(device), signed_in(device, phone.serial, self.cfg, self.opts.profile))
            resolver = Resolver(device, facts, catalogue, run=run_id, allow_irreversible=self.agent.allow_irreversible)
            prepared = prepare(resolver, tasks)
            sink = PhoneProgress(progress, label, len(prepared.tasks), skipped=len(prepared.skipped),
                                 claimed=self.executor.name == "instrument")
            job = PhoneJob(
                device=device, serial=phone.serial, label=label, run_id=run_id, tasks=prepared.tasks,
                options=self.opts, raw_dir=raw, device_eval_dir=self.opts.profile.eval_dir(run_id),
                device_bundle_path=bundle_device_path(self.opts.profile.resolved_files_dir(), run_id), stop=self.stop,
            )
            if prepared.tasks:
                outcome = self.executor.run(job, sink)
            else:
                outcome = ExecutorOutcome()
        except (AdbError, OSError) as exc:
            outcome = ExecutorOutcome(
                unfinished=[t.id for t in prepared.tasks], infrastructure_error=f"adb error: {exc}"
            )
        except Exception as exc:  # noqa: BLE001 - one phone's failure must not lose the other phones' results
            text = exc.line() if isinstance(exc, FarmError) else f"{type(exc).__name__}: {exc}"
            if not prepared.tasks and not prepared.skipped:
                # Failed before resolution: every selected task is an infrastructure error on this phone.
                prepared.tasks = [ResolvedTask(t.task, t.directory, t.sha256) for t in tasks]
            outcome = ExecutorOutcome(unfinished=[t.id for t in prepared.tasks], infrastructure_error=text)
        records, problems = phone_records(ctx, prepared, outcome, raw, execution, run_dir)
        source = summary_source(raw, run_dir, phone.serial)
        with self.lock:
            append_records(run_dir / RECORDS_FILE, records)
            if source is not None:
                # Named now, before the reports are built: they read re-judgements only from named files.
                mf.add_lane(run_dir, mf.LaneEntry(lane="android", override_sources=[source]))
        return PhoneResult(phone.serial, label, records, outcome, problems)


def run(req: RunRequest) -> RunResult:
    """Run a split on the selected phones end to end and write the reports."""
    return _Lane(req).run()
