"""What a report shows, computed once from the records and rendered by every writer."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from farm.report.glance import Grid, Timeline
from farm.report.lanes import LaneSection
from farm.report.lost_hosts import LostHost
from farm.report.paired import Comparison
from farm.report.rate import RateRow as RateRow  # re-exported: every surface imports it from here


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CountRow(_M):
    """A labelled count."""

    key: str
    """What is counted."""
    count: int
    """How many."""


class SkipRow(_M):
    """A skipped task on a phone and why."""

    task_id: str
    """Task id."""
    device: str
    """Device label."""
    reason: str
    """Why it was skipped."""
    instance: str = ""
    """Task instance (the web lane's data seed)."""
    repeat: int = 1
    """Repeat index."""
    run: str = ""
    """Run id."""


class LeftOutRow(_M):
    """A phone a run found but did not use, and why (the health gate, or it could not be prepared)."""

    run: str
    """Run id."""
    device: str
    """Device label."""
    reason: str
    """Why it was left out."""


class PhoneRow(_M):
    """A phone of the runs, as every surface names it: its stable name with its serial and adb server."""

    name: str
    """Its stable name (`farm.phone_name`): the farm.yaml label, else `<model> · <short serial>`; the same in
    every run, whatever other phones the run had."""
    serial: str
    """adb serial (`<serial>@<host:port>` when two adb servers list different phones under one serial)."""
    adb_server: str
    """`host:port` of the adb server that reached it; empty when the run did not record it."""
    model: str | None = None
    """ro.product.model; null when unknown."""


class TaskRow(_M):
    """The verdict of one task on one phone (junit, csv, per-task tables)."""

    run: str
    """Run id."""
    task_id: str
    """Task id."""
    device: str
    """Device label."""
    instance: str
    """Task instance (the web lane's data seed); empty when a task has one."""
    repeat: int
    """Repeat index."""
    category: str
    """Category."""
    partition: str
    """Pool."""
    expect: str
    """Expected outcome."""
    outcome: str
    """Outcome."""
    initial: bool
    """Verdict before human re-judgement."""
    final: bool
    """Verdict after human re-judgement."""
    reason: str
    """First reason (skip, failure, error), shortened."""
    failure_category: str
    """Failure category."""
    seconds: float | None
    """Wall time of the attempt."""
    evidence: str = ""
    """The attempt's run record, relative to its run directory (empty when none was kept)."""
    failing_checks: list[str] = Field(default_factory=list)
    """Every check that did not pass (failed, or unjudged), as words (`farm.report.why`)."""


class FailureGroup(_M):
    """The units of one task that did not pass, on every phone: the "Not passed" list read by task."""

    run: str
    """Run id."""
    task_id: str
    """Task id (its instances and repeats together)."""
    category: str
    """Category."""
    phones_failed: int
    """Phones on which some unit of the task did not pass."""
    phones_run: int
    """Phones on which some unit of the task was attempted."""
    units_failed: int
    """Units of the task that did not pass."""
    why: list[CountRow] = Field(default_factory=list)
    """What went wrong and in how many units: each failing check (else the first reason), most frequent first."""
    why_more: int = 0
    """Further distinct failing checks or reasons not listed."""
    rows: list[int] = Field(default_factory=list)
    """Positions in `ReportData.failures` of this task's unit rows (those listed there)."""


class Stat(_M):
    """Median and P90 (nearest rank) of a metric, over the attempts that reported it."""

    name: str
    """Metric."""
    n: int
    """Attempts that reported it."""
    median: float | None
    """Median."""
    p90: float | None
    """P90."""


class SumRow(_M):
    """A sum over attempts and how many attempts did not report the value (null stays null)."""

    name: str
    """What is summed."""
    total: float | None
    """Sum of the known values; null when none is known."""
    known: int
    """Attempts with a value."""
    unknown: int
    """Attempts without one."""


class OverrideRow(_M):
    """A human re-judgement and whether it was applied."""

    run: str
    """Run id."""
    task_id: str
    """Task id."""
    device: str
    """Device label."""
    instance: str = ""
    """Task instance."""
    repeat: int = 1
    """Repeat index."""
    initial: str
    """Initial verdict (pass/fail)."""
    final: str
    """Final verdict (the requested one when applied)."""
    category_from: str = ""
    """Failure category before re-judgement (empty: none)."""
    category_to: str = ""
    """Failure category after it (the requested one when applied)."""
    evidence: str
    """Quoted evidence."""
    applied: bool
    """Applied (True) or refused."""
    note: str
    """Why it was refused, or where it came from."""


class RetriedRow(_M):
    """A unit whose shown attempt is not its first: earlier tries failed for an infrastructure reason."""

    run: str
    """Run id."""
    task_id: str
    """Task id."""
    instance: str
    """Task instance."""
    repeat: int
    """Repeat index."""
    device: str
    """Label of the phone (or backend) of the shown attempt."""
    attempt: int
    """The shown attempt's number (tries it took)."""
    outcome: str
    """Outcome of the shown attempt."""


class DisagreementRow(_M):
    """An attempt the phone's own scorer judged differently from the host."""

    run: str
    """Run id."""
    task_id: str
    """Task id."""
    instance: str
    """Task instance."""
    repeat: int
    """Repeat index."""
    device: str
    """Device label."""
    phone_outcome: str
    """Outcome the phone reported."""
    phone_passed: bool
    """Verdict the phone reported."""
    host_outcome: str
    """Outcome the host scored."""
    host_passed: bool
    """Verdict the host scored (before human re-judgement)."""
    reason: str
    """The host's first reason, shortened."""


class MarkerRow(_M):
    """Markers a phone's write tasks created, for manual clean-up."""

    device: str
    """Device label."""
    task_id: str
    """Task that created them."""
    markers: list[str]
    """Marker texts."""


class SinceRow(_M):
    """This run against the previous comparable one (`farm.report.since`: like with like only)."""

    previous_run: str
    """The previous comparable run's id."""
    previous_created_at: str
    """When it was created (ISO-8601)."""
    previous: RateRow
    """Its headline."""
    paired: int
    """Pairs (`farm history`'s: lane, task, instance, phone) judged in both runs."""
    regressions: int
    """Pairs that passed there and fail here."""
    fixes: int
    """Pairs that failed there and pass here."""
    regressed: list[str] = Field(default_factory=list)
    """`task on phone` of the first regressions."""
    fixed: list[str] = Field(default_factory=list)
    """`task on phone` of the first fixes."""
    mcnemar_p: float | None = None
    """Exact McNemar p over the paired units (None without a discordant pair)."""
    compared: str = ""
    """What both runs share, which made them comparable: label, each lane with its settings (executor, split,
    set…), holdout policy (`farm.report.since.compared_text`)."""
    tasks_changed: int = 0
    """Tasks of both runs whose file changed between them (another version of the task): not paired."""


class ReportData(_M):
    """Everything the report writers render."""

    runs: list[str]
    """Run ids, in the order given."""
    generated_at: str
    """ISO-8601 UTC time of the report."""
    include_holdout: bool
    """Whether holdout results are shown."""
    hidden_holdout_tasks: int
    """Distinct holdout tasks hidden from this report."""
    hidden_holdout_attempts: int
    """Holdout attempts hidden."""
    execution: list[str]
    """Execution kinds present (simulated results are labelled as such)."""
    overall: RateRow
    """All attempts."""
    outcomes: list[CountRow]
    """Attempts per outcome (skips included)."""
    by_category: list[RateRow]
    """Per category."""
    by_partition: list[RateRow]
    """Per pool."""
    by_device: list[RateRow]
    """Per phone, by its stable name (`phones` says where each is)."""
    by_expect: list[RateRow]
    """Per expected outcome."""
    skipped: list[SkipRow]
    """Skipped tasks with reasons (first rows)."""
    skipped_total: int
    """All skipped attempts."""
    login_handover: list[SkipRow]
    """交给用户:login — read tasks handed over at a login wall; not counted as success (first rows)."""
    login_handover_total: int = 0
    """All login hand-overs."""
    failure_categories: list[CountRow]
    """Non-passing attempts per failure category."""
    infrastructure_errors: int
    """Attempts that ended in an infrastructure error."""
    timing: list[Stat]
    """运行小结: first feedback, round trips, total time."""
    time_split: list[SumRow]
    """Where the time went: model, screen read, action, other (ms)."""
    tokens: list[SumRow]
    """Token sums."""
    cost: SumRow
    """Cost in USD."""
    overrides: list[OverrideRow]
    """Human re-judgements, applied and refused."""
    markers: list[MarkerRow]
    """Marker clean-up list (first rows)."""
    markers_total: int = 0
    """All attempts that left markers."""
    failures: list[TaskRow] = Field(default_factory=list)
    """Attempts that did not pass (first rows), with reasons."""
    failures_total: int = 0
    """All attempts that did not pass."""
    failure_groups: list[FailureGroup] = Field(default_factory=list)
    """The attempts that did not pass, by task (first groups): most phones failed first."""
    failure_groups_total: int = 0
    """All tasks with an attempt that did not pass."""
    comparison: Comparison | None = None
    """Two-run paired comparison."""
    warnings: list[str] = Field(default_factory=list)
    """Damaged record lines that were skipped (`file:line: …`)."""
    links: list[str] = Field(default_factory=list)
    """Related outputs the lane made (e.g. the sweep's night-over-night history), relative to the report."""
    unfinished_runs: list[str] = Field(default_factory=list)
    """`run (status)` of each run whose manifest does not say finished (interrupted, running, failed)."""
    disagreements: list[DisagreementRow] = Field(default_factory=list)
    """Attempts where the phone's verdict differs from the host's (first rows)."""
    disagreements_total: int = 0
    """All such attempts."""
    retried: list[RetriedRow] = Field(default_factory=list)
    """Units that needed more than one try (first rows); each try is in the run's journal."""
    retried_total: int = 0
    """All such units."""
    end_reasons: list[CountRow] = Field(default_factory=list)
    """Why attempts that did not pass ended (max_steps, timeout…), most frequent first; unrecorded ones apart."""
    end_reason_unrecorded: int = 0
    """Attempts that did not pass and did not say why they ended."""
    left_out: list[LeftOutRow] = Field(default_factory=list)
    """Phones found but not used, with the reason: the numbers do not cover them."""
    phones: list[PhoneRow] = Field(default_factory=list)
    """Every phone of the runs (used or left out, or only named by records), by name: where each is."""
    lost_hosts: list[LostHost] = Field(default_factory=list)
    """Farm hosts (adb servers) a run lost, at the start or midway, with its phones there
    (`farm.report.lost_hosts`): shown under the headline, since the numbers leave those phones out."""
    notes: list[str] = Field(default_factory=list)
    """The runs' own notes (quarantines, refused pull entries, unreachable adb servers…), serials replaced by
    device labels (first rows)."""
    notes_total: int = 0
    """All such notes."""
    run_paths: dict[str, str] = Field(default_factory=dict)
    """Run id → its directory relative to the report (set when the report is written; links to evidence)."""
    instances: bool = False
    """Some unit has a task instance: unit names show it."""
    repeats: bool = False
    """Some unit is a repeat beyond the first: unit names show the repeat index."""
    since: SinceRow | None = None
    """This run against the previous comparable one (one-run reports; None when there is none)."""
    lane_sections: list[LaneSection] = Field(default_factory=list)
    """What the runs' lanes add beyond the record tables (web backends, desktop batches), in run order."""
    grid: Grid | None = None
    """Task × phone verdicts of the (last) run; null when it has no units."""
    timeline: Timeline | None = None
    """The (last) run's units on a time axis per phone; null when no unit has start and end times."""
    skipped_by_run: dict[str, int] = Field(default_factory=dict)
    """Skipped attempts per run (each run's skipped list is labelled with it)."""
    login_handover_by_run: dict[str, int] = Field(default_factory=dict)
    """Login hand-overs per run."""

    def unit(self, task_id: str, instance: str, repeat: int) -> str:
        """A unit's name in tables: the task id, with instance and repeat when the report has them."""
        return unit_name(task_id, instance, repeat, instances=self.instances, repeats=self.repeats)


def unit_name(task_id: str, instance: str, repeat: int, *, instances: bool, repeats: bool) -> str:
    """`task`, `task [instance 3]`, `task [repeat 2]` or `task [instance 3, repeat 2]`."""
    parts = ([f"instance {instance}"] if instances and instance else []) + ([f"repeat {repeat}"] if repeats else [])
    return f"{task_id} [{', '.join(parts)}]" if parts else task_id
