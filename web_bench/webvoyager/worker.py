"""The attempt worker: `python -m web_bench.webvoyager.worker ATTEMPT_DIR`.

The parent writes ATTEMPT_DIR/worker.json (`write_worker_input`: settings, task, attempt number — no secret;
the model's key comes from the inherited environment) and starts the worker in its own process group. The
worker makes the attempt and writes result.json; exit status 0 means result.json is there. SIGTERM or SIGINT
stops the attempt: the trace gets an `interrupted` event and result.json says `error_kind: interrupted`.
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from farm.errors import FarmError
from farm.fsutil import atomic_write_text
from web_bench.webvoyager.agent import AgentSettings, run_attempt
from web_bench.webvoyager.model import WvTask

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


def main(argv: list[str] | None = None) -> int:
    """Run the attempt of ATTEMPT_DIR; 0 when result.json was written, 2 on a bad input, 1 otherwise."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m web_bench.webvoyager.worker ATTEMPT_DIR", file=sys.stderr)
        return 2
    attempt_dir = Path(args[0])
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
        return 2
    return 0 if (attempt_dir / "result.json").exists() else 1


if __name__ == "__main__":
    sys.exit(main())
