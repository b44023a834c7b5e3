"""Start, resume or retry a sweep; finish it with reports and an exit status a scheduler can act on.

A full disk is an infrastructure stop, never an internal error: ENOSPC anywhere (records, the journal, a try's
tree, the reports) stops dispatch once, leaves the manifest `interrupted` and raises `DiskFull` (exit 3), whose one
line names the filesystem, its free space and the floor, and the `--resume` that continues the run. A sweep does not
start below that free-space floor (`min_free_mb`, exit 2).

A resume needs nothing but the run's name (and where runs are): the task set, farm.yaml, selection and schedule the
sweep started with are in its journal and used again unless the command line names others. It leaves no litter: a
unit no phone could run gets one placeholder error record, which the record of its later try supersedes and which a
resume that ran nothing does not write again; and the manifest's status comes from the journal (`run_status`), so a
run with units left unfinished stays `interrupted` (exit 3) until a resume finishes them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from farm import manifest as mf
from farm.android.executor import Executor, ProgressSink, load_executor
from farm.android.health import PhoneHealth, left_out
from farm.android.options import RunOptions
from farm.android.phone_records import skip_record
from farm.android.progress import PhoneProgress, make_progress, record_line, say
from farm.config import config_file, load_config
from farm.disk_space import DiskFull, SpaceReserve, check_free_space, floor_bytes, is_disk_full
from farm.errors import FarmError
from farm.leases import Leases, leases_dir, this_holder
from farm.names import MAX_NAME, check_name
from farm.redact import REDACTED, redact
from farm.results.normalise import Context, error_record
from farm.results.record import Execution, Record
from farm.results.store import RECORDS_FILE, ReadProblems, RunStore, is_run_dir
from farm.signals import stop_on_signals
from farm.sweep.app_versions import fleet_versions
from farm.sweep.identity import sweep_identity
from farm.sweep.journal import Journal, UnitRow, is_complete, run_status
from farm.sweep.lock import farm_lock, lock_path
from farm.sweep.plan import Estimates, history_estimates, plan_units
from farm.sweep.request import SweepRequest, exit_status
from farm.sweep.resume_collect import PLACEHOLDER, STOPPED, collect_leased, reconcile
from farm.sweep.resume_request import request_from, resume_config, saved_request
from farm.sweep.run_manifest import adopt, android_lane, lease_notes, phone_entries, planned_units
from farm.sweep.runner import Dispatcher, Fleet, gather_fleet
from farm.sweep.unit_run import summary_sources
from farm.taskset.loader import LoadedTask
from farm.taskset.rules import select_valid_tasks, set_wide_note

if TYPE_CHECKING:
    from rich.progress import Progress


@dataclass
class SweepResult:
    """How a sweep ended."""

    run_id: str
    run_dir: Path
    counts: dict[str, int]
    """Units per journal state (pending, leased, done, unfinished)."""
    interrupted: bool
    exit_code: int
    reports: list[Path] = field(default_factory=list)
    quarantined: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    rate: float | None = None
    history: list[Path] = field(default_factory=list)
    """`farm history` written for the sweep's label (md, html)."""
    phones: list[PhoneRecords] = field(default_factory=list)
    """Each phone that ran units, with its records (for a per-phone headline)."""
    left_out: list[PhoneHealth] = field(default_factory=list)
    """Phones the health gate refused, with the reason."""
    headline: str = ""
    """The run's headline in words, as its report (`runs/<id>/report.md`) shows it."""


@dataclass
class PhoneRecords:
    """One phone's records of a run."""

    serial: str
    label: str
    """`<name> (<serial> on <adb server>)` (`farm.phone_name.caption`)."""
    records: list[Record]


def _say(req: SweepRequest, text: str) -> None:
    if req.show_progress:
        say(text)


def _default_run_id(req: SweepRequest, tasks: list[LoadedTask]) -> str:
    """A sweep: `<yyyymmdd-hhmmss>-<label>`; a run: `<yyyymmdd-hhmm>-<split>-<short hash>`."""
    now = dt.datetime.now(dt.UTC)
    if req.kind == "sweep":
        stamp = f"{now:%Y%m%d-%H%M%S}-"
        # A label may use every character a name may: the id keeps within the bound by cutting the label's end.
        return stamp + (req.label or "sweep")[:MAX_NAME - len(stamp)].rstrip(".")
    digest = hashlib.sha256(f"{time.time_ns()}:{','.join(t.sha256 for t in tasks)}".encode()).hexdigest()[:6]
    return f"{now:%Y%m%d-%H%M}-{req.agent.split}-{digest}"


class Sweep:
    """One sweep from request to exit status."""

    def __init__(self, req: SweepRequest) -> None:
        self.req = req
        self.cfg = load_config(req.config)
        self.runs_dir = req.runs_dir or Path(self.cfg.runs_dir)
        self.tasks_dir = req.tasks_dir or Path(self.cfg.tasks_dir)
        self.stop = threading.Event()
        self.executor: Executor | None = None
        # What a stop for a full disk needs to leave the run resumable (set as each comes to exist).
        self.run_dir: Path | None = None
        self.journal: Journal | None = None
        self.reserve: SpaceReserve | None = None
        self.full_stop: DiskFull | None = None
        """The one full-disk stop of this sweep, once it happened."""
        self.leases: Leases | None = None
        """The phones this sweep holds (released when it ends, however it ends)."""

    # -- entry points ------------------------------------------------------------------------------
    def run(self) -> SweepResult:
        """A new sweep (or, with `resume`, the continuation of a stopped one); `DiskFull` when the disk filled."""
        try:
            return self._run()
        except Exception as exc:
            # A full disk met outside the farm lock (its lock file, the runs directory) is the same stop.
            if exc is self.full_stop or not is_disk_full(exc):
                raise
            raise self._full_disk_stop() from exc
        finally:
            if self.reserve is not None:
                self.reserve.release()
            if self.leases is not None:
                self.leases.close()

    def _leases(self, run_id: str) -> Leases:
        """This sweep's phone leases (`farm.leases`), made the first time a phone is looked for."""
        if self.leases is None:
            holder = this_holder(self.req.kind, run_id, self.req.label, self.req.command or None)
            self.leases = Leases(leases_dir(self.cfg.leases), holder, self.cfg.leases)
        return self.leases

    def _run(self) -> SweepResult:
        req = self.req
        for value, what in ((req.run_id, "--resume" if req.resume else "--run-id"), (req.retry_from, "--retry-from"),
                            (req.label, "--label")):
            if value is not None:
                check_name(value, what)
        # Before anything is written: a sweep started into a nearly full disk would only stop later.
        check_free_space(self.runs_dir, self._floor_mb(), what=f"a {req.kind}")
        if self.req.resume:
            return self._resume()
        self._opts()  # a bad profile or config is named before the task set is read
        # The executor before anything is written: a host run without a model is refused here.
        self._load_executor()
        tasks = self._tasks()
        run_id = self.req.run_id or _default_run_id(self.req, tasks)
        self._refuse_taken(run_id)
        with self._lock(run_id), self._stops_on_full_disk():
            return self._new(run_id, tasks)

    def _floor_mb(self) -> float:
        """The free-space floor: the request's, else farm.yaml `min_free_mb`, else the default."""
        return self.req.min_free_mb if self.req.min_free_mb is not None else self.cfg.min_free_mb

    @contextmanager
    def _stops_on_full_disk(self) -> Iterator[None]:
        """Turn a full disk met under the farm lock into the sweep's one stop, written before the lock is let go."""
        try:
            yield
        except Exception as exc:
            if exc is self.full_stop or not is_disk_full(exc):
                raise
            raise self._full_disk_stop() from exc

    def _full_disk_stop(self) -> DiskFull:
        """Stop for a full disk: give the reserve back, leave the manifest `interrupted` (units kept, the ones in
        flight still leased in the journal for the resume) and return the one error to raise (exit 3)."""
        if self.full_stop is not None:
            return self.full_stop
        run_dir = self.run_dir
        resumable = run_dir is not None and mf.manifest_path(run_dir).is_file()
        then = (f"free space and run `{self.req.resume_command(run_dir.name)}`" if run_dir is not None and resumable
                else "free space and start it again")
        # Measured before the reserve is given back: the free space the disk really had.
        stop = DiskFull(run_dir or self.runs_dir, needed=floor_bytes(self._floor_mb()), then=then,
                        what=f"a {self.req.kind}")
        self.full_stop = stop
        if self.reserve is not None:
            self.reserve.release()
        if run_dir is not None and resumable:

            def change(m: mf.Manifest) -> None:
                m.status, m.finished_at = "interrupted", None
                m.notes.append(f"stopped: {stop.message}")

            try:
                mf.update(run_dir, change)
            except Exception as exc:
                # Even the reserve was not enough: the manifest stays `running`, which a resume also continues.
                if not is_disk_full(exc):
                    raise
        if self.journal is not None:
            # Every committed change is in its WAL already; closing only checkpoints, which may fail for want of space.
            with suppress(Exception):
                self.journal.close()
        return stop

    def _refuse_taken(self, run_id: str) -> None:
        """A run that exists may be joined by the android lane only when it has none yet (another lane's run,
        whose records all stay); anything else under that name is refused."""
        run_dir = self.runs_dir / run_id
        if not run_dir.exists():
            return
        if mf.manifest_path(run_dir).is_file() and all(e.lane != "android" for e in mf.load(run_dir).lanes):
            return
        raise FarmError(f"{run_dir}: run already exists",
                        hint=f"continue it with --resume {run_id}, or pass a new --run")

    def _lock(self, run_id: str) -> AbstractContextManager[object]:
        """The farm lock for a sweep; a run on the phones at hand takes none (a nightly sweep must not stop a
        developer's run, and the two never share a run directory)."""
        if self.req.kind == "run":
            return nullcontext()
        return farm_lock(lock_path(self.runs_dir), run_id=run_id, label=self.req.label, command=self.req.command)

    def _load_executor(self) -> Executor:
        """The request's executor, loaded once (before anything is written: a host run without a model is
        refused there)."""
        if self.executor is None:
            self.executor = load_executor(self.req.executor, self.cfg, self.req.host)
        return self.executor

    def _tasks(self) -> list[LoadedTask]:
        if not self.tasks_dir.is_dir():
            raise FarmError(f"{self.tasks_dir}: no such task directory", hint="pass --tasks-dir DIR")
        tasks = select_valid_tasks(self.tasks_dir, self.req.agent.split, self.req.agent.set_prefix, whole_set=False,
                                   selection=self.req.selection)
        if not tasks:
            raise FarmError(f"{self.tasks_dir}: no task matches split={self.req.agent.split}")
        return tasks

    def _identity(self, tasks: list[LoadedTask]) -> dict[str, str]:
        ident = sweep_identity(mf.code_fingerprint(), [(t.task.id, t.sha256) for t in tasks],
                               mf.redact(self.cfg.model_dump(mode="json")), self.req.identity_options())
        return ident.meta()

    def _opts(self) -> RunOptions:
        return RunOptions.resolve(self.req.agent, self.cfg, self.req.profile, idle_timeout_s=self.req.idle_timeout_s,
                                  deadline_s=self.req.deadline_s, started=time.monotonic())

    def _request_json(self) -> str:
        """What a resume needs to continue this sweep without being told again: the options that choose and
        measure its units, how it is scheduled, and the task set, farm.yaml and probe catalogue it read (absolute,
        so a resume from another directory finds them; `config` null: it read none, the defaults)."""
        req = self.req
        config = config_file(req.config)
        return json.dumps({
            **req.identity_options(), "kind": req.kind, "all_phones": req.all_phones, "deadline_s": req.deadline_s,
            "label": req.label, "max_tries": req.max_tries, "quarantine_after": req.quarantine_after,
            "fail_under": req.fail_under, "idle_timeout_s": req.idle_timeout_s,
            "tasks_dir": str(self.tasks_dir.resolve()), "config": str(config.resolve()) if config else None,
            "probes_dir": str(req.probes_dir.resolve()) if req.probes_dir else None,
        }, sort_keys=True)

    def _new(self, run_id: str, tasks: list[LoadedTask], *, existing: bool = False) -> SweepResult:
        """Plan and run a sweep; `existing`: its run directory was made by a start that stopped before its
        journal was written (the plan is made again, skip records already written are not repeated)."""
        req, opts = self.req, self._opts()
        if req.kind == "sweep":
            _say(req, f"sweep {run_id}: discovering phones")
        fleet = gather_fleet(self.cfg, req, opts, tasks, run_id, leases=self._leases(run_id))
        self._say_lost(fleet)
        self._say_busy(fleet)
        if not fleet.slots:
            why = ([left_out(h) for h in fleet.healths if not h.ok] + fleet.unreachable
                   + [b.line() for b in fleet.busy])
            raise FarmError(f"no healthy phone on any adb server ({'; '.join(why) or 'none found'})",
                            hint="see `farm devices`; nothing was started")
        earlier = [d for d in self.runs_dir.iterdir() if is_run_dir(d)] if self.runs_dir.is_dir() else []
        units, skips = plan_units([t.task.id for t in tasks], fleet.plans, spread=req.spread, repeats=req.repeats,
                                  estimates=history_estimates(earlier))
        set_wide = set_wide_note(self.tasks_dir)  # a small set runs, but its coverage gaps are named
        if set_wide:
            print(f"warning: {set_wide}", file=sys.stderr, flush=True)
        manifest = mf.Manifest(
            run_id=run_id, created_at=mf.utc_now(), command=req.command, code=mf.code_fingerprint(),
            config=mf.redact(self.cfg.model_dump(mode="json")), label=req.label,
            tasks=[mf.TaskEntry(id=t.task.id, sha256=t.sha256) for t in tasks],
            # Before any unit: which versions of the agent app and of the tasks' apps the results come from.
            phones=phone_entries(fleet, fleet_versions(
                fleet, opts.profile.package if req.executor == "instrument" else None)),
            notes=[f"adb server unreachable: {u}" for u in fleet.unreachable] + fleet.duplicates
            + ([set_wide] if set_wide else []) + lease_notes(fleet),
        )
        saved = self._request_json()
        entry = mf.LaneEntry(lane="android", outputs=[RECORDS_FILE], detail={
            "kind": req.kind, "spread": req.spread, "repeats": req.repeats, "executor": req.executor,
            "split": req.agent.split, "set": req.agent.set_prefix, "profile": opts.profile_name,
            "allow_irreversible": req.agent.allow_irreversible, "request": json.loads(saved),
            # Every planned unit is in the headline's denominator, those a stop left without a record too.
            "planned_units": planned_units(tasks, [u.task_id for u in units] + [s.task_id for s in skips]),
        })
        store, created = RunStore.join(self.runs_dir, run_id, entry, new=lambda: manifest)
        run_dir = self.run_dir = store.run_dir
        if not created:
            # Joining a run of other lanes (or planning a stopped start again): the phones, tasks and settings
            # are the android lane's; whatever the other lanes wrote stays.
            store.update(lambda m: adopt(m, manifest, existing=existing))
        by_id = {t.task.id: t for t in tasks}
        # Skips go before the journal: a journal's existence means every skip record is written.
        store.append_new(skip_record(self._skip_context(run_id, s.device, opts), by_id[s.task_id], s.reason,
                                     repeat=s.repeat) for s in skips)
        # The journal is on disk like the manifest: the request goes there without credentials too.
        request = json.dumps(redact(json.loads(saved)), sort_keys=True)
        journal = self.journal = Journal.create(run_dir, {**self._identity(tasks), "request": request}, units)
        if req.retry_from:
            self._reuse(journal, run_dir, req.retry_from, tasks)
        return self._dispatch(journal, run_dir, run_id, tasks, fleet, opts)

    def _resume(self) -> SweepResult:
        run_id = self.req.run_id
        if not run_id:
            raise FarmError("--resume: which run?", hint="farm sweep --resume RUN")
        run_dir = self.runs_dir / run_id
        if not run_dir.is_dir():
            raise FarmError(f"{run_dir}: no such run", hint="pass a run id from the runs directory")
        saved = saved_request(run_dir)
        if saved is None:
            raise FarmError(f"{run_dir}: nothing to resume there",
                            hint="only a run started by `farm run` or `farm sweep` can be resumed")
        if REDACTED in saved:
            raise FarmError(f"{run_id}: cannot resume: its options held a credential, which was not kept",
                            hint=f"start a new run that reuses its finished units: --retry-from {run_id} --run NEW")
        given = self.req
        self.req = request_from(saved, given)
        # The stopped sweep's farm.yaml and task set, unless the command line names others (the identity check
        # below still refuses different contents); where the runs are stays what found this one.
        self.cfg = resume_config(saved, given.config)
        self.tasks_dir = self.req.tasks_dir or Path(self.cfg.tasks_dir)
        self._load_executor()
        self.run_dir = run_dir
        if not is_complete(run_dir):
            # Stopped before its queue was written: nothing ran yet, so plan it again under the same id.
            tasks = self._tasks()
            with self._lock(run_id), self._stops_on_full_disk():
                return self._new(run_id, tasks, existing=True)
        journal = self.journal = Journal.open(run_dir)
        meta = journal.meta()
        tasks = self._tasks()
        with self._lock(run_id), self._stops_on_full_disk():
            mine = self._identity(tasks)
            differ = [k for k in ("code", "tasks", "config") if meta.get(k) != mine[k]]
            if differ:
                raise FarmError(
                    f"{run_id}: cannot resume: {', '.join(differ)} differ from the stopped run",
                    hint=f"start a new run that reuses its finished units: --retry-from {run_id} --run NEW",
                )
            opts = self._opts()
            fleet = gather_fleet(self.cfg, self.req, opts, tasks, run_id, leases=self._leases(run_id))
            self._say_lost(fleet)
            self._say_busy(fleet)
            if not fleet.slots:
                busy = "".join(f"; {b.line()}" for b in fleet.busy)
                raise FarmError(f"{run_id}: no healthy phone to resume on{busy}",
                                hint="see `farm devices`; nothing changed")
            if fleet.unreachable or fleet.busy or fleet.took_over:
                mf.update(run_dir, lambda m: m.notes.extend(
                    n for n in [f"adb server unreachable: {u}" for u in fleet.unreachable] + lease_notes(fleet)
                    if n not in m.notes))
            kept = reconcile(journal, run_dir)
            collected = collect_leased(journal, run_dir, fleet, executor=self.req.executor, opts=opts,
                                       run_id=run_id, execution=self._execution(opts), limits=self.cfg.pull)
            for lease in journal.leased():
                journal.interrupted(lease, STOPPED)
            again = journal.requeue_unfinished()
            _say(self.req, f"resume {run_id}: {journal.counts()['done']} units kept"
                           + (f", {kept} found recorded" if kept else "")
                           + (f", {len(collected.records)} collected from their tries" if collected.records else "")
                           + (f", {again} unfinished queued again" if again else ""))
            if collected.refused:
                mf.update(run_dir, lambda m: m.notes.extend(f"resume: pull refused {e}" for e in collected.refused))
            mf.update(run_dir, lambda m: setattr(m, "status", "running"))
            return self._dispatch(journal, run_dir, run_id, tasks, fleet, opts)

    # -- pieces ---------------------------------------------------------------------------------------
    def _execution(self, opts: RunOptions) -> Execution:
        return "simulated" if opts.profile_name == "sim" else "live"

    def _skip_context(self, run_id: str, device: str, opts: RunOptions) -> Context:
        return Context(run=run_id, device=device, split=self.req.agent.split, executor=self.req.executor,
                       execution=self._execution(opts))

    def _reuse(self, journal: Journal, run_dir: Path, old_id: str, tasks: list[LoadedTask]) -> None:
        old_dir = self.runs_dir / old_id
        old = Journal.open(old_dir)
        old_tasks = {t.id: t.sha256 for t in mf.load(old_dir).tasks}
        mine = {t.task.id: t.sha256 for t in tasks}
        done = {u.unit_id: u for u in old.units("done")}
        old.close()
        finals: dict[str, Record] = {}
        for old_rec in RunStore(old_dir).iter_records(ReadProblems()):
            named = old_rec.extra.get("unit")
            if isinstance(named, str) and named in done:
                finals[named] = old_rec
        reused: list[Record] = []
        for unit in journal.units("pending"):
            rec = finals.get(unit.unit_id)
            if rec is None or old_tasks.get(unit.task_id) != mine.get(unit.task_id):
                continue
            reused.append(rec.model_copy(update={"run": run_dir.name, "extra": {**rec.extra, "reusedFrom": old_id}}))
            journal.reused(unit.unit_id, rec.device, rec.outcome, rec.passed, old_id)
        RunStore(run_dir).append(reused)

        def change(m: mf.Manifest) -> None:
            m.provenance, m.reused_from = "mixed", old_id
            m.notes.append(f"mixed provenance: {len(reused)} finished units reused from {old_id}")

        mf.update(run_dir, change)
        _say(self.req, f"reused {len(reused)} finished units from {old_id} (mixed provenance)")

    def _dispatch(
        self, journal: Journal, run_dir: Path, run_id: str, tasks: list[LoadedTask], fleet: Fleet, opts: RunOptions,
    ) -> SweepResult:
        req = self.req
        executor = self._load_executor()
        total = sum(journal.counts().values())
        bars = make_progress(req.show_progress and req.kind == "run")

        c = journal.counts()
        # Units finished before (a resume): the first record now is the next one, so lines count 1…N.
        finished = [c["done"] + c["unfinished"]]
        counting = threading.Lock()

        def on_record(rec: Record) -> None:
            # Called from each phone's worker once its unit's record is written (a unit has one final record).
            if bars is not None:
                sink = sinks.get(rec.device)
                if isinstance(sink, PhoneProgress):
                    sink.recorded(rec)
                return
            with counting:
                finished[0] += 1
                done = finished[0]
            _say(req, record_line(done, total, rec,
                                  fleet.slots[rec.device].label if rec.device in fleet.slots else rec.device))

        def refresh(serials: set[str]) -> Fleet:
            return gather_fleet(self.cfg, req, opts, tasks, run_id, only=serials, leases=self._leases(run_id))

        def stopping(name: str) -> None:
            # Said even with --quiet: the user asked for the stop and needs the way back.
            noun = "tasks" if req.kind == "run" else "units"
            say(f"{name}: no new {noun}; running {noun} finish. Resume with: {req.resume_command(run_id)}")

        sinks = _phone_bars(bars, journal, fleet, executor.name) if bars is not None else {}
        dispatcher = Dispatcher(journal, fleet, executor, opts, run_id=run_id, run_dir=run_dir,
                                execution=self._execution(opts), req=req, refresh=refresh, stop=self.stop,
                                on_record=on_record, sinks=sinks, leases=self.leases,
                                join=lambda back: self._join(journal, run_dir, run_id, tasks, back, opts))
        # Space in hand for the writes of a stop, should the disk fill while units run (released in `run`).
        self.reserve = SpaceReserve.hold(run_dir)
        if bars is not None:
            bars.start()
        try:
            with stop_on_signals(self.stop, stopping):
                dispatcher.run()
        finally:
            executor.close()
            if bars is not None:
                bars.stop()
        if dispatcher.full is not None:
            # A worker met the full disk: nothing more is written but the stop (`_full_disk_stop`).
            raise dispatcher.full
        return self._finish(journal, run_dir, run_id, tasks, opts, dispatcher.notes, fleet)

    def _join(
        self, journal: Journal, run_dir: Path, run_id: str, tasks: list[LoadedTask], back: Fleet, opts: RunOptions,
    ) -> None:
        """Phones taken up during the run: in the manifest; with `every-phone`, each runs every task it can, so
        their units (and skips) are planned now and counted in the headline's denominator."""
        joined = [h for h in back.healths if h.serial in back.slots]
        units, skips = (plan_units([t.task.id for t in tasks], back.plans, spread="every-phone",
                                   repeats=self.req.repeats, estimates=Estimates())
                        if self.req.spread == "every-phone" else ([], []))
        by_id = {t.task.id: t for t in tasks}
        RunStore(run_dir).append_new(skip_record(self._skip_context(run_id, s.device, opts), by_id[s.task_id],
                                                 s.reason, repeat=s.repeat) for s in skips)
        journal.add_units(units)
        more = planned_units(tasks, [u.task_id for u in units] + [s.task_id for s in skips])

        def change(m: mf.Manifest) -> None:
            known = {p.serial for p in m.phones}
            m.phones += [e for e in phone_entries(Fleet(healths=joined)) if e.serial not in known]
            lane = android_lane(m)
            plan = lane.detail.get("planned_units")
            counts = dict(plan) if isinstance(plan, dict) else {}
            for part, n in more.items():
                before = counts.get(part)
                counts[part] = (before if isinstance(before, int) else 0) + (n if isinstance(n, int) else 0)
            lane.detail["planned_units"] = dict(counts)

        mf.update(run_dir, change)

    def _finish(
        self, journal: Journal, run_dir: Path, run_id: str, tasks: list[LoadedTask], opts: RunOptions,
        notes: list[str], fleet: Fleet,
    ) -> SweepResult:
        interrupted = self.stop.is_set()
        quarantined = journal.quarantined()
        if not interrupted:
            # Nothing can take what is left: each such unit gets its error record, never a failure; once. A unit
            # with a record of this attempt or a later one already (the placeholder a sweep or resume without its
            # phone wrote before) needs none: a resume that ran nothing writes nothing.
            by_id = {t.task.id: t for t in tasks}
            pending = journal.units("pending")
            why = "unfinished: run deadline passed" if opts.past_deadline() else None
            recorded = _recorded_attempts(run_dir)
            RunStore(run_dir).append(self._never_ran(run_id, u, by_id[u.task_id], quarantined, opts, why)
                                     for u in pending if recorded.get(u.unit_id, 0) < max(1, u.tries))
            for u in pending:
                journal.give_up(u.unit_id, why or "no phone could run it")
        counts = journal.counts()
        status, short = run_status(journal, self.req.max_tries)
        journal.close()
        from farm.lane_plugins import install as install_lane_plugins
        from farm.report.build import build
        from farm.report.headline import headline, headline_text

        install_lane_plugins()

        unfinished = counts["unfinished"] + counts["pending"] + counts["leased"]

        sources = summary_sources(run_dir)

        def change(m: mf.Manifest) -> None:
            # A resume finds the same phones quarantined: a note already there is not written again.
            told = notes + [f"quarantined {serial}: {'; '.join(why)}" for serial, why in quarantined.items()]
            m.notes += [n for n in dict.fromkeys(told) if n not in m.notes]
            # From the journal, not from how this process ended: units a lost phone left unfinished leave the run
            # resumable (`interrupted`, exit 3) as a stop does.
            m.status = status
            m.finished_at = mf.utc_now() if status == "finished" else None
            # Named once, before the reports: they read re-judgements only from named files.
            lane = android_lane(m)
            known = {(s.path, s.device) for s in lane.override_sources}
            lane.override_sources += [s for s in sources if (s.path, s.device) not in known]

        # The status first: the reports' headline reads it.
        mf.update(run_dir, change)
        links = self._history(run_id) if self.req.label and not interrupted else []
        built = build([run_dir], links=[f"{Path(os.path.relpath(p, run_dir)).as_posix()} (night over night)"
                                        for p in links if p.suffix == ".md"])
        reports = built.paths
        # The android lane's own numbers: a run it shares with other lanes keeps theirs out of its exit status.
        records = [r for r in RunStore(run_dir).iter_records(ReadProblems()) if r.lane == "android"]
        head = headline(records)
        rate = built.data.overall.rate
        mf.update(run_dir, lambda m: setattr(android_lane(m), "outputs", sorted(
            {*android_lane(m).outputs, *(str(p.relative_to(run_dir)) for p in reports)})))
        if interrupted:
            print(f"stopped: {counts['done']} units kept, {unfinished} not finished; "
                  f"resume with: {self.req.resume_command(run_id)}", file=sys.stderr, flush=True)
        # Units that used every try are infrastructure errors (exit 5), not "left unfinished" (exit 3): `run_status`.
        code = exit_status(unfinished=short, attempted=head.attempted, passed=head.passed, errors=head.errors,
                           fail_under=self.req.fail_under,
                           # A stop (Ctrl-C, SIGTERM, a full disk, a provider's refusal) says 3 whatever else held.
                           lost_hosts=0 if interrupted else len(fleet.lost))
        phones = [PhoneRecords(serial, fleet.caption(serial), [r for r in records if r.device == serial])
                  for serial, slot in sorted(fleet.slots.items(), key=lambda kv: kv[1].label)]
        return SweepResult(run_id, run_dir, counts, interrupted, code, reports, quarantined, notes, rate, links,
                           phones, [h for h in fleet.healths if not h.ok],
                           headline_text(built.data.overall, hidden_holdout=built.data.hidden_holdout_attempts))

    def _say_busy(self, fleet: Fleet) -> None:
        """One line per phone another run holds (it joins when free) and per dead holder's lease taken over."""
        for busy in fleet.busy:
            print(f"{busy.line()}; going on without it, it joins when free", file=sys.stderr, flush=True)
        for line in fleet.took_over:
            print(line, file=sys.stderr, flush=True)

    def _say_lost(self, fleet: Fleet) -> None:
        """One line per lost host, at once and even with --quiet: the host and the phones it had on its last run."""
        from farm.android.adb_hosts import last_seen, lost_host_line

        if not fleet.lost:
            return
        addresses = [u.address for u in fleet.lost]
        seen = last_seen(self.runs_dir, addresses, label=self.req.label)
        seen |= last_seen(self.runs_dir, [a for a in addresses if a not in seen])
        for u in fleet.lost:
            print(lost_host_line(u, seen.get(u.address)), file=sys.stderr, flush=True)

    def _history(self, run_id: str) -> list[Path]:
        """`farm history` for this sweep's label, up to this night (its paths; none when it cannot be made)."""
        from farm.report.history import default_out_dir, write_history
        from farm.report.history_data import load_history

        try:
            history = load_history(self.runs_dir, label=self.req.label)
            return write_history(history, default_out_dir(self.runs_dir, self.req.label, run_id))
        except FarmError as exc:
            _say(self.req, f"history not written: {exc.line()}")
            return []

    def _never_ran(
        self, run_id: str, unit: UnitRow, loaded: LoadedTask, quarantined: dict[str, list[str]], opts: RunOptions,
        why: str | None = None,
    ) -> Record:
        phone = unit.pin or "any"
        if why is None:
            why = f"never ran: phone quarantined ({'; '.join(quarantined[phone])})" if phone in quarantined \
                else "never ran: no eligible phone was left"
        ctx = Context(run=run_id, device=phone, split=self.req.agent.split, executor=self.req.executor,
                      execution=self._execution(opts), attempt=max(1, unit.tries),
                      categories={loaded.task.id: loaded.directory})
        # It stands for the unit until a resume runs it: that try's record supersedes it (same attempt, a later
        # line; or a higher attempt), and `reconcile` never takes it for the end of a try.
        return error_record(ctx, loaded.task.id, why, source="harness", partition=loaded.task.partition,
                            expect=loaded.task.expect).model_copy(update={
                                "repeat": unit.repeat, "extra": {"unit": unit.unit_id, PLACEHOLDER: True}})


def _phone_bars(bars: Progress, journal: Journal, fleet: Fleet, executor: str) -> dict[str, ProgressSink]:
    """A progress bar per phone, its total the units pinned to it (a run spreads every task on every phone)."""
    pinned: dict[str, int] = {}
    for unit in journal.units():
        pinned[unit.pin or ""] = pinned.get(unit.pin or "", 0) + 1
    return {serial: PhoneProgress(bars, fleet.caption(serial), pinned.get(serial, 0), claimed=executor == "instrument")
            for serial, slot in sorted(fleet.slots.items(), key=lambda kv: kv[1].label)}


def _recorded_attempts(run_dir: Path) -> dict[str, int]:
    """The highest attempt recorded of each unit (by its journal id)."""
    highest: dict[str, int] = {}
    for rec in RunStore(run_dir).iter_records(ReadProblems()):
        unit = rec.extra.get("unit")
        if isinstance(unit, str):
            highest[unit] = max(highest.get(unit, 0), rec.attempt)
    return highest


def sweep(req: SweepRequest) -> SweepResult:
    """Run (or resume) a sweep end to end."""
    return Sweep(req).run()
