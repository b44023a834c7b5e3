"""Live progress: one rich bar per phone (current task, done/total, and the labelled verdicts so far), and the
plain line per finished unit where there are no bars, written whole by one writer."""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Literal

from farm.android.executor import TestStatus
from farm.report.headline import initial_passed
from farm.report.why import clip, record_why

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from farm.results.record import Record

Verdict = Literal["passed", "failed", "error", "skipped"]
LINE_WHY_CHARS = 120
"""Longest why (`farm.report.why`) a progress line adds after a verdict that is not a pass."""
_LINES = threading.Lock()


def verdict(record: Record) -> Verdict:
    """The verdict of a record as the reports count it (`initial_passed`): a skip and an infrastructure error are
    neither a pass nor a failure; everything else that did not pass failed, whatever its outcome."""
    if record.outcome == "skipped":
        return "skipped"
    if record.outcome == "error":
        return "error"
    return "passed" if initial_passed(record) else "failed"


def record_line(done: int, total: int, record: Record, phone: str) -> str:
    """`[n/N] task r1 on phone: failed — why` for the n-th finished unit (1…N) of N."""
    said = verdict(record)
    why = "" if said == "passed" else record_why(record).message
    return (f"[{done}/{total}] {record.task_id} r{record.repeat} on {phone}: {said}"
            + (f" — {clip(why, LINE_WHY_CHARS)}" if why else ""))


def say(text: str) -> None:
    """One whole line on stderr, never mixed with another thread's: the text and its newline in one write,
    under one lock (a pipe or a log file gets whole lines however many phones finish at once)."""
    with _LINES:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


class PhoneProgress:
    """ProgressSink of one phone, drawing into a shared rich Progress."""

    def __init__(
        self, progress: Progress | None, label: str, total: int, *, skipped: int = 0, claimed: bool = False
    ) -> None:
        """`total` tasks to run; `skipped` more were selected but skipped before running (they count as done),
        so the bar's total is the phone's planned units, as in the summary after the run. `claimed`: the
        statuses are the phone's own claims (the instrument stream), which the host re-scores afterwards; the
        counts are the verdicts of the records (`recorded`), never the claims."""
        self.claimed = claimed
        self._progress = progress
        self._lock = threading.Lock()
        self.label = label
        self.done = skipped
        self.passed = 0
        self.failed = 0
        self.skipped = skipped
        self.errors = 0
        self.current = ""
        self.notes: list[str] = []
        self._task: TaskID | None = (
            progress.add_task(label, total=max(total + skipped, 1), status="waiting") if progress is not None else None
        )

    def _draw(self) -> None:
        if self._progress is None or self._task is None:
            return
        status = self.counts() + (f" · {self.current}" if self.current else "")
        if self.notes:
            status += f" · {self.notes[-1]}"
        self._progress.update(self._task, completed=self.done, status=status)

    def counts(self) -> str:
        """`passed P · failed F · skipped S · errors E`: the same labels and verdicts as the summary after the run
        (the host's verdicts of the records so far, never what the phone claims)."""
        return f"passed {self.passed} · failed {self.failed} · skipped {self.skipped} · errors {self.errors}"

    def task_started(self, task_id: str) -> None:
        """A task began."""
        with self._lock:
            self.current = task_id
            self._draw()

    def task_finished(self, task_id: str, status: TestStatus) -> None:
        """A task ended; its verdict comes with its record (`recorded`)."""
        with self._lock:
            self.current = f"{task_id}: scoring" if self.claimed and status != "incomplete" else ""
            self._draw()

    def recorded(self, record: Record) -> None:
        """A unit of this phone finished with this record: counted by its verdict (`verdict`)."""
        with self._lock:
            self.done += 1
            said = verdict(record)
            if said == "passed":
                self.passed += 1
            elif said == "failed":
                self.failed += 1
            elif said == "error":
                self.errors += 1
            else:
                self.skipped += 1
            if self.current.startswith(f"{record.task_id}: "):
                self.current = ""
            self._draw()

    def note(self, text: str) -> None:
        """A remark (watchdog, crash, pull)."""
        with self._lock:
            self.notes.append(text)
            self._draw()


def make_progress(enabled: bool) -> Progress | None:
    """A rich Progress drawing on stderr, with a status column; None when output is not wanted or stderr is not
    a terminal (a log file or a CI job gets the caller's plain line per finished task instead of redrawn bars)."""
    import sys

    if not enabled or not sys.stderr.isatty():
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[status]}"),
        # stdout carries the results (the run directory, the report paths): bars never mix into it.
        console=Console(stderr=True, highlight=False),
        transient=False,
    )
