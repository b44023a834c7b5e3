"""SIGKILL the controller at random moments of a deterministic sweep; resume each time.

The final set of (unit, verdict) must equal an uninterrupted sweep's, and no unit may have two
final records. The kill moments come from a fixed seed, so a failure reproduces.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from farm import manifest as mf
from farm.results.store import ReadProblems, read_records
from farm.sweep.sweep import sweep
from tests.helpers.sweep import scripted_tasks, sweep_request

FARM = str(Path(sys.executable).parent / "farm")
KILLS = 20
SEED = 20261201


def _verdicts(run_dir: Path) -> tuple[dict[str, bool], Counter[str]]:
    finals: Counter[str] = Counter()
    verdicts: dict[str, bool] = {}
    for rec in read_records(run_dir / "records.jsonl", ReadProblems()):
        unit = rec.extra.get("unit")
        if isinstance(unit, str):
            finals[unit] += 1
            verdicts[unit] = rec.passed
    return verdicts, finals


def test_sigkill_at_random_moments_then_resume_gives_the_uninterrupted_verdicts(
    virtual_farm, tmp_path: Path
) -> None:
    virtual_farm(2)
    tasks = scripted_tasks(tmp_path / "tasks")
    base = sweep(sweep_request(tmp_path, tasks, run_id="base", repeats=3))
    expected, _ = _verdicts(base.run_dir)
    assert len(expected) == 2 * 5 * 3

    common = ["--tasks-dir", str(tasks), "--runs-dir", str(tmp_path / "runs"), "--quiet"]
    start = [FARM, "sweep", "--run-id", "k", "--executor", "host", "--policy", "scripted", "--split", "all",
             "--repeats", "3", *common]
    resume = [FARM, "sweep", "--resume", "k", *common]
    rng = random.Random(SEED)
    kills = 0
    while kills < KILLS:
        # Killed before its run directory existed, a sweep is simply started again.
        argv = resume if (tmp_path / "runs" / "k").exists() else start
        proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.4, 2.0))
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            assert proc.returncode == 0, err
            break
        proc.kill()
        proc.wait()
        kills += 1
    else:
        done = subprocess.run(resume, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    assert kills >= 5, "the sweep must have been killed mid-run many times"
    got, finals = _verdicts(tmp_path / "runs" / "k")
    renamed = {unit: ok for unit, ok in expected.items()}
    assert got == renamed
    assert all(n == 1 for n in finals.values()), [u for u, n in finals.items() if n > 1]
    assert mf.load(tmp_path / "runs" / "k").status == "finished"
