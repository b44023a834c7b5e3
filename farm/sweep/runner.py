"""`farm sweep`: every unit of a sweep on every healthy phone of every host, from one durable queue.

One worker thread per phone pulls its next unit from the journal (its own pinned units, and the
unpinned units of tasks it can run), runs it, and appends the unit's record the moment it is
scored. An infrastructure failure puts the unit back on the queue for another eligible phone (at
most `max_tries` tries, each kept in the journal); an agent failure is a result, never retried. A
phone with `quarantine_after` infrastructure failures in a row is quarantined for the rest of the
sweep and re-admitted when it passes the health gate again. Ctrl-C or SIGTERM stops dispatch;
running units finish and the run is left `interrupted`, to be continued with `--resume`.

A full disk (ENOSPC anywhere: a record, the journal, a try's tree) stops dispatch too, once: the first worker
(or the controller) to meet it keeps the error in `Dispatcher.full` and sets `stop`; every other worker that meets
it stops without a word. Units in flight stay leased in the journal, never recorded as errors: a resume collects
what their tries left and runs the rest again.
"""

from __future__ import annotations

import errno
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from farm.android import devices, health
from farm.android.executor import Executor, NullProgress, ProgressSink, ResolvedTask
from farm.android.options import RunOptions
from farm.android.prepare import PhoneFacts, Resolver, installed_packages, prepare, signed_in
from farm.config import FarmConfig
from farm.disk_space import NEARLY_FULL_BYTES, free_bytes, is_disk_full, says_disk_full
from farm.errors import FarmError
from farm.leases import Leases, PhoneKey, Taken
from farm.phone_name import caption
from farm.results.record import Execution, Record
from farm.results.store import RunStore
from farm.sweep.journal import Journal, Lease
from farm.sweep.phone_leases import BusyPhone, lease_phones, phone_key
from farm.sweep.plan import PhonePlan
from farm.sweep.request import SweepRequest
from farm.sweep.unit_run import PhoneSlot, UnitResult, run_units
from farm.taskset.loader import LoadedTask
from farm.taskset.probes import load_catalogue

PICK_UP_S = 2.0
"""How often the phones another holder had are looked at (a lease file read each; a gate once one is free)."""
WAIT_S = 0.2
"""How often an idle worker looks again while a unit it may take is held back for another phone."""


@dataclass
class Fleet:
    """The phones of a sweep: healthy slots by serial, and what the gate said of each phone it saw."""

    slots: dict[str, PhoneSlot] = field(default_factory=dict)
    plans: list[PhonePlan] = field(default_factory=list)
    healths: list[health.PhoneHealth] = field(default_factory=list)
    unreachable: list[str] = field(default_factory=list)
    """adb servers that did not answer (`host:port: why`)."""
    lost: list[devices.UnreachableServer] = field(default_factory=list)
    """The lost hosts: servers farm.yaml lists that did not answer."""
    duplicates: list[str] = field(default_factory=list)
    """Serials listed by more than one adb server, and what was made of them (one phone, or several named apart)."""
    busy: list[BusyPhone] = field(default_factory=list)
    """Phones another run or sweep holds (`farm.leases`): not touched; taken up once free."""
    took_over: list[str] = field(default_factory=list)
    """Leases of dead holders this run took over, one line each."""
    keys: dict[str, PhoneKey] = field(default_factory=dict)
    """Serial → the lease key of each phone in `slots`."""

    def caption(self, serial: str) -> str:
        """`<name> (<serial> on <adb server>)`: the phone as the per-phone lines and progress bars show it."""
        h = next((h for h in self.healths if h.serial == serial), None)
        slot = self.slots.get(serial)
        name = slot.label if slot is not None else (h.name if h is not None and h.name else serial)
        return caption(name, serial, h.server if h is not None else "")


def hardware_id(phone: devices.FoundPhone) -> str | None:
    """What tells two phones apart whatever adb calls them: `ro.serialno` and the android_id (None when the
    phone cannot be asked)."""
    if phone.state != "device":
        return None
    try:
        out = devices.shell(phone.device(), ["sh", "-c", "getprop ro.serialno; settings get secure android_id"],
                            timeout=10)
    except Exception:  # noqa: BLE001 - a phone that cannot answer is told apart by its server
        return None
    ident = " ".join(out.split())
    return ident or None


def name_apart(
    found: list[devices.FoundPhone], notes: list[str],
    identity: Callable[[devices.FoundPhone], str | None] = hardware_id,
) -> list[devices.FoundPhone]:
    """One entry per phone. A serial listed by several adb servers is either one network phone connected from
    several hosts (same hardware: the first server's listing is used) or different phones that share a name
    (two hosts' `emulator-5554`: each is named `<serial>@<host:port>`, so units and records keep them apart)."""
    by_serial: dict[str, list[devices.FoundPhone]] = {}
    for phone in found:
        by_serial.setdefault(phone.serial, []).append(phone)
    out: list[devices.FoundPhone] = []
    for serial, listings in by_serial.items():
        if len(listings) == 1:
            out += listings
            continue
        servers = ", ".join(p.server.address() for p in listings)
        idents = [identity(p) for p in listings]
        if idents[0] is not None and all(i == idents[0] for i in idents):
            notes.append(f"{serial}: listed by {servers}; one phone (same hardware), the first server's is used")
            out.append(listings[0])
            continue
        named = [replace(p, serial=f"{serial}@{p.server.address()}", adb_serial=serial) for p in listings]
        notes.append(f"{serial}: different phones on {servers}; named {', '.join(p.serial for p in named)}")
        out += named
    return out


def gather_fleet(
    cfg: FarmConfig, req: SweepRequest, opts: RunOptions, tasks: list[LoadedTask], run_id: str,
    only: set[str] | None = None, leases: Leases | None = None,
) -> Fleet:
    """Discover phones on every adb server, lease them (`leases`: a phone another holder has is left alone),
    gate their health, resolve every task on the healthy ones. A leased phone left out is let go again."""
    fleet = Fleet()
    # A developer's run stops at a listed server that does not answer; a sweep (or a re-check) goes on without it.
    strict = req.kind == "run" and only is None
    discovery = devices.discover_all(cfg)
    if strict:
        discovery.require_all()
    fleet.lost, fleet.unreachable = discovery.lost, discovery.lost_notes()
    found = name_apart(discovery.phones, fleet.duplicates)
    if only is not None:
        found = [p for p in found if p.serial in only]
    elif req.kind == "run":
        # A developer's run: the phone named, the only phone there is, or every phone with --all.
        found = devices.select(found, req.serials, req.all_phones)
    elif req.serials:
        found = [p for p in found if p.serial in req.serials]
    if leases is not None:
        # A developer who named the phone (or has only one) is told who has it; a sweep or --all goes on without it.
        refuse = strict and (bool(req.serials) or not req.all_phones)
        found, fleet.busy, fleet.took_over = lease_phones(found, leases, refuse=refuse, wait=strict and req.wait,
                                                          say=lambda t: print(t, file=sys.stderr, flush=True))
    gate = opts.profile if req.executor == "instrument" else None
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(found)))) as pool:
        fleet.healths = list(pool.map(lambda p: health.check(p, cfg.health, gate), found))
    health.name_phones(fleet.healths, cfg.phone_labels)
    catalogue = load_catalogue(req.probes_dir)

    def resolve(phone: devices.FoundPhone) -> tuple[PhoneSlot, PhonePlan] | None:
        device = phone.device()
        try:
            facts = PhoneFacts(installed_packages(device), signed_in(device, phone.on_server, cfg, opts.profile))
            resolver = Resolver(device, facts, catalogue, run=run_id, allow_irreversible=opts.agent.allow_irreversible)
            prepared = prepare(resolver, tasks)
        except Exception as exc:  # noqa: BLE001 - a phone that cannot be prepared is left out, the others go on
            gate_said = next(h for h in fleet.healths if h.serial == phone.serial)
            gate_said.ok = False
            gate_said.reason = "could not be prepared: " + (
                exc.line() if isinstance(exc, FarmError) else f"{type(exc).__name__}: {exc}")
            return None
        resolved: dict[str, ResolvedTask] = {t.id: t for t in prepared.tasks}
        model = next((h.model for h in fleet.healths if h.serial == phone.serial), None)
        plan = PhonePlan(phone.serial, model, frozenset(resolved), {lt.task.id: why for lt, why in prepared.skipped})
        name = next(h.name for h in fleet.healths if h.serial == phone.serial) or phone.serial
        return PhoneSlot(phone.serial, name, device, resolved), plan

    healthy = [p for p, h in zip(found, fleet.healths, strict=True) if h.ok]
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(healthy)))) as pool:
        for got in pool.map(resolve, healthy):
            if got is not None:
                fleet.slots[got[0].serial] = got[0]
                fleet.plans.append(got[1])
    for phone in found:
        if phone.serial in fleet.slots:
            fleet.keys[phone.serial] = phone_key(phone)
        elif leases is not None:
            leases.release(phone_key(phone))  # left out: not driven, so not held
    return fleet


class Dispatcher:
    """Runs a journal's units on a fleet until nothing is left that a phone can take (or `stop` is set)."""

    def __init__(
        self, journal: Journal, fleet: Fleet, executor: Executor, opts: RunOptions, *, run_id: str, run_dir: Path,
        execution: Execution, req: SweepRequest, refresh: Callable[[set[str]], Fleet], stop: threading.Event,
        on_record: Callable[[Record], None] = lambda _r: None, sinks: dict[str, ProgressSink] | None = None,
        leases: Leases | None = None, join: Callable[[Fleet], None] = lambda _f: None,
    ) -> None:
        self.journal, self.fleet, self.executor, self.opts = journal, fleet, executor, opts
        self.run_id, self.run_dir, self.execution, self.req = run_id, run_dir, execution, req
        self.refresh, self.stop, self.on_record = refresh, stop, on_record
        self.sinks = sinks or {}
        """Progress of each phone's executor (none: a line per record is enough)."""
        self.store = RunStore(run_dir)
        self._append_lock = threading.Lock()
        self._threads: dict[str, threading.Thread] = {}
        self.notes: list[str] = []
        self.full: BaseException | None = None
        """The first full-disk error any worker (or the controller) met; dispatch stopped there."""
        self._full_lock = threading.Lock()
        self.provider_stopped: str | None = None
        """Why a model provider refused (quota, auth): dispatch stopped there, the units wait for --resume."""
        self.leases = leases
        """The phones this run holds: a worker that ends lets its phone go; a busy phone is taken once free."""
        self.join = join
        """Called with the phones taken up during the run, before their workers start (plans their units)."""
        self._last_pick = time.monotonic()
        self._hosts_asked: set[str] = set()

    def run(self) -> None:
        """Start a worker per phone; re-admit quarantined phones that pass the gate; return when done (or, on a
        full disk, once every worker has stopped: see `full`)."""
        try:
            self._loop()
        except Exception as exc:
            if not is_disk_full(exc):
                raise
            self._disk_full(exc)
            # Workers still running finish their units' tries and stop; the caller writes the stop after them.
            for thread in list(self._threads.values()):
                thread.join()

    def _provider_stop(self, why: str) -> None:
        """Stop dispatch once for a model provider's refusal (quota, auth): said at once, kept in the notes."""
        with self._append_lock:
            first = self.provider_stopped is None
            if first:
                self.provider_stopped = why
                self.notes.append(f"stopped dispatch: {why}")
        if first:
            print(f"stopping dispatch: {why}; the units left are kept for --resume", file=sys.stderr, flush=True)
        self.stop.set()

    def _check_host(self, serial: str) -> None:
        """After a phone's try failed for the infrastructure: is its adb server still there? A server that stopped
        answering during the run is a lost host, said at once in one line naming it and this run's phones on it,
        noted for the report, and the run's exit status says so (`farm.exits.EXIT_HOST_LOST`)."""
        from farm.config import AdbServer

        key = self.fleet.keys.get(serial)
        if key is None:
            return
        address = key.server
        with self._append_lock:
            # Asked once at a time per server, and never again once it is lost.
            if address in self._hosts_asked or any(u.address == address for u in self.fleet.lost):
                return
            self._hosts_asked.add(address)
        try:
            host, _, port = address.rpartition(":")
            _phones, down = devices.ask_server(AdbServer(host=host, port=int(port)), listed=True)
        finally:
            with self._append_lock:
                self._hosts_asked.discard(address)
        if down is None:
            return
        with self._append_lock:
            self.fleet.lost.append(down)
            self.notes.append(f"adb server unreachable: {address}: {' '.join(down.detail.split())[:120]} "
                              "(lost during the run)")
        had = ", ".join(self.fleet.caption(s) for s, k in self.fleet.keys.items() if k.server == address)
        print(f"adb server {address} unreachable during the run: {down.error} — its phones in this run: {had}",
              file=sys.stderr, flush=True)

    def _disk_full(self, exc: BaseException) -> None:
        """Stop dispatch for a full disk: the first error is kept (the caller says it once), later ones are quiet."""
        with self._full_lock:
            if self.full is None:
                self.full = exc
        self.stop.set()

    def _loop(self) -> None:
        for serial in self.fleet.slots:
            self.journal.add_phone(serial, "", next((p.model for p in self.fleet.plans if p.serial == serial), None))
            self._start(serial)
        last_check = time.monotonic()
        while True:
            alive = [s for s, t in self._threads.items() if t.is_alive()]
            if not alive:
                if self.stop.is_set() or self.opts.past_deadline() or not self._readmit():
                    return
                continue
            if time.monotonic() - last_check > self.req.recheck_s:
                last_check = time.monotonic()
                self._readmit()
            if time.monotonic() - self._last_pick > min(PICK_UP_S, self.req.recheck_s):
                self._last_pick = time.monotonic()
                self._pick_up()
            time.sleep(WAIT_S)

    def _start(self, serial: str) -> None:
        thread = threading.Thread(target=self._worker, args=(serial,), name=f"sweep-{serial}", daemon=True)
        self._threads[serial] = thread
        thread.start()

    def _readmit(self) -> bool:
        """Health-check quarantined phones that pending units still need; start workers for those that pass."""
        states = self.journal.phone_states()
        # A worker still settling its last batch is not waiting yet.
        waiting = {s for s, st in states.items() if st != "active" and not self._alive(s)}
        if not waiting or not self.journal.counts()["pending"]:
            return False
        back = self.refresh(waiting)
        for serial, slot in back.slots.items():
            known = self.fleet.slots.get(serial)
            # Keep the name the phone had (a name two phones would share is made apart over the whole fleet).
            self.fleet.slots[serial] = replace(slot, label=known.label) if known else slot
            self.fleet.keys.update(back.keys)
            self.journal.add_phone(serial, "", None)
            self.notes.append(f"{self.fleet.slots[serial].label}: re-admitted after a health check")
            self._start(serial)
        return bool(back.slots)

    def _pick_up(self) -> None:
        """Take up the phones another holder had once their leases are free: lease, gate, plan (`join`), start."""
        if self.leases is None or not self.fleet.busy or self.stop.is_set() or self.opts.past_deadline():
            return
        free = {b.serial for b in self.fleet.busy if isinstance(self.leases.take(b.busy.key), Taken)}
        if not free:
            return
        back = self.refresh(free)
        self.fleet.busy = [b for b in self.fleet.busy if b.serial not in free] + back.busy
        for h in back.healths:
            if not h.ok:
                self.notes.append(f"{h.serial}: free of its lease but left out ({h.reason})")
        if not back.slots:
            return
        self.fleet.healths += [h for h in back.healths if h.serial in back.slots]
        self.fleet.plans += back.plans
        self.fleet.slots.update(back.slots)
        self.fleet.keys.update(back.keys)
        self.join(back)
        for serial, slot in back.slots.items():
            self.journal.add_phone(serial, "", next((p.model for p in back.plans if p.serial == serial), None))
            self.notes.append(f"{slot.label}: joined once its lease was free")
            print(f"{self.fleet.caption(serial)}: free now; the {self.req.kind} uses it", file=sys.stderr,
                  flush=True)
            self._start(serial)

    def _alive(self, serial: str) -> bool:
        thread = self._threads.get(serial)
        return thread is not None and thread.is_alive()

    def _others_active(self, serial: str) -> bool:
        return any(t.is_alive() for s, t in self._threads.items() if s != serial)

    def _could_take(self, serial: str) -> bool:
        slot = self.fleet.slots[serial]
        return any(
            u.pin == serial or (not u.pin and u.task_id in slot.resolved) for u in self.journal.units("pending")
        )

    def _worker(self, serial: str) -> None:
        try:
            self._work(serial)
        except Exception as exc:
            if not is_disk_full(exc):
                raise
            # Whatever this worker held stays leased in the journal (the resume takes it up); no thread error.
            self._disk_full(exc)
        finally:
            key = self.fleet.keys.get(serial)
            if self.leases is not None and key is not None:
                # Done with the phone (or it was quarantined): another run may have it; a re-admission leases again.
                self.leases.release(key)

    def _work(self, serial: str) -> None:
        slot = self.fleet.slots[serial]
        size = self.req.batch if self.executor.name == "instrument" else 1
        while not self.stop.is_set() and not self.opts.past_deadline():
            others = self._others_active(serial)
            lease = self.journal.lease(serial, slot.resolved.keys(), others_active=others)
            if lease is None:
                # A unit that just failed here waits for another phone; stay while some other phone may take it.
                if self._could_take(serial) and self._others_active(serial):
                    time.sleep(WAIT_S)
                    continue
                return
            batch = [lease]
            while len(batch) < size:
                more = self.journal.lease(serial, slot.resolved.keys(), others_active=others,
                                          exclude={b.task_id for b in batch})
                if more is None:
                    break
                batch.append(more)
            if self.stop.is_set():
                for held in batch:
                    self.journal.release(held, "stopping")
                return
            if not self._run(batch, slot):
                return

    def _run(self, batch: list[Lease], slot: PhoneSlot) -> bool:
        """Run a batch of units; False when its worker stops (the phone was quarantined, or the disk is full)."""
        done = run_units(batch, slot, self.executor, self.opts, run_id=self.run_id, run_dir=self.run_dir,
                         execution=self.execution, progress=self.sinks.get(slot.serial, NullProgress()),
                         stop=self.stop)
        with self._append_lock:
            self.notes += [f"{slot.label}: pull refused {entry}" for entry in done.pull_refused]
            self.notes += [f"{slot.label}: scores line not taken: {why}" for why in done.rejected]
        if done.stop_dispatch is not None:
            self._provider_stop(done.stop_dispatch)
            for lease, result in zip(batch, done.units, strict=True):
                if result.infra:
                    # The provider's refusal, not the phone's: no streak, no record; the unit waits for --resume.
                    self.journal.interrupted(lease, done.stop_dispatch)
                else:
                    self._settle(lease, result, slot)
            return False
        full = self._full_in(done.units, done.pull_refused)
        if full is not None:
            # The executor caught the ENOSPC itself (a tree it could not write): not the phone's failure nor the
            # agent's, so no try of this batch is recorded; it stays leased for the resume.
            self._disk_full(full)
            return False
        if any(r.infra for r in done.units):
            self._check_host(slot.serial)
        alive = True
        for lease, result in zip(batch, done.units, strict=True):
            if result.infra and self.full is not None:
                # Another worker found the disk full meanwhile: this try most likely failed of it too.
                continue
            if result.infra and self.stop.is_set():
                # Cut short by the stop (Ctrl-C, SIGTERM): not the phone's failure; the resume runs it again.
                self.journal.interrupted(lease, "stopped before it finished")
                continue
            alive = self._settle(lease, result, slot) and alive
        return alive and self.full is None

    def _full_in(self, results: list[UnitResult], refused: list[str]) -> OSError | None:
        """A full disk the executor met and turned into words (an infrastructure reason, a refused pull), or a try
        in trouble on a disk with next to nothing free; None when neither."""
        said = [why for r in results if r.infra for why in r.record.reasons] + refused
        told = next((why for why in said if says_disk_full(why)), None)
        if told is None and said and free_bytes(self.run_dir) < NEARLY_FULL_BYTES:
            told = "; ".join(said)
        return None if told is None else OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), told)

    def _settle(self, lease: Lease, result: UnitResult, slot: PhoneSlot) -> bool:
        """Record one unit's try; False when the phone was quarantined by it."""
        record = result.record
        if not result.infra:
            self._append(record)
            self.journal.finish(lease, outcome=record.outcome, passed=record.passed)
            return True
        reason = record.reasons[0] if record.reasons else "infrastructure error"
        if lease.attempt >= self.req.max_tries:
            # The last try: its record goes first, so a crash right after cannot lose the unit's end.
            self._append(record)
        _requeued, quarantined = self.journal.fail_try(
            lease, reason, max_tries=self.req.max_tries, quarantine_after=self.req.quarantine_after
        )
        if quarantined:
            self.notes.append(f"{slot.label}: quarantined after {self.req.quarantine_after} infrastructure "
                              f"failures in a row ({reason})")
        return not quarantined

    def _with_tries(self, record: Record, unit: str) -> Record:
        tries = [{"try": n, "phone": self.fleet.slots[p].label if p in self.fleet.slots else p, "kind": k or "",
                  "reason": why or ""} for n, p, k, why in self.journal.tries_of(unit)]
        return record.model_copy(update={"extra": {**record.extra, "tries": tries}})

    def _append(self, record: Record) -> None:
        if record.attempt > 1:
            record = self._with_tries(record, str(record.extra.get("unit", "")))
        with self._append_lock:
            self.store.append([record])
        self.on_record(record)
