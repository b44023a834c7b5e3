"""`pull_tree` against the real `adb pull` CLI, side by side in one run: one 50 MiB file, and a tree of 500 files.

The phone runs in another process (`farm sim up`, on a private adb server on a free loopback port), as the CLI's
adb server and phone do, so neither side shares an interpreter with the phone. Rounds alternate the two pulls
(a neighbour's load falls on both alike); each figure is the median of the rounds. Speed ratio = `adb pull`'s
time / `pull_tree`'s time: ≥ 1.0 means the harness pulls at least as fast as the CLI. The CPU each side used is
printed too: on a loaded machine it varies less than the wall time.

    .venv/bin/python bench/bench_pull.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_sweep import Hosts  # noqa: E402
from goals import goal  # noqa: E402

from farm.config import PullLimits  # noqa: E402
from farm.sim.launcher import adb_binary  # noqa: E402

MiB = 1024 * 1024
BIG = 50 * MiB
TREE_FILES = 500
GOAL = 1.0
"""`pull_tree` at least as fast as `adb pull` (speed ratio)."""


def _lay_out(root: Path) -> None:
    """/sdcard/bench/big/big.bin (50 MiB) and /sdcard/bench/tree (500 files of 1–64 KiB in 10 directories)."""
    big = root / "sdcard" / "bench" / "big"
    big.mkdir(parents=True)
    block = os.urandom(MiB)
    with (big / "big.bin").open("wb") as out:
        for i in range(BIG // MiB):
            out.write(block[i:] + block[:i])
    tree = root / "sdcard" / "bench" / "tree"
    for i in range(TREE_FILES):
        sub = tree / f"d{i % 10}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{i:03d}.json").write_bytes(block[: 1024 * (1 + i % 64)])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    import adbutils

    from farm.android.pull import pull_tree

    limits = PullLimits()
    with tempfile.TemporaryDirectory(prefix="bench-pull-") as tmp_name:
        tmp = Path(tmp_name)
        hosts = Hosts(tmp, [1])
        try:
            state = json.loads((hosts.states[0] / "state.json").read_text())
            serial, root = state["phones"][0]["serial"], Path(state["phones"][0]["root"])
            _lay_out(root)
            port = hosts.ports[0]
            device = adbutils.AdbClient(port=port).device(serial)
            out = tmp / "out"

            def cli(remote: str) -> Callable[[], float]:
                def run() -> float:
                    proc = subprocess.Popen([adb_binary(), "-P", str(port), "-s", serial, "pull", remote, str(out)],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    _pid, status, usage = os.wait4(proc.pid, 0)
                    assert os.waitstatus_to_exitcode(status) == 0
                    return usage.ru_utime + usage.ru_stime
                return run

            def ours(remote: str) -> Callable[[], float]:
                def run() -> float:
                    before = resource.getrusage(resource.RUSAGE_SELF)
                    result = pull_tree(device, remote, out / Path(remote).name, limits)
                    after = resource.getrusage(resource.RUSAGE_SELF)
                    assert not result.refused, result.refused
                    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                return run

            figures: dict[str, dict[str, list[float]]] = {}
            cpus: dict[str, dict[str, list[float]]] = {}
            for label, remote, expect in (("one 50 MiB file", "/sdcard/bench/big", 1),
                                          (f"a tree of {TREE_FILES} files", "/sdcard/bench/tree", TREE_FILES)):
                times: dict[str, list[float]] = {"adb pull": [], "pull_tree": []}
                cpu: dict[str, list[float]] = {"adb pull": [], "pull_tree": []}
                for _ in range(args.rounds):
                    for name, fn in (("adb pull", cli(remote)), ("pull_tree", ours(remote))):
                        shutil.rmtree(out, ignore_errors=True)
                        out.mkdir()
                        t0 = time.perf_counter()
                        cpu[name].append(fn())
                        times[name].append(time.perf_counter() - t0)
                        got = sum(1 for p in out.rglob("*") if p.is_file())
                        assert got == expect, (name, got)
                figures[label] = times
                cpus[label] = cpu
        finally:
            hosts.stop()
    print(f"pull from one virtual phone (another process), median of {args.rounds} interleaved rounds:")
    for label, times in figures.items():
        cli_s, ours_s = statistics.median(times["adb pull"]), statistics.median(times["pull_tree"])
        speed = cli_s / ours_s
        size = f" ({BIG / MiB / ours_s:.0f} MiB/s vs {BIG / MiB / cli_s:.0f} MiB/s)" if "MiB" in label else ""
        best = min(times["adb pull"]) / min(times["pull_tree"])
        print(f"  {label:<22} adb pull {cli_s * 1000:7.1f} ms   pull_tree {ours_s * 1000:7.1f} ms   "
              f"speed {speed:.2f}× (best round of each: {best:.2f}×){size}")
        print(f"  {'':<22} CPU: adb pull {statistics.median(cpus[label]['adb pull']) * 1000:6.1f} ms, pull_tree "
              f"{statistics.median(cpus[label]['pull_tree']) * 1000:6.1f} ms (the adb server's, shared, not counted)")
        goal(f"pull {label} vs adb pull (speed)", f"{speed:.2f}×", f"≥ {GOAL:.1f}×", speed >= GOAL,
             f"{speed:.2f}× < {GOAL:.1f}×")


if __name__ == "__main__":
    main()
