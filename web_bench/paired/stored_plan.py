"""A web run's plan as its manifest keeps it (the web lane's `detail.plan`), so `farm web run --run RUN --resume`
runs the rest of the same matrix with the same settings."""

from __future__ import annotations

import itertools
from pathlib import Path

from pydantic import Field, field_validator

from farm.camel import CamelModel
from farm.errors import FarmError
from web_bench.browser.contract import BackendName
from web_bench.paired.matrix import PlannedRun, pair_order, parse_seeds, plan
from web_bench.paired.results import MAX_SEED, MAX_TIMEOUT_MS, PolicyName
from web_bench.paired.site.state import TaskName


def seed_ranges(seeds: list[int]) -> str:
    """Seeds as the ranges `parse_seeds` reads back in the same order: `[1, 2, 3, 9]` → `1-3,9`."""
    parts: list[str] = []
    start = 0
    while start < len(seeds):
        end = start
        while end + 1 < len(seeds) and seeds[end + 1] == seeds[end] + 1:
            end += 1
        parts.append(str(seeds[start]) if start == end else f"{seeds[start]}-{seeds[end]}")
        start = end + 1
    return ",".join(parts)


class WebPlan(CamelModel):
    """What a `farm web run` planned, kept in its run's manifest (the web lane's `detail.plan`) from the start, so
    `farm web run --run RUN --resume` can run the rest of the same matrix with the same settings."""

    tasks: list[TaskName] = Field(min_length=1)
    """Task names, in plan order."""
    seeds: str
    """The seeds (already cut to one by `smoke`), as ranges `parse_seeds` reads back in plan order (`1-5,9`)."""
    trials: int = Field(ge=1)
    """Trials per (task, seed) (1 with `smoke`)."""
    backends: list[BackendName] = Field(min_length=1)
    """Backends in plan order: each pair's run order is a rotation of it."""
    smoke: bool = False
    """Started with --smoke (`seeds` and `trials` are already cut to it)."""
    policy: PolicyName
    """Who chose the tool calls: model or scripted."""
    timeout_ms: int = Field(ge=1, le=MAX_TIMEOUT_MS)
    """Time limit of one run."""
    provider: str | None = None
    """--provider (null: FARM_LLM_PROVIDER at the time of each start)."""
    model: str | None = None
    """--model (null: FARM_LLM_MODEL)."""
    reasoning_effort: str | None = None
    """--reasoning-effort (null: FARM_LLM_REASONING_EFFORT)."""
    virtual_phone: bool = False
    """android-chrome ran on a virtual phone (--virtual-phone)."""
    results: str = Field(min_length=1)
    """The results file: relative to the run directory, absolute when outside it (--out)."""
    owns_status: bool = False
    """The web lane created the run, so it sets the manifest's status and finish time; a lane that joined another
    lane's run leaves them to that lane."""

    @field_validator("seeds")
    @classmethod
    def _seeds_read_back(cls, value: str) -> str:
        # A hand-edited manifest must fail here, as one line, not halfway into a resumed run.
        try:
            parse_seeds(value)
        except FarmError as exc:
            raise ValueError(exc.message) from None
        return value

    def matrix(self) -> list[PlannedRun]:
        """Every planned run, in the order the run started them."""
        return plan(self.tasks, parse_seeds(self.seeds), self.trials, self.backends)

    def results_path(self, run_dir: Path) -> Path:
        """The results file of the run in `run_dir`."""
        path = Path(self.results)
        return path if path.is_absolute() else run_dir / path


def matrix_spec(runs: list[PlannedRun]) -> tuple[list[TaskName], list[int], int, list[BackendName]] | None:
    """The (tasks, seeds, trials, backends) `plan` makes exactly `runs` from; None when `runs` is not a whole plan
    (a hand-picked list cannot be resumed: nothing says which runs it left out)."""
    if not runs:
        return None
    tasks = list(dict.fromkeys(r.task for r in runs))
    seeds = list(dict.fromkeys(r.seed for r in runs))
    trials = max(r.trial for r in runs)
    first = runs[0]
    # A plan starts with the first pair, in its rotated order; exactly one backend order rotates to it.
    order = list(itertools.takewhile(lambda r: r.pair_id == first.pair_id, runs))
    shown = [r.backend for r in order]
    backends = next((list(b) for b in itertools.permutations(shown)
                     if pair_order(first.task, first.seed, first.trial, list(b)) == shown), None)
    if backends is None or min(seeds) < 0 or max(seeds) > MAX_SEED or min(r.trial for r in runs) < 1:
        return None
    if plan(tasks, seeds, trials, backends) != runs:
        return None
    return tasks, seeds, trials, backends
