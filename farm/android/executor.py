"""The contract between the android lane and the two executors (instrument, host).

The lane discovers and prepares a phone, resolves its tasks, and hands one `PhoneJob` to an
executor. The executor drives the tasks and must leave the phone's `eval/<run>/` tree (the
on-device layout: `scores.jsonl`, `metrics.json`, `summary.md`, `<id>/run/…`) in
`job.raw_dir`. The lane then normalises that tree into records: tasks listed in
`ExecutorOutcome.unfinished` become infrastructure-error records, never agent failures.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from farm.errors import FarmError

if TYPE_CHECKING:
    from adbutils import AdbDevice

    from farm.android.options import HostSettings, RunOptions
    from farm.config import FarmConfig
    from farm.scoring.evidence import ProbeReading
    from farm.taskset.model import Task

ExecutorName = Literal["instrument", "host"]
# Per-task status as the instrumentation stream (or the host executor) reports it.
TestStatus = Literal["passed", "failed", "ignored", "assumption_failure", "incomplete"]


@dataclass(frozen=True)
class ResolvedTask:
    """A task ready to run on one phone: every placeholder filled for that phone."""

    task: Task
    """The task with `{app:…}`, `{probe:…}` and `{run}` substituted."""
    directory: str
    """Directory of the task file under tasks/, e.g. `read/system`."""
    sha256: str
    """SHA-256 of the task file bytes."""
    apps: dict[str, str] = field(default_factory=dict)
    """Capability → package resolved on this phone."""
    probes: dict[str, str] = field(default_factory=dict)
    """Probe key (`name` or `name:param`) → value read before the task."""
    markers: list[str] = field(default_factory=list)
    """Markers this task will create (resolved `marker`)."""
    alternatives: dict[str, list[str]] = field(default_factory=dict)
    """Resolved capability package → every package on this phone handling that capability (when several)."""

    @property
    def id(self) -> str:
        """The task id."""
        return self.task.id


@dataclass
class PhoneJob:
    """Everything an executor needs to run one phone's share of a run."""

    device: AdbDevice
    """adbutils device handle (reached through the right adb server)."""
    serial: str
    """adb serial."""
    label: str
    """The phone's stable name (`farm.phone_name`: the farm.yaml label, else `<model> · <short serial>`)."""
    run_id: str
    """Run id; also the on-device `eval/<run>/` name."""
    tasks: list[ResolvedTask]
    """Tasks to run on this phone (skipped ones are already removed)."""
    options: RunOptions
    """Run-wide options (the same for every phone of the run)."""
    raw_dir: Path
    """Local directory where the phone's `eval/<run>/` tree must end up."""
    device_eval_dir: str
    """On-device `eval/<run>/` directory of the agent app."""
    device_bundle_path: str
    """On-device path of the pushed task bundle (`-e evalTasks`)."""
    stop: threading.Event | None = None
    """Set when the user stopped the run (Ctrl-C, SIGTERM): start no new task, end the running one's wait."""
    state_before: dict[str, dict[str, ProbeReading]] = field(default_factory=dict)
    """Task id → its state probes as the harness read them just before the job (`host_agent.state_probes`)."""


class ProgressSink(Protocol):
    """Live progress of one phone; implementations must be thread-safe."""

    def task_started(self, task_id: str) -> None:
        """A task began."""

    def task_finished(self, task_id: str, status: TestStatus) -> None:
        """A task ended with the given status."""

    def note(self, text: str) -> None:
        """A one-line remark (watchdog, crash, pull)."""


@dataclass
class ExecutorOutcome:
    """What an executor reports back after running one phone's job."""

    finished: list[str] = field(default_factory=list)
    """Task ids that ran to an end (their results are in `raw_dir`)."""
    unfinished: list[str] = field(default_factory=list)
    """Task ids that never finished: they become infrastructure-error records."""
    statuses: dict[str, TestStatus] = field(default_factory=dict)
    """Status per task id as the executor saw it."""
    infrastructure_error: str | None = None
    """Why the phone's run stopped early (watchdog, disconnect, crash), if it did."""
    crashed: bool = False
    """The agent process crashed (`Process crashed.`)."""
    pulled: bool = False
    """Whether `raw_dir` holds the phone's eval tree."""
    pull_refused: list[str] = field(default_factory=list)
    """Entries of the pulled tree that were refused (escaping names, too large)."""
    looked: list[str] = field(default_factory=list)
    """Task ids after which the harness looked at the phone itself (instrument executor): their
    `<id>/run/harness-look.json` in `raw_dir` is the harness's, and the only source of their fresh looks and
    after-probes. A task that needed a look and is not listed is not scored on the app's word."""
    stop_dispatch: str | None = None
    """Set when no phone can do useful work any more (the model provider's quota is used up or its key refused):
    one line naming the provider and why. The run must start no new unit; this job's tasks that ended on it (or
    never started) are not the phone's failure, and are kept for `--resume`."""


class Executor(Protocol):
    """Runs one phone's tasks and leaves its eval tree in `job.raw_dir`."""

    name: ExecutorName

    def run(self, job: PhoneJob, progress: ProgressSink) -> ExecutorOutcome:
        """Run `job.tasks` on `job.device`; never raise for per-task problems."""
        ...

    def close(self) -> None:
        """Release what the executor kept between jobs (connections to phones)."""
        ...


class NullProgress:
    """A progress sink that ignores everything (tests, benchmarks)."""

    def task_started(self, task_id: str) -> None:
        """Ignore."""

    def task_finished(self, task_id: str, status: TestStatus) -> None:
        """Ignore."""

    def note(self, text: str) -> None:
        """Ignore."""


def load_executor(name: str, cfg: FarmConfig, host: HostSettings | None = None) -> Executor:
    """The executor by name (imported on demand: the host executor pulls in uiautomator2 and the model SDKs)."""
    if name == "instrument":
        from farm.android.instrument_executor import InstrumentExecutor

        return InstrumentExecutor(cfg.pull)
    if name == "host":
        from farm.android.host_executor import make_executor

        return make_executor(cfg, host)
    raise FarmError(f"--executor {name}: unknown executor", hint="use instrument or host")
