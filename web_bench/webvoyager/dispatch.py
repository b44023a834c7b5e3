"""One agent attempt in a child process: start the worker, wait at most the task's time limit (plus a grace
for the browser's cleanup), stop it, and read back what it wrote. A child that wrote nothing still leaves a
result: the parent's observed interval, marked as such."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from pydantic import ValidationError

from farm.fsutil import atomic_write_text
from farm.manifest import utc_now
from web_bench.webvoyager.agent import AgentSettings
from web_bench.webvoyager.model import AgentResult, ErrorKind, WvTask
from web_bench.webvoyager.worker import write_worker_input

GRACE_S = 30.0
"""Time past the task's limit the worker gets to write its result and close its browser."""
TERM_WAIT_S = 10.0
"""Time between SIGTERM and SIGKILL."""


def read_result(attempt_dir: Path) -> AgentResult | None:
    """The attempt's `result.json`, or None when it is absent or unreadable (a worker killed mid-write cannot
    leave half a file: the worker writes it atomically)."""
    path = attempt_dir / "result.json"
    try:
        return AgentResult.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a worker: SIGTERM to the worker alone (it records an interrupted result and closes its browser),
    then, after TERM_WAIT_S or once it is gone, SIGKILL to whatever is left of its process group."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(TERM_WAIT_S)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def run_in_child(
    task: WvTask, attempt: int, attempt_dir: Path, settings: AgentSettings, *, cancel: threading.Event,
) -> AgentResult:
    """Run one attempt in a worker process (its own Chromium) and return its result.

    `cancel` (Ctrl-C, SIGTERM of the run) stops the worker at once; the worker then records an interrupted
    result itself when it still can.
    """
    attempt_dir.mkdir(parents=True, exist_ok=True)
    write_worker_input(attempt_dir, task, attempt, settings)
    started_at = utc_now()
    began = time.monotonic()
    log = (attempt_dir / "worker.log").open("ab")
    try:
        # Its own process group, so stopping it also stops its Chromium and Playwright driver.
        proc = subprocess.Popen(  # noqa: S603 - our own module, no shell
            [sys.executable, "-m", "web_bench.webvoyager.worker", str(attempt_dir)],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    finally:
        log.close()
    deadline = began + settings.timeout_ms / 1000.0 + GRACE_S
    killed_for: str | None = None
    try:
        while proc.poll() is None:
            if cancel.is_set():
                killed_for = "interrupted"
                break
            if time.monotonic() >= deadline:
                killed_for = "timeout"
                break
            time.sleep(0.1)
    finally:
        _stop(proc)
    result = read_result(attempt_dir)
    if result is not None:
        return result
    observed_ms = (time.monotonic() - began) * 1000.0
    kind: ErrorKind | None
    if killed_for is None:
        detail = f"the worker exited with status {proc.returncode} without a result (see worker.log)"
        kind = "internal"
    elif killed_for == "interrupted":
        detail = "the run was interrupted while this task ran"
        kind = "interrupted"
    else:
        detail = "the worker did not stop within its time limit and was killed"
        kind = None
    result = AgentResult(
        task_id=task.task_id, attempt=attempt, status="timeout" if killed_for == "timeout" else "error",
        error=detail, error_kind=kind, started_at=started_at, finished_at=utc_now(), duration_ms=observed_ms,
        duration_basis="parent_observed", model=settings.llm.model,
    )
    atomic_write_text(attempt_dir / "result.json", result.model_dump_json(indent=2) + "\n")
    return result
