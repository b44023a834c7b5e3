"""How far one controller goes: its CPU, memory and bytes exchanged with the adb servers per host-executor step and
per instrument unit, at 1, 25 and 50 virtual phones over 3 adb servers; from them, the phones one controller core
and one 1 Gbit/s link can drive at one step per 3 s, and the first resource to run out.

The 50 phones run in three other processes (`farm sim up`, one per private adb server on a free loopback port); the
controller runs in a child process of its own, so its CPU and peak RSS are read from the kernel (wait4) and its
sockets to the adb servers are counted (every byte sent and received on a TCP connection to an adb server port).

- host step: one thread per phone (as the host executor runs them) reads the screen and taps, `--steps` times
  per phone in all, through `host_agent.phone.Phone` (no model: the controller's own cost of a step).
- instrument unit: the real `farm sweep` (instrument executor, virtual agent app with ≈ 0 s tasks) on the same
  phones; its start-up (imports, discovery, health gate, resolving the tasks) is measured apart, as the CPU it
  had used when its first unit was leased.

    .venv/bin/python bench/bench_scale.py
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[1]
SPLITS = {1: [1, 0, 0], 25: [9, 8, 8], 50: [17, 17, 16]}
"""Phones used on each of the 3 adb servers at each scale (the 50 are started once; a scale uses the first ones)."""
STEP_PERIOD_S = 3.0
LINK_BYTES_S = 1e9 / 8
HOST_STEPS = 300
"""Host steps per scale in all (spread over its phones)."""
UNIT_TASKS = ("read/system/calculator-multiply", "read/system/settings-android-version")
REPEATS = 2
"""Instrument units per phone: these tasks, REPEATS times each."""
SCALING_GOAL = 1.2
"""CPU per host step at 50 phones at most this many times that at one phone (the controller scales linearly)."""
PHONES_GOAL = 50
"""One controller core (and one 1 Gbit/s link) drives at least the 50 phones measured, at one step per 3 s."""
_COUNTER = """
import atexit, json, os, socket, threading
_PORTS = {int(p) for p in os.environ["BENCH_ADB_PORTS"].split(",")}
_lock = threading.Lock()
_bytes = {"sent": 0, "received": 0}
def _count(key, n):
    with _lock:
        _bytes[key] += n
class _Counted(socket.socket):
    _adb = False
    def connect(self, address):
        self._adb = isinstance(address, tuple) and len(address) >= 2 and address[1] in _PORTS
        return super().connect(address)
    def send(self, data, *args):
        n = super().send(data, *args)
        if self._adb: _count("sent", n)
        return n
    def sendall(self, data, *args):
        super().sendall(data, *args)
        if self._adb: _count("sent", memoryview(data).nbytes)
    def recv(self, n, *args):
        data = super().recv(n, *args)
        if self._adb: _count("received", len(data))
        return data
    def recv_into(self, buffer, *args):
        n = super().recv_into(buffer, *args)
        if self._adb: _count("received", n)
        return n
socket.socket = _Counted
def bench_bytes():
    with _lock:
        return dict(_bytes)
def _dump():
    with open(os.environ["BENCH_BYTES_OUT"], "w") as fh:
        json.dump(bench_bytes(), fh)
atexit.register(_dump)
"""
"""Installed first in the controller's process: every TCP socket to an adb server port counts its bytes."""


# --- the phones ---------------------------------------------------------------------------------------------------


def _phones(hosts: Any) -> list[list[str]]:
    """Serials of each adb server's phones."""
    return [[p["serial"] for p in json.loads((s / "state.json").read_text())["phones"]] for s in hosts.states]


def _chosen(hosts: Any, scale: int) -> list[tuple[int, str]]:
    """(adb port, serial) of the phones a scale uses."""
    out = []
    for port, serials, count in zip(hosts.ports, _phones(hosts), SPLITS[scale], strict=True):
        out += [(port, serial) for serial in serials[:count]]
    return out


# --- host steps (child process) -----------------------------------------------------------------------------------


def _host_child(spec: dict[str, Any]) -> None:
    """In the controller's process: connect the phones, then run the steps; print CPU, bytes and counts as JSON."""
    import resource

    import adbutils

    from host_agent.phone import Phone

    bench_bytes = globals()["bench_bytes"]
    phones = [Phone.connect(adbutils.AdbClient(port=port).device(serial)) for port, serial in spec["phones"]]
    for phone in phones:
        phone.launch("com.android.calculator2")
        phone.read()
    per_phone = max(1, spec["steps"] // len(phones))
    errors: list[str] = []

    def drive(phone: Phone) -> None:
        try:
            for i in range(per_phone):
                key = phone.read().find(text=str(i % 10))
                if key is None:
                    raise RuntimeError("no calculator key on screen")
                phone.tap(*key.center)
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which fails the bench
            errors.append(f"{type(exc).__name__}: {exc}")

    before_bytes = bench_bytes()
    before = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    threads = [threading.Thread(target=drive, args=(p,)) for p in phones]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_SELF)
    after_bytes = bench_bytes()
    for phone in phones:
        phone.close()
    print(json.dumps({
        "steps": per_phone * len(phones), "wall": wall, "errors": errors[:3],
        "cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        "sent": after_bytes["sent"] - before_bytes["sent"],
        "received": after_bytes["received"] - before_bytes["received"],
    }), flush=True)


def _child(argv_tail: list[str], env: dict[str, str], out: Path) -> tuple[subprocess.Popen[bytes], Path]:
    code = _COUNTER + f"\nimport sys\nsys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
    code += "import bench_scale\nbench_scale.__dict__['bench_bytes'] = bench_bytes\nbench_scale.child(sys.argv[1:])\n"
    counted = out.with_suffix(".bytes.json")
    proc = subprocess.Popen([sys.executable, "-c", code, *argv_tail], env={**env, "BENCH_BYTES_OUT": str(counted)},
                            stdout=out.open("wb"), stderr=subprocess.STDOUT, cwd=REPO)
    return proc, counted


def _reap(proc: subprocess.Popen[bytes]) -> tuple[int, float, int]:
    """(exit status, CPU seconds, peak RSS KiB) of a finished child."""
    _pid, status, usage = os.wait4(proc.pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def host_steps(hosts: Any, scale: int, tmp: Path) -> dict[str, float]:
    out = tmp / f"host-{scale}.out"
    spec = {"phones": _chosen(hosts, scale), "steps": HOST_STEPS}
    proc, _ = _child(["host", json.dumps(spec)], _env(hosts), out)
    code, _cpu, rss = _reap(proc)
    text = out.read_text(errors="replace")
    if code != 0:
        raise SystemExit(f"host-step child failed ({code}):\n{text[-2000:]}")
    got = json.loads(text.strip().splitlines()[-1])
    if got["errors"]:
        raise SystemExit(f"host steps failed: {got['errors']}")
    steps = got["steps"]
    moved = got["sent"] + got["received"]
    return {"phones": scale, "units": steps, "cpu": got["cpu"] / steps, "bytes": moved / steps, "rss": rss / 1024,
            "wall": got["wall"]}


# --- instrument units (child process: the real `farm sweep`) ------------------------------------------------------


def _sweep_child(argv: list[str]) -> None:
    from farm.cli import main

    main(argv)


def sweep_units(hosts: Any, scale: int, tmp: Path, tasks: Path, executor: str) -> dict[str, float]:
    """The real `farm sweep` on a scale's phones: CPU after start-up, bytes and steps per unit."""
    runs = tmp / f"runs-{executor}-{scale}"
    argv = ["sweep", "--tasks-dir", str(tasks), "--runs-dir", str(runs), "--config", str(hosts.config),
            "--run", "s", "--quiet", "--repeats", str(REPEATS), "--listed-phones", "--executor", executor]
    if executor == "host":
        argv += ["--policy", "scripted"]
    for _port, serial in _chosen(hosts, scale):
        argv += ["--device", serial]
    out = tmp / f"sweep-{executor}-{scale}.out"
    proc, counted = _child(["sweep", *argv], _env(hosts), out)
    journal = runs / "s" / "journal.sqlite"
    setup = 0.0
    while proc.poll() is None:
        if journal.exists() and _count(journal, "SELECT count(*) FROM tries") > 0:
            setup = _cpu_of(proc.pid)
            break
        time.sleep(0.01)
    code, cpu, rss = _reap(proc)
    if code not in (0, 1, 4):
        raise SystemExit(f"sweep failed ({code}):\n{out.read_text(errors='replace')[-2000:]}")
    units = _count(journal, "SELECT count(*) FROM units WHERE state = 'done'")
    if units != scale * len(UNIT_TASKS) * REPEATS:
        raise SystemExit(f"sweep at {scale} phones finished {units} units, not {scale * len(UNIT_TASKS) * REPEATS}")
    moved = json.loads(counted.read_text())
    from farm.results.store import RECORDS_FILE, read_records

    steps = sum(r.steps or 0 for r in read_records(runs / "s" / RECORDS_FILE))
    return {"phones": scale, "units": units, "cpu": (cpu - setup) / units, "setup": setup, "total": cpu - setup,
            "bytes": (moved["sent"] + moved["received"]) / units, "rss": rss / 1024, "steps": steps}


def _count(journal: Path, sql: str) -> int:
    try:
        with sqlite3.connect(f"file:{journal}?mode=ro", uri=True) as db:
            return int(db.execute(sql).fetchone()[0])
    except sqlite3.Error:
        return 0


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) a live process has used so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _env(hosts: Any) -> dict[str, str]:
    # Leases in a directory of the bench's own, never the user's.
    return {**hosts.env(), "BENCH_ADB_PORTS": ",".join(map(str, hosts.ports)), "PYTHONPATH": str(REPO),
            "FARM_LEASES_DIR": str(hosts.tmp / "leases")}


def _tasks(root: Path) -> Path:
    import shutil

    for name in UNIT_TASKS:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / "tasks" / f"{name}.json", root / f"{name}.json")
    return root


def child(argv: list[str]) -> None:
    """Entry of the controller's process (after `_COUNTER` is installed)."""
    if argv[0] == "host":
        _host_child(json.loads(argv[1]))
    else:
        _sweep_child(argv[1:])


# --- the figures --------------------------------------------------------------------------------------------------


def main() -> None:
    from bench_sweep import Hosts
    from goals import goal

    from farm.sim.profile import default_profile

    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp_name:
        tmp = Path(tmp_name)
        profile = default_profile()
        profile.agent.time_scale = 1e9  # the virtual agent app's tasks take ≈ 0 s: the controller's cost shows
        profile_path = tmp / "fast-agent.yaml"
        profile_path.write_text(profile.model_dump_json(), encoding="utf-8")
        t0 = time.perf_counter()
        hosts = Hosts(tmp / "hosts", SPLITS[50], profile_path)
        started = time.perf_counter() - t0
        try:
            tasks = _tasks(tmp / "tasks")
            steps = {scale: host_steps(hosts, scale, tmp) for scale in SPLITS}
            units = {scale: sweep_units(hosts, scale, tmp, tasks, "instrument") for scale in SPLITS}
            hosted = {scale: sweep_units(hosts, scale, tmp, tasks, "host") for scale in SPLITS}
        finally:
            hosts.stop()
    print(f"one controller, virtual phones over 3 adb servers (phones started in {started:.1f} s; "
          f"bench {time.perf_counter() - t_start:.0f} s in all):")
    _table("host step, phone part only (Phone.read + tap, a thread per phone)", steps, "step")
    _table("host-executor unit (farm sweep --executor host, scripted policy)", hosted, "unit")
    _table("instrument unit (farm sweep, virtual agent app with ≈ 0 s tasks)", units, "unit")
    # A sweep's work after its start-up is per unit plus per run (reports, notes): the slope between the 1-phone and
    # the 50-phone sweeps is what one more unit costs; a host unit's steps share its per-task work (stop the apps,
    # go home, probes before and after, verification, transcript), so a step is charged its unit's share.
    host_steps_n = hosted[50]["steps"] - hosted[1]["steps"]
    cpu = (hosted[50]["total"] - hosted[1]["total"]) / host_steps_n
    moved = hosted[50]["bytes"] * hosted[50]["units"] / hosted[50]["steps"]
    per_core = STEP_PERIOD_S / cpu
    per_link = LINK_BYTES_S * STEP_PERIOD_S / moved
    per_phone_mb = (hosted[50]["rss"] - hosted[1]["rss"]) / 49
    first = "CPU (one controller core)" if per_core < per_link else "the 1 Gbit/s link"
    unit_cpu = (units[50]["total"] - units[1]["total"]) / (units[50]["units"] - units[1]["units"])
    print(f"  host executor at one step per {STEP_PERIOD_S:g} s per phone (a step's share of its unit, at the margin):")
    print(f"    one controller core drives {per_core:7.0f} phones ({cpu * 1000:.2f} ms CPU per step; the phone part "
          f"alone {steps[50]['cpu'] * 1000:.2f} ms)")
    print(f"    one 1 Gbit/s link carries  {per_link:7.0f} phones ({moved / 1024:.1f} KiB per step)")
    print(f"    memory: {per_phone_mb:.1f} MB more per phone ({hosted[50]['rss']:.0f} MB peak at 50 phones)")
    print(f"    first to run out: {first} (the model's own traffic and its client's CPU come on top)")
    print(f"  instrument executor: {unit_cpu * 1000:.1f} ms CPU per unit at the margin: one controller core keeps up "
          f"with {3600 / unit_cpu:,.0f} units an hour; {units[50]['bytes'] / 1024:.0f} KiB per unit with the adb "
          f"servers")
    step_ratio = steps[50]["cpu"] / steps[1]["cpu"]
    phone_ms = steps[50]["cpu"] * 1000
    goal("controller CPU per host step (phone part), 50 phones vs 1", f"{step_ratio:.2f}× ({phone_ms:.2f} ms)",
         f"≤ {SCALING_GOAL}×", step_ratio <= SCALING_GOAL, f"{step_ratio:.2f}× > {SCALING_GOAL}×")
    goal("phones one controller core drives at 1 step / 3 s", f"{per_core:.0f} (first out: {first})",
         f"≥ {PHONES_GOAL}", per_core >= PHONES_GOAL, f"{per_core:.0f} < {PHONES_GOAL}")
    goal("phones one 1 Gbit/s link carries at 1 step / 3 s", f"{per_link:.0f}", f"≥ {PHONES_GOAL}",
         per_link >= PHONES_GOAL, f"{per_link:.0f} < {PHONES_GOAL}")


def _table(label: str, rows: dict[int, dict[str, float]], unit: str) -> None:
    print(f"  {label}:")
    for scale, row in rows.items():
        extra = f", start-up {row['setup']:.2f} s CPU" if "setup" in row else f", {row['wall']:.1f} s wall"
        if row.get("steps"):
            extra += f", {row['steps'] / row['units']:.1f} steps/unit"
        print(f"    {scale:3d} phones  {int(row['units']):4d} {unit}s  CPU {row['cpu'] * 1000:7.2f} ms/{unit}  "
              f"{row['bytes'] / 1024:7.1f} KiB/{unit} with the adb servers  peak RSS {row['rss']:6.1f} MB{extra}")


if __name__ == "__main__":
    main()
