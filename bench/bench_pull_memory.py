"""Pull memory benchmark: peak RSS of `farm pull` on a 64 MB scores.jsonl of tiny lines beside a 1 MB one.

Before the caps of `farm.android.pull_limits`, a 46 MB file of a million tiny lines took `farm pull` 124 s and a
peak RSS of 10.2 GB: every line became a record held in memory. Now the file is read streaming and at most
`max_records` records are built, so the two pulls should peak at about the same RSS (ratio near 1).

Each pull is the real `farm pull --device …` in a child process (its peak RSS read from the kernel with wait4),
against one virtual phone on a private adb server on a free loopback port; the phone runs in this process.
Prints both figures, their ratio and the times, side by side, from one run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from farm.android.pull_limits import PullCaps  # noqa: E402
from farm.sim.launcher import SimFarm, free_port, kill_adb_server, start_adb_server  # noqa: E402
from tests.helpers.hostile_trees import tiny_scores  # noqa: E402

EVAL = "/sdcard/Android/data/dev.agentfarm.simagent/files/eval"
MiB = 1024 * 1024
SIZES = (("1 MB", 1 * MiB), ("64 MB", 64 * MiB))
"""64 MiB is the pull's file cap (`pull.max_file_mb`): the largest scores file a pull takes."""
ENTRY = "import sys; from farm.cli import main; main(sys.argv[1:])"


def pull_rusage(serial: str, run: str, cwd: Path, adb_port: int) -> tuple[int, float, int, str]:
    """(peak RSS KiB, wall seconds, exit status, first stdout line) of one `farm pull` child process."""
    env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(adb_port), "FARM_LOG_DIR": str(cwd / "logs")}
    started = time.perf_counter()
    # Output to files, not pipes: wait4 must reap the child itself to read its peak RSS.
    with (cwd / "stdout").open("w") as out, (cwd / "stderr").open("w") as err:
        proc = subprocess.Popen([sys.executable, "-c", ENTRY, "pull", "--device", serial, "--run", run], cwd=cwd,
                                env=env, stdout=out, stderr=err)
        _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    lines = (cwd / "stdout").read_text().splitlines() + (cwd / "stderr").read_text().splitlines()
    return usage.ru_maxrss, wall, os.waitstatus_to_exitcode(status), (lines or [""])[0]


def main() -> None:
    caps = PullCaps()
    port = free_port()
    start_adb_server(port)
    farm = SimFarm(port)
    try:
        (phone,) = farm.add(1)
        with tempfile.TemporaryDirectory(prefix="bench-pull-memory-") as tmp:
            figures: dict[str, tuple[int, float, int, int, str]] = {}
            for label, size in SIZES:
                run = f"tiny-{size // MiB}mb"
                tree = phone.state.host_path(f"{EVAL}/{run}")
                tree.mkdir(parents=True)
                lines = tiny_scores(tree / "scores.jsonl", size=size)
                cwd = Path(tmp) / run
                cwd.mkdir()
                rss, wall, code, first = pull_rusage(phone.serial, run, cwd, port)
                figures[label] = (rss, wall, code, lines, first)
        small, big = figures["1 MB"], figures["64 MB"]
        print(f"farm pull of a scores.jsonl of tiny lines (caps: max_records {caps.max_records}, "
              f"max_lines {caps.max_lines}, max_line_bytes {caps.max_line_bytes}):")
        for label, (rss, wall, code, lines, first) in figures.items():
            print(f"  {label:>6s} {lines:9d} lines  peak RSS {rss / 1024:7.1f} MB  wall {wall:6.1f} s  exit {code}  "
                  f"({first})")
        print(f"  peak RSS 64 MB / 1 MB: {big[0] / small[0]:.2f}×  (goal: flat, ≈ 1×; before the caps: 10.2 GB "
              f"for 46 MB)   time 64 MB / 1 MB: {big[1] / small[1]:.2f}×")
    finally:
        farm.stop()
        kill_adb_server(port)


if __name__ == "__main__":
    main()
