"""How fast a running `farm query` stops: the wall time from SIGINT (Ctrl-C) or SIGTERM to the process's exit,
for an endless query (`select count(*) from range(1000000000000)`) that DuckDB is busy on; and how far past
`--timeout 1` a hostile query ends (its wall time minus that of `select 1`, which pays the same start-up).

The signal is sent once the query's handlers are installed and the process has burnt half a CPU second since
(DuckDB is inside the statement), as `tests/cli/test_query_bounds.py` does. Linux only (reads /proc).
Prints the median and the worst of ROUNDS runs each.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROUNDS = 10
ENDLESS = "select count(*) from range(1000000000000)"
FARM = [sys.executable, "-c", "import sys; from farm.cli import main; main(sys.argv[1:])"]


def _catches(pid: int, signum: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop_ms(work: str, signum: int) -> float:
    """Milliseconds from `signum` to the exit of a `farm query` busy on ENDLESS; the exit must be 130."""
    proc = subprocess.Popen([*FARM, "query", ENDLESS, "--runs-dir", "runs", "--timeout", "600"], cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not _catches(proc.pid, signal.SIGTERM):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.005)
    busy_from = _cpu_s(proc.pid)
    while _cpu_s(proc.pid) < busy_from + 0.5:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.005)
    t0 = time.perf_counter()
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    elapsed = (time.perf_counter() - t0) * 1000
    assert proc.returncode == 130, (proc.returncode, err)
    return elapsed


def wall_ms(work: str, sql: str, *flags: str, status: int) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([*FARM, "query", sql, "--runs-dir", "runs", *flags], cwd=work, capture_output=True,
                          check=False, timeout=60)
    assert proc.returncode == status, (proc.returncode, proc.stderr[-300:])
    return (time.perf_counter() - t0) * 1000


def _line(name: str, values: list[float]) -> str:
    return f"{name:<42} median {statistics.median(values):7.0f} ms   worst {max(values):7.0f} ms   ({len(values)} runs)"


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.helpers.records import record, write_run

    with tempfile.TemporaryDirectory() as work:
        write_run(Path(work) / "runs", "r", [record("a", run="r")])
        print(f"cpus {os.cpu_count()}, python {sys.version.split()[0]}")
        for signum in (signal.SIGINT, signal.SIGTERM):
            print(_line(f"{signal.Signals(signum).name} → exit (endless query)",
                        [stop_ms(work, signum) for _ in range(ROUNDS)]))
        base = [wall_ms(work, "select 1", status=0) for _ in range(ROUNDS)]
        over = [wall_ms(work, ENDLESS, "--timeout", "1", status=2) - statistics.median(base) - 1000
                for _ in range(ROUNDS)]
        print(_line("select 1 (start-up and exit)", base))
        print(_line("past --timeout 1 (endless query)", over))


if __name__ == "__main__":
    main()
