"""How long `farm` takes to answer before it does any work: `farm --help`, and a bad flag refused with exit
status 2, each beside a bare `python -c pass` in the same run. Both are paid on every invocation (and by every
case of the CLI's bad-input corpus), so what is printed is the median wall time and its ratio to the bare
interpreter, and which heavy modules the help path imported.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROUNDS = 15
FARM = [sys.executable, "-c", "import sys; from farm.cli import main; main(sys.argv[1:])"]
HEAVY = ("pydantic", "duckdb", "adbutils", "uiautomator2", "playwright", "jinja2")


def median_ms(argv: list[str], cwd: str, env: dict[str, str], status: int) -> float:
    times = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
        times.append((time.perf_counter() - t0) * 1000)
        assert proc.returncode == status, (argv, proc.returncode, proc.stderr[-300:])
    return statistics.median(times)


def help_imports(cwd: str, env: dict[str, str]) -> list[str]:
    probe = ("import sys\nfrom farm.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
             f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return proc.stderr.split()


def main() -> None:
    root = str(Path(__file__).resolve().parents[1])
    with tempfile.TemporaryDirectory() as cwd:
        env = {**os.environ, "PYTHONPATH": root, "HOME": cwd, "FARM_LOG_DIR": cwd, "COLUMNS": "200"}
        bare = median_ms([sys.executable, "-c", "pass"], cwd, env, 0)
        help_ms = median_ms([*FARM, "--help"], cwd, env, 0)
        refused = median_ms([*FARM, "run", "--no-such-flag"], cwd, env, 2)
        heavy = help_imports(cwd, env)
    print(f"bare python -c pass:      {bare:7.1f} ms")
    print(f"farm --help:              {help_ms:7.1f} ms  ({help_ms / bare:.1f}x bare)")
    print(f"farm run --no-such-flag:  {refused:7.1f} ms  ({refused / bare:.1f}x bare, exit 2)")
    print(f"heavy modules imported by --help: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
