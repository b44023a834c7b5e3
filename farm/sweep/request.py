"""What `farm sweep` is asked to do: the agent's options (shared with `farm run`) and the sweep's own."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import JsonValue

from farm.android.options import AgentOptions, HostSettings
from farm.exits import EXIT_BELOW, EXIT_FAILED, EXIT_HOST_LOST, EXIT_INFRA, EXIT_OK, EXIT_UNFINISHED
from farm.sweep.plan import Spread
from farm.taskset.select import TaskSelection


def exit_status(*, unfinished: int, attempted: int, passed: int, errors: int, fail_under: float | None,
                lost_hosts: int = 0) -> int:
    """The exit status of a finished run or sweep. The most urgent first: a lost host (bring it back), then
    unfinished units (resume), then infrastructure errors (fix the farm), then the pass rate below `--fail-under`,
    then agent failures. With `--fail-under`, failures at or above the threshold are accepted; without it any
    failure is status 1."""
    if lost_hosts:
        return EXIT_HOST_LOST
    if unfinished:
        return EXIT_UNFINISHED
    if errors:
        return EXIT_INFRA
    if fail_under is not None:
        rate = passed / attempted if attempted else None
        return EXIT_BELOW if rate is None or rate < fail_under else EXIT_OK
    return EXIT_FAILED if passed < attempted else EXIT_OK


@dataclass
class SweepRequest:
    """Everything one `farm sweep` or `farm run` (new, resumed, or retrying another run) was asked to do."""

    kind: Literal["sweep", "run"] = "sweep"
    """`sweep`: the farm's nightly job (holds the farm lock, every phone by default, a line per unit);
    `run`: a developer's run on the phones at hand (no farm lock, the only phone unless `--all` or
    `--device`, progress bars)."""
    agent: AgentOptions = field(default_factory=lambda: AgentOptions(split="all"))
    """What the agent run is asked to do (split, set, prices, agent switches)."""
    spread: Spread = "every-phone"
    """`every-phone`: each phone runs every task it can (device coverage); `shard`: each task × repeat runs
    once, on whichever eligible phone is free first."""
    repeats: int = 1
    """Runs of each unit (pass@k / pass^k and the flaky list need more than one)."""
    executor: Literal["instrument", "host"] = "instrument"
    """`instrument` (the agent app on the phone) or `host` (host_agent)."""
    host: HostSettings | None = None
    """Policy and model for the host executor."""
    selection: TaskSelection | None = None
    """Which tasks beyond the pool: repeated `--set`, `-k`, `--exclude`, `--only-failed-from` (see
    `farm.taskset.select`); null = `agent.set_prefix` alone chooses."""
    serials: list[str] = field(default_factory=list)
    """Only these phones; empty = every healthy phone of every adb server (see `all_phones`)."""
    all_phones: bool = True
    """With no `serials`: every phone; False (`farm run` without `--all`) = the only phone there is, and a
    one-line refusal when there are several."""
    profile: str | None = None
    """Instrument profile name in farm.yaml."""
    run_id: str | None = None
    """Run id (with `resume`: the run to continue)."""
    resume: bool = False
    """Continue the stopped sweep `run_id`."""
    retry_from: str | None = None
    """A new run that reuses this run's finished units (provenance `mixed`)."""
    label: str | None = None
    """Tag of the run (`nightly`), for `farm history`."""
    batch: int = 1
    """Instrument executor: units of distinct tasks per `am instrument` call (each call's start-up is paid once
    per batch; a crash or a lost phone costs the whole batch a try)."""
    max_tries: int = 3
    """Tries of one unit before it is left unfinished (infrastructure failures only)."""
    quarantine_after: int = 3
    """Infrastructure failures in a row after which a phone is quarantined."""
    recheck_s: float = 60.0
    """How often quarantined phones are health-checked for re-admission."""
    fail_under: float | None = None
    """Exit status 4 when the pass rate is below this (0–1)."""
    tasks_dir: Path | None = None
    """Task set root; null = farm.yaml `tasks_dir`."""
    runs_dir: Path | None = None
    """Where run directories go; null = farm.yaml `runs_dir`."""
    config: Path | None = None
    """farm.yaml; null = ./farm.yaml when present, else the defaults."""
    probes_dir: Path | None = None
    """Probe catalogue; null = the built-in one."""
    idle_timeout_s: float | None = None
    """No-output watchdog per unit; null = farm.yaml `idle_timeout_s`."""
    deadline_s: float | None = None
    """Seconds from the start (or the resume) after which no unit starts and running ones stop; the units left
    are recorded unfinished. Null = no deadline."""
    command: list[str] = field(default_factory=list)
    """The command line, recorded in the manifest."""
    show_progress: bool = True
    """A sweep prints a line per finished unit, a run draws a progress bar per phone."""
    wait: bool = False
    """`farm run --wait`: a phone another run or sweep holds (`farm.leases`) is waited for, not refused."""
    min_free_mb: float | None = None
    """Free-space floor of the runs directory's filesystem below which the sweep does not start (exit 2); null =
    farm.yaml `min_free_mb`, else `farm.disk_space.FREE_SPACE_FLOOR_MB`."""

    def resume_command(self, run_id: str) -> str:
        """The command that continues this run."""
        return f"farm {self.kind} --resume {run_id}"

    def identity_options(self) -> dict[str, JsonValue]:
        """The options a resume must find unchanged (what the units measure, not how they are scheduled)."""
        return {
            "agent": self.agent.model_dump(mode="json"), "spread": self.spread, "repeats": self.repeats,
            "executor": self.executor, "profile": self.profile, "batch": self.batch,
            "host": self.host.model_dump(mode="json") if self.host else None,
            "serials": list[JsonValue](sorted(self.serials)),
            "selection": self.selection.model_dump(mode="json") if self.selection else None,
        }
