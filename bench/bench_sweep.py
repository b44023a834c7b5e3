"""Sweep benchmarks: controller cost at farm scale, makespan against its lower bound, resume overhead.

1. One controller (`farm sweep`, host executor, scripted policy) drives 50 virtual phones spread over
   3 adb servers; its CPU per unit is compared with the same sweep on one phone, and its peak RSS is
   read from the kernel (wait4). The phones run in other processes (`farm sim up`).
2. A shard sweep of the virtual agent app (instrument executor; per-task durations fixed per task)
   on 4 phones, without and then with history: makespan / max(longest unit, total work / phones).
3. A 5 000-unit journal: time from `farm sweep --resume` to the first new unit leased.

Everything runs on loopback: private adb servers on free ports, phones in this machine's processes.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from farm.sim.launcher import free_port, kill_adb_server, start_adb_server  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FARM = str(Path(sys.executable).parent / "farm")
SCRIPTED = ("read/system/calculator-multiply", "read/system/settings-android-version", "write/clock-alarm-7am",
            "read/shopping/shop-search-headphones", "impossible/settings-upgrade-android-99")


def _tasks(root: Path, names: tuple[str, ...] = SCRIPTED) -> Path:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / "tasks" / f"{name}.json", root / f"{name}.json")
    return root


class Hosts:
    """`n` adb servers on free loopback ports, each with virtual phones started by `farm sim up`."""

    def __init__(self, tmp: Path, counts: list[int], profile: Path | None = None) -> None:
        self.tmp, self.ports, self.states = tmp, [free_port() for _ in counts], []
        for port, count in zip(self.ports, counts, strict=True):
            start_adb_server(port)
            state = tmp / f"sim-{port}"
            state.mkdir(parents=True)
            self.states.append(state)
            argv = [FARM, "sim", "up", "--count", str(count), "--adb-port", str(port)]
            if profile is not None:
                argv += ["--profile", str(profile)]
            subprocess.run(argv, env={**os.environ, "FARM_SIM_STATE_DIR": str(state)}, check=True,
                           capture_output=True, timeout=600)
        self.config = tmp / "farm.yaml"
        rest = "\n".join(f"  - {{host: 127.0.0.1, port: {p}}}" for p in self.ports[1:])
        self.config.write_text(f"adb_servers:\n{rest}\n" if rest else "{}\n", encoding="utf-8")

    def env(self) -> dict[str, str]:
        return {**os.environ, "ANDROID_ADB_SERVER_PORT": str(self.ports[0])}

    def stop(self) -> None:
        for port, state in zip(self.ports, self.states, strict=True):
            subprocess.run([FARM, "sim", "down"], env={**os.environ, "FARM_SIM_STATE_DIR": str(state)},
                           capture_output=True, timeout=120, check=False)
            kill_adb_server(port)


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) a live process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _sweep_rusage(hosts: Hosts, argv: list[str], cwd: Path, journal: Path | None = None) -> tuple[float, int, float]:
    """(CPU seconds, peak RSS KiB, wall seconds) of one `farm sweep` process; with `journal`, also the CPU it had
    used when its first unit was leased (start-up: imports, discovery, health gate, resolving every task)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=hosts.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if journal is not None:
        while proc.poll() is None and (not journal.exists() or _tries(journal) == 0):
            time.sleep(0.01)
        _SETUP[argv[-1]] = _cpu_of(proc.pid) if proc.poll() is None else 0.0
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) not in (0, 1, 4):  # finished; some tasks failing is a result
        raise SystemExit(f"sweep failed: {argv}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss, wall


_SETUP: dict[str, float] = {}


def _units(run_dir: Path) -> int:
    with sqlite3.connect(run_dir / "journal.sqlite") as db:
        return int(db.execute("SELECT count(*) FROM units WHERE state = 'done'").fetchone()[0])


def bench_scale(tmp: Path) -> None:
    tasks = _tasks(tmp / "tasks")
    figures = {}
    # The one-phone sweep repeats its units so that both controllers spread start-up over many units.
    for label, counts, repeats in (("1 phone", [1], 50), ("50 phones / 3 adb servers", [17, 17, 16], 1)):
        hosts = Hosts(tmp / label.replace(" ", "_").replace("/", ""), counts)
        try:
            runs = tmp / f"runs-{len(counts)}"
            argv = [FARM, "sweep", "--executor", "host", "--policy", "scripted", "--tasks-dir", str(tasks),
                    "--runs-dir", str(runs), "--config", str(hosts.config), "--run-id", "b", "--quiet",
                    "--repeats", str(repeats)]
            cpu, rss, wall = _sweep_rusage(hosts, argv, tmp, runs / "b" / "journal.sqlite")
            units = _units(runs / "b")
            setup = _SETUP.pop(str(repeats), 0.0)
            figures[label] = (cpu / units, rss, wall, units, setup, (cpu - setup) / units)
        finally:
            hosts.stop()
    one, one_dispatch = figures["1 phone"][0], figures["1 phone"][5]
    print("controller (farm sweep, host executor, scripted policy):")
    for label, (per_unit, rss, wall, units, setup, dispatch) in figures.items():
        print(f"  {label:28s} {units:4d} units  CPU {per_unit * 1000:6.1f} ms/unit ({per_unit / one:4.2f}× one phone; "
              f"goal ≤ 1.2×), of which start-up {setup:5.2f} s and {dispatch * 1000:6.1f} ms/unit after it "
              f"({dispatch / one_dispatch:4.2f}×)  peak RSS {rss / 1024:6.1f} MB (goal ≤ 600)  wall {wall:6.1f} s")


def _makespan(run_dir: Path, phones: int) -> tuple[float, float]:
    with sqlite3.connect(run_dir / "journal.sqlite") as db:
        tries = db.execute("SELECT started, ended FROM tries WHERE kind = 'ran'").fetchall()
    durations = [e - s for s, e in tries]
    span = max(e for _, e in tries) - min(s for s, _ in tries)
    bound = max(max(durations), sum(durations) / phones)
    return span, bound


def bench_makespan(tmp: Path) -> None:
    profile = tmp / "slow-agent.yaml"
    from farm.sim.profile import default_profile

    prof = default_profile()
    prof.agent.time_scale = 30.0  # 30 simulated seconds per task → 0.4–1.6 s of real time
    prof.agent.pass_rate = 1.0
    profile.write_text(prof.model_dump_json(), encoding="utf-8")
    phones = 4
    hosts = Hosts(tmp / "mk", [phones], profile)
    try:
        tasks = _tasks(tmp / "mk-tasks", tuple(
            f"{p.parent.relative_to(REPO / 'tasks').as_posix()}/{p.stem}"
            for d in ("read", "write") for p in sorted((REPO / "tasks" / d).rglob("*.json"))
        ))
        runs = tmp / "mk-runs"
        results = {}
        for run_id in ("no-history", "with-history"):
            argv = [FARM, "sweep", "--spread", "shard", "--repeats", "2", "--tasks-dir", str(tasks), "--runs-dir",
                    str(runs), "--config", str(hosts.config), "--run-id", run_id, "--quiet"]
            _sweep_rusage(hosts, argv, tmp)
            results[run_id] = _makespan(runs / run_id, phones)
    finally:
        hosts.stop()
    print(f"shard sweep makespan, {phones} phones (virtual agent app, per-task durations):")
    for run_id, (span, bound) in results.items():
        goal = "goal ≤ 1.05" if run_id == "with-history" else "for comparison"
        print(f"  {run_id:13s} makespan {span:6.2f} s  lower bound {bound:6.2f} s  ratio {span / bound:5.3f} ({goal})")


def bench_batch(tmp: Path) -> None:
    """Cost of one `am instrument` call per unit against batches, on fast simulated tasks (overhead dominates)."""
    phones = 2
    hosts = Hosts(tmp / "bt", [phones])
    try:
        tasks = _tasks(tmp / "bt-tasks", tuple(
            f"{p.parent.relative_to(REPO / 'tasks').as_posix()}/{p.stem}"
            for d in ("read", "write") for p in sorted((REPO / "tasks" / d).rglob("*.json"))
        ))
        rows = {}
        for batch in (1, 4, 16):
            runs = tmp / f"bt-runs-{batch}"
            argv = [FARM, "sweep", "--tasks-dir", str(tasks), "--runs-dir", str(runs), "--config", str(hosts.config),
                    "--run-id", "b", "--quiet", "--batch", str(batch)]
            cpu, _rss, wall = _sweep_rusage(hosts, argv, tmp)
            units = _units(runs / "b")
            rows[batch] = (wall / units * phones, cpu / units, units)
    finally:
        hosts.stop()
    one = rows[1][0]
    print(f"instrument executor, {phones} virtual phones, 30 ms simulated tasks (per-call overhead dominates):")
    for batch, (wall, cpu, units) in rows.items():
        print(f"  --batch {batch:2d}  {units} units  phone time {wall * 1000:6.1f} ms/unit ({wall / one:4.2f}×)  "
              f"controller CPU {cpu * 1000:6.1f} ms/unit")


def bench_resume(tmp: Path) -> None:
    tasks = _tasks(tmp / "rs-tasks")
    hosts = Hosts(tmp / "rs", [1])
    try:
        runs = tmp / "rs-runs"
        start = [FARM, "sweep", "--executor", "host", "--policy", "scripted", "--tasks-dir", str(tasks),
                 "--runs-dir", str(runs), "--config", str(hosts.config), "--run-id", "big", "--repeats", "1000",
                 "--quiet"]
        proc = subprocess.Popen(start, cwd=tmp, env=hosts.env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        journal = runs / "big" / "journal.sqlite"
        while not journal.exists() or _tries(journal) < 3:
            time.sleep(0.05)
        proc.kill()
        proc.wait()
        units = _count(journal)
        before = _tries(journal)
        resume = [FARM, "sweep", "--resume", "big", "--tasks-dir", str(tasks), "--runs-dir", str(runs),
                  "--config", str(hosts.config), "--quiet"]
        t0 = time.time()
        proc = subprocess.Popen(resume, cwd=tmp, env=hosts.env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        while _tries(journal) <= before:
            time.sleep(0.01)
        first = _first_new(journal, t0) - t0
        proc.kill()
        proc.wait()
        t1 = time.time()
        idle = subprocess.Popen([sys.executable, "-c", "import farm.cli; farm.cli._register()"], cwd=tmp)
        idle.wait()
        startup = time.time() - t1
    finally:
        hosts.stop()
    print(f"resume of a {units}-unit journal: first new unit leased {first:5.2f} s after `--resume` "
          f"(of which {startup:4.2f} s is starting Python and importing the CLI)")


def _tries(journal: Path) -> int:
    """Tries begun so far (0 while the journal's file exists but its tables are still being made)."""
    try:
        with sqlite3.connect(journal, timeout=30) as db:
            return int(db.execute("SELECT count(*) FROM tries").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _count(journal: Path) -> int:
    with sqlite3.connect(journal, timeout=30) as db:
        return int(db.execute("SELECT count(*) FROM units").fetchone()[0])


def _first_new(journal: Path, after: float) -> float:
    with sqlite3.connect(journal, timeout=30) as db:
        return float(db.execute("SELECT min(started) FROM tries WHERE started > ?", (after,)).fetchone()[0])


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        bench_resume(tmp)
        bench_batch(tmp)
        bench_makespan(tmp)
        bench_scale(tmp)


if __name__ == "__main__":
    main()
