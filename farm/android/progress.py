"""Live progress: one rich bar per phone (current task, done/total, and the labelled counts so far)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from farm.android.executor import TestStatus

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


class PhoneProgress:
    """ProgressSink of one phone, drawing into a shared rich Progress."""

    def __init__(
        self, progress: Progress | None, label: str, total: int, *, skipped: int = 0, claimed: bool = False
    ) -> None:
        """`total` tasks to run; `skipped` more were selected but skipped before running (they count as done),
        so the bar's total is the phone's planned units, as in the summary after the run. `claimed`: the
        statuses are the phone's own claims (the instrument stream), which the host re-scores afterwards."""
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
        """`passed P · failed F · skipped S · errors E`: the same labels as the summary after the run.

        Live counts of the instrument executor are what the phone says, not yet the host's verdict.
        """
        counts = f"passed {self.passed} · failed {self.failed} · skipped {self.skipped} · errors {self.errors}"
        return ("phone says " if self.claimed else "") + counts

    def task_started(self, task_id: str) -> None:
        """A task began."""
        with self._lock:
            self.current = task_id
            self._draw()

    def task_finished(self, task_id: str, status: TestStatus) -> None:
        """A task ended."""
        with self._lock:
            self.done += 1
            if status == "passed":
                self.passed += 1
            elif status == "failed":
                self.failed += 1
            elif status == "incomplete":
                # A test that never ended becomes an infrastructure-error record, not an agent failure.
                self.errors += 1
            else:
                # ignored / assumption_failure: the task did not run (e.g. no script for it).
                self.skipped += 1
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
