"""The run matrix: tasks × seeds × trials pairs, each run on every backend, order by a stable hash."""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel, ConfigDict

from farm.errors import FarmError
from web_bench.browser.contract import BACKEND_NAMES, DEFAULT_BACKENDS, BackendName
from web_bench.paired.results import MAX_SEED
from web_bench.paired.site.catalog import TASK_NAMES
from web_bench.paired.site.state import TaskName

MAX_RUNS = 100_000
"""Most runs one `farm web run` plans (tasks × seeds × trials × backends): weeks of runs at a few seconds
each. More is a typo, and would be refused only after building a list that does not fit in memory."""


class PlannedRun(BaseModel):
    """One run to do."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: TaskName
    """Task."""
    seed: int
    """Seed."""
    trial: int
    """Trial (1-based)."""
    backend: BackendName
    """Backend."""
    order_in_pair: int
    """Position of this run in its pair (1 = first)."""
    first_backend: BackendName
    """The pair's first backend."""

    @property
    def pair_id(self) -> str:
        """`task:seed:trial`."""
        return f"{self.task}:{self.seed}:{self.trial}"


def parse_tasks(text: str | None) -> list[TaskName]:
    """`a,b` → task names (all six when empty); FarmError naming an unknown one."""
    if not text:
        return list(TASK_NAMES)
    chosen: list[TaskName] = []
    for raw in text.split(","):
        name = raw.strip()
        match = next((t for t in TASK_NAMES if t == name), None)
        if match is None:
            raise FarmError(f"--tasks: unknown task {name!r}", hint=f"choose from {', '.join(TASK_NAMES)}")
        if match not in chosen:
            chosen.append(match)
    return chosen


def parse_seeds(text: str) -> list[int]:
    """`1-5`, `3`, `1,4,9` or `1-3,7` → seeds (each 0…MAX_SEED, at most MAX_RUNS of them); FarmError on
    anything else."""
    # A dict keeps first-seen order and makes the duplicate check constant-time over a million seeds.
    seeds: dict[int, None] = {}
    for part in text.split(","):
        part = part.strip()
        # ASCII digits, a bounded count of them: `int` refuses (with a traceback) over 4300 digits and
        # accepts non-ASCII digits no one means.
        span = re.fullmatch(r"(\d{1,9})(?:-(\d{1,9}))?", part, flags=re.ASCII)
        if span is None:
            raise FarmError(f"--seeds: bad seed range {text[:40]!r}", hint="use e.g. 1-5, 3 or 1,4,9")
        low = int(span[1])
        high = int(span[2]) if span[2] else low
        if high < low or high > MAX_SEED:
            raise FarmError(f"--seeds: bad seed range {part!r}", hint=f"low-high with low ≤ high ≤ {MAX_SEED}")
        if high - low + 1 <= MAX_RUNS:
            seeds.update(dict.fromkeys(range(low, high + 1)))
        if high - low + 1 > MAX_RUNS or len(seeds) > MAX_RUNS:
            raise FarmError(f"--seeds: {text[:40]!r} is more than {MAX_RUNS} seeds", hint="choose fewer seeds")
    return list(seeds)


def parse_backends(text: str | None) -> list[BackendName]:
    """`playwright,extension` → backend names (seed 001's pair, playwright and extension, when empty)."""
    if not text:
        return list(DEFAULT_BACKENDS)
    chosen: list[BackendName] = []
    for raw in text.split(","):
        name = raw.strip()
        match = next((b for b in BACKEND_NAMES if b == name), None)
        if match is None:
            raise FarmError(f"--backends: unknown backend {name!r}", hint=f"choose from {', '.join(BACKEND_NAMES)}")
        if match not in chosen:
            chosen.append(match)
    return chosen


def pair_order(task: str, seed: int, trial: int, backends: list[BackendName]) -> list[BackendName]:
    """The order a pair's runs go in: rotated by a hash of (task, seed, trial), so it alternates
    deterministically instead of always favouring the same backend with a warm start."""
    shift = hashlib.sha256(f"{task}:{seed}:{trial}".encode()).digest()[0] % len(backends)
    return backends[shift:] + backends[:shift]


def plan(tasks: list[TaskName], seeds: list[int], trials: int, backends: list[BackendName]) -> list[PlannedRun]:
    """Every run, pair by pair; FarmError for fewer than one trial or more than MAX_RUNS runs."""
    if trials < 1:
        raise FarmError(f"--trials: must be at least 1, got {trials}", hint="pass --trials 1 or more")
    total = len(tasks) * len(seeds) * trials * len(backends)
    if total > MAX_RUNS:
        raise FarmError(f"--trials/--seeds: {total} runs planned, more than {MAX_RUNS}",
                        hint="choose fewer trials, seeds or tasks, or split the benchmark into several runs")
    runs: list[PlannedRun] = []
    for trial in range(1, trials + 1):
        for seed in seeds:
            for task in tasks:
                order = pair_order(task, seed, trial, backends)
                runs.extend(
                    PlannedRun(
                        task=task, seed=seed, trial=trial, backend=b, order_in_pair=i + 1, first_backend=order[0]
                    )
                    for i, b in enumerate(order)
                )
    return runs
