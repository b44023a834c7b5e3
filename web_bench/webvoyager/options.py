"""What `farm webvoyager run` was asked to do, checked before anything is read or written."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from farm.errors import FarmError
from web_bench.webvoyager.model import JudgeMode

MAX_CONCURRENCY = 8
DEFAULT_TIMEOUT_MS = 600_000
DEFAULT_MAX_ROUNDS = 50
DEFAULT_PREFLIGHT_TIMEOUT_MS = 60_000


class RunOptions(BaseModel):
    """The run's switches (the seed's defaults: headed, 600000 ms, reference judge, concurrency 1)."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    """Run id: the run lives in `<runs_dir>/<run_id>/`, the seed's tree in its `webvoyager/`."""
    runs_dir: Path = Path("runs")
    """Where runs live."""
    data_dir: Path | None = None
    """Verified data files (`farm webvoyager data`); null = the default data directory."""
    ids: list[str] | None = None
    """`--ids`: tasks to run, kept in data order."""
    count: int | None = None
    """`--count N`: the first N tasks of the set."""
    concurrency: int = Field(default=1, ge=1, le=MAX_CONCURRENCY)
    """Tasks running at once (each its own Chromium)."""
    timeout_ms: int = Field(default=DEFAULT_TIMEOUT_MS, ge=1, le=86_400_000)
    """Agent time limit per task."""
    max_rounds: int = Field(default=DEFAULT_MAX_ROUNDS, ge=1, le=10_000)
    """Model rounds per task."""
    reasoning_effort: str | None = None
    """`--reasoning-effort` (wins over EVAL_REASONING_EFFORT)."""
    headed: bool = True
    """Visible browser windows (the seed's formal condition)."""
    judge: JudgeMode = "reference"
    """Which judge scores the tasks."""
    preflight_timeout_ms: int = Field(default=DEFAULT_PREFLIGHT_TIMEOUT_MS, ge=1, le=3_600_000)
    """Longest wait for the preflight request."""
    resume: bool = False
    """Continue the run in place (same selection, models, parameters and code)."""
    retry_from: Path | None = None
    """A previous run's directory to recover from into this new run (the old one is only read)."""
    rerun_ids: list[str] = Field(default_factory=list)
    """Tasks the owner asked to replace with a new attempt."""
    new_rerun: bool = False
    """Make another independent re-run even when the same request already ran."""
    judge_only: bool = False
    """Only judge saved agent results that have no verdict."""
    dry_run: bool = False
    """Print the plan; load no credential, call no model, start no browser, write nothing."""
    record_har: Path | None = None
    """Save each task's network traffic as a HAR file under this directory."""
    replay_har: Path | None = None
    """Serve pages from HAR files recorded earlier (nothing leaves the machine)."""
    stand_in: Path | None = None
    """Serve the three sites from local stand-in pages (tests, the demo)."""
    chromium: str | None = None
    """Chromium executable."""

    def existing_run(self) -> bool:
        """Whether the command works on a run that already exists."""
        return self.resume or self.judge_only or bool(self.rerun_ids)

    def check(self) -> None:
        """FarmError for switches that cannot go together."""
        if self.resume and self.retry_from is not None:
            raise FarmError("--resume and --retry-from cannot go together",
                            hint="--resume continues a run in place; --retry-from OLD recovers OLD into a new --run")
        if self.retry_from is not None and (self.judge_only or self.rerun_ids):
            raise FarmError("--retry-from creates a new run; --judge-only and --rerun-ids work on an existing one",
                            hint="run --retry-from first, then --judge-only or --rerun-ids on the new run")
        if self.new_rerun and not self.rerun_ids:
            raise FarmError("--new-rerun needs --rerun-ids TASK_ID", hint="name the task to re-run")
        if self.judge_only and self.judge == "none":
            raise FarmError("--judge-only with --judge none judges nothing", hint="pass --judge reference or evidence")
        if self.judge_only and self.rerun_ids:
            raise FarmError("--judge-only runs no agent, so --rerun-ids cannot go with it",
                            hint="drop one of them")
        if self.record_har is not None and self.replay_har is not None:
            raise FarmError("--record-har and --replay-har cannot go together",
                            hint="record once live, then replay that directory in later runs")
        if self.ids is not None and self.count is not None:
            raise FarmError("--ids and --count cannot go together", hint="pick the tasks by id or by count")

    @property
    def har_mode(self) -> str:
        """`record`, `replay` or `live`."""
        if self.record_har is not None:
            return "record"
        if self.replay_har is not None:
            return "replay"
        return "live"
