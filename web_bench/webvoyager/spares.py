"""Worker processes started before their attempt is known, so that the interpreter start and the imports of the
next attempt's worker overlap the attempt running now instead of delaying the next one.

A spare is `python -m web_bench.webvoyager.worker --spare PROVIDER` in its own process group: it imports what an
attempt needs (the provider's client too), then waits for one line on its standard input — the attempt directory,
as a JSON string — and from there on is exactly the worker `run_in_child` would have started: one attempt, its own
Playwright driver, its own Chromium with a fresh profile, then it exits. Nothing of one attempt ever reaches another:
a spare serves one attempt only, and it starts nothing (no driver, no browser) before it has its attempt.

A spare that is gone when it is needed (it failed to start, or was killed) is never used: the attempt's worker is
then started as before, so whatever stops it is written to its worker.log. A spare left waiting reads end-of-file
when the scheduler closes its standard input or dies, and exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

SPARE_FLAG = "--spare"
"""The worker's switch for waiting as a spare (followed by the provider whose client it imports)."""
KEEP = 1
"""Spares kept waiting at once: one hides the start of the next worker; more would only cost memory."""


class Spares:
    """Spare workers for up to `wanted` attempts of a run, at most KEEP waiting at a time."""

    def __init__(self, provider: str, wanted: int, *, keep: int = KEEP) -> None:
        self.provider = provider
        self._left = wanted
        """Spares that may still be started: never more than the attempts the plan holds."""
        self._keep = keep
        self._waiting: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()
        self._closed = False
        self._fill()

    @property
    def waiting(self) -> list[subprocess.Popen[bytes]]:
        """The spares waiting for an attempt now."""
        with self._lock:
            return list(self._waiting)

    def _fill(self) -> None:
        while not self._closed and self._left > 0 and len(self._waiting) < self._keep:
            self._left -= 1
            try:
                proc = subprocess.Popen(  # noqa: S603 - our own module, no shell
                    [sys.executable, "-m", "web_bench.webvoyager.worker", SPARE_FLAG, self.provider],
                    # Until it has an attempt a spare says nothing; what a broken one says reaches the scheduler's
                    # standard error, as there is no worker.log to hold it yet.
                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True,
                )
            except OSError:
                return  # the attempt starts its own worker, as without spares
            self._waiting.append(proc)

    def hand_over(self, attempt_dir: Path) -> subprocess.Popen[bytes] | None:
        """A waiting spare, now running the attempt of `attempt_dir` (its worker.json already written); None when
        no live spare is left (the caller starts the worker itself). Another spare is started in its place."""
        with self._lock:
            try:
                while self._waiting:
                    proc = self._waiting.pop(0)
                    if proc.poll() is None and _send(proc, attempt_dir):
                        return proc
                    _end(proc)
                # One attempt started without a spare: it takes the place of the spare that was meant for it.
                self._left = max(0, self._left - 1)
                return None
            finally:
                self._fill()

    def close(self) -> None:
        """End every spare still waiting (end-of-file first: a waiting spare then exits by itself)."""
        with self._lock:
            self._closed = True
            waiting, self._waiting = self._waiting, []
        for proc in waiting:
            _end(proc)


def _send(proc: subprocess.Popen[bytes], attempt_dir: Path) -> bool:
    assert proc.stdin is not None
    try:
        proc.stdin.write(json.dumps(str(attempt_dir)).encode() + b"\n")
        proc.stdin.close()
    except OSError:  # it died meanwhile (a broken pipe)
        return False
    return True


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def await_attempt(provider: str) -> Path | None:
    """The spare's side: import the provider's client, then wait for the attempt directory on standard input;
    None when end-of-file comes first (the scheduler no longer needs this spare). Standard output and error go
    to the attempt's worker.log from then on, as they would for a worker started for the attempt."""
    with contextlib.suppress(Exception):  # the attempt itself reports a client that cannot load, in its result
        if provider == "openai":
            import farm.llm.openai_client  # noqa: F401
        else:
            import farm.llm.anthropic_client  # noqa: F401
    line = sys.stdin.buffer.readline()
    if not line.strip():
        return None
    attempt_dir = Path(json.loads(line))
    sys.stdout.flush()
    sys.stderr.flush()
    log = os.open(attempt_dir / "worker.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    for fd, to in ((null, 0), (log, 1), (log, 2)):
        os.dup2(fd, to)  # the copies are inheritable: the driver and Chromium write to the log too
    os.close(log)
    os.close(null)
    return attempt_dir
