"""One agent attempt in its own process, both sides: the parent (`run_in_child`) writes ATTEMPT_DIR/worker.json
(settings, task, attempt number — no secret; the model's key comes from the inherited environment), starts
`python -m web_bench.webvoyager.worker ATTEMPT_DIR` in its own process group, waits at most the task's time
limit (plus a grace for the browser's cleanup), stops it, and reads back what it wrote. A child that wrote
nothing still leaves a result: the parent's observed interval, marked as such.

The worker (`main`) makes the attempt (`agent.run_attempt`) and writes result.json; exit status 0 means
result.json is there. SIGTERM or SIGINT stops the attempt: the trace gets an `interrupted` event and
result.json says `error_kind: interrupted`. A worker may also be started ahead of its attempt and handed the
attempt directory when it is known (`spares`); from then on it is the same worker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from farm.errors import FarmError
from farm.exits import EXIT_BAD_INPUT
from farm.fsutil import atomic_write_text
from farm.manifest import utc_now
from web_bench.webvoyager.agent import AgentSettings, run_attempt
from web_bench.webvoyager.model import AgentResult, ErrorKind, WvTask
from web_bench.webvoyager.spares import SPARE_FLAG, Spares, await_attempt

WORKER_INPUT = "worker.json"


class WorkerInput(BaseModel):
    """What the parent hands a worker (`ATTEMPT_DIR/worker.json`)."""

    model_config = ConfigDict(extra="forbid")

    settings: AgentSettings
    """How to make the attempt."""
    task: WvTask
    """The task."""
    attempt: int = Field(ge=1)
    """Attempt number."""


def write_worker_input(attempt_dir: Path, task: WvTask, attempt: int, settings: AgentSettings) -> Path:
    """Write ATTEMPT_DIR/worker.json atomically (the parent calls this before starting the worker)."""
    attempt_dir.mkdir(parents=True, exist_ok=True)
    path = attempt_dir / WORKER_INPUT
    data = WorkerInput(settings=settings, task=task, attempt=attempt)
    atomic_write_text(path, data.model_dump_json(indent=2) + "\n")
    return path


def read_worker_input(attempt_dir: Path) -> WorkerInput:
    """Read ATTEMPT_DIR/worker.json (FarmError naming the file and the first bad field)."""
    path = attempt_dir / WORKER_INPUT
    try:
        return WorkerInput.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise FarmError(f"{path}: cannot read the worker input ({exc.strerror or exc})",
                        hint="the parent writes it with write_worker_input() before starting the worker") from None
    except ValidationError as exc:
        err = exc.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "worker.json"
        raise FarmError(f"{path}: {where}: {err['msg']}",
                        hint="write it with write_worker_input() from the same code version") from None


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


def _start(attempt_dir: Path, spares: Spares | None) -> subprocess.Popen[bytes]:
    """The attempt's worker: a spare handed the attempt, or a worker started for it."""
    proc = spares.hand_over(attempt_dir) if spares is not None else None
    if proc is not None:
        return proc
    log = (attempt_dir / "worker.log").open("ab")
    try:
        # Its own process group, so stopping it also stops its Chromium and Playwright driver.
        return subprocess.Popen(  # noqa: S603 - our own module, no shell
            [sys.executable, "-m", "web_bench.webvoyager.worker", str(attempt_dir)],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    finally:
        log.close()


def run_in_child(
    task: WvTask, attempt: int, attempt_dir: Path, settings: AgentSettings, *, cancel: threading.Event,
    spares: Spares | None = None,
) -> AgentResult:
    """Run one attempt in a worker process (its own Chromium) and return its result.

    `cancel` (Ctrl-C, SIGTERM of the run) stops the worker at once; the worker then records an interrupted
    result itself when it still can. `spares`: workers already started, one of which takes the attempt.
    """
    attempt_dir.mkdir(parents=True, exist_ok=True)
    write_worker_input(attempt_dir, task, attempt, settings)
    started_at = utc_now()
    began = time.monotonic()
    proc = _start(attempt_dir, spares)
    deadline = began + settings.timeout_ms / 1000.0 + GRACE_S
    killed_for: str | None = None
    try:
        while True:
            try:
                proc.wait(0.1)  # returns as soon as the worker exits; the checks below run every 0.1 s
                break
            except subprocess.TimeoutExpired:
                pass
            if cancel.is_set():
                killed_for = "interrupted"
                break
            if time.monotonic() >= deadline:
                killed_for = "timeout"
                break
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


def main(argv: list[str] | None = None) -> int:
    """Run the attempt of ATTEMPT_DIR; 0 when result.json was written, 2 on a bad input, 1 otherwise."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == SPARE_FLAG:
        handed = await_attempt(args[1])
        if handed is None:
            return 0  # not needed after all
        attempt_dir = handed
    elif len(args) == 1:
        attempt_dir = Path(args[0])
    else:
        print("usage: python -m web_bench.webvoyager.worker ATTEMPT_DIR", file=sys.stderr)
        return EXIT_BAD_INPUT
    cancel = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        # Only a flag: the attempt stops at its next check (a model wait notices within 50 ms) and still
        # writes its trace, session and result.
        cancel.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        job = read_worker_input(attempt_dir)
        run_attempt(job.task, job.attempt, attempt_dir, job.settings, cancel=cancel)
    except FarmError as exc:
        print(f"worker: {exc.line()}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0 if (attempt_dir / "result.json").exists() else 1


def _exit(status: int) -> None:
    """End the worker process as soon as its files are written: its result, trace and session are closed, its
    browser and driver stopped, so the interpreter's teardown (a few hundred milliseconds of freeing objects) would
    only delay the scheduler's next step."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    _exit(main())
