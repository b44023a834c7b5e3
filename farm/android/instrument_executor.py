"""The instrument executor: push the bundle, run `am instrument -w -r`, watch it, pull the tree, then look.

After the pull the harness takes its own look at the phone for the finished tasks that need one
(`farm.android.harness_look`): the app's transcript is never the evidence that a write task's data is there.

Two silences are told apart. The app's own (a long model call) is bounded by `idle_timeout_s`. The link's is
bounded by `stall_s`: while the output is silent the phone is asked a cheap question (`echo`) on a separate
connection every `stall_s / 4`, and when no question has been answered for `stall_s` the try ends as an
infrastructure error `link stalled: no answer from the phone for N s` (tried again, as infrastructure errors are).
No call to the phone (the bundle push, the stream's start, the force-stop) can hold the try past its window: each
runs on its own thread and is given up on after it.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import shlex
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from farm.android.bundle import bundle_json
from farm.android.devices import shell
from farm.android.executor import ExecutorName, ExecutorOutcome, PhoneJob, ProgressSink
from farm.android.harness_look import take_looks
from farm.android.instrument_parser import InstrumentParser
from farm.android.options import RunOptions
from farm.android.pull import LINK_STALLED, RETRY_WAITS_S, pull_tree_retrying
from farm.android.sync_stream import STOP_GRACE_S, stall_window
from farm.config import PullLimits
from farm.fsutil import atomic_write_text

POLL_S = 0.5
FORCE_STOP_S = 10.0
"""Longest wait for `am force-stop` to answer on a link that is not known to be stalled."""
PROBE_TOKEN = "farm-link-alive"
"""What the liveness question (`echo`) must answer: a connection closed before it is no answer."""
REASON_CHARS = 300
"""Longest instrumentation failure kept in `infrastructure_error`: report rows stay one line."""
FAILURE_FILE = "instrumentation-failure.txt"
"""In the job's pulled tree, written by the harness: the whole failure text when the one-line error was cut."""
log = logging.getLogger(__name__)


T = TypeVar("T")


class LinkStalled(ConnectionError):
    """A call to the phone got no answer within the stall window."""


class _Call(Generic[T]):
    """One call to the phone on its own daemon thread: the caller waits in short polls and may give it up. adbutils
    waits for some answers without a time limit (a push, a connection's start); a call given up on ends with its
    own socket timeout or when the adb server drops the phone."""

    def __init__(self, call: Callable[[], T], name: str) -> None:
        self.value: T | None = None
        self.error: BaseException | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._discard: Callable[[T], None] | None = None
        threading.Thread(target=self._run, args=(call,), name=name, daemon=True).start()

    def _run(self, call: Callable[[], T]) -> None:
        try:
            value = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, who decides
            self.error = exc
            self._done.set()
            return
        with self._lock:
            self.value = value
            self._done.set()
            discard = self._discard
        if discard is not None:
            with contextlib.suppress(Exception):  # closing what a phone that stopped answering handed back late
                discard(value)

    @property
    def done(self) -> bool:
        """Whether the call returned or raised."""
        return self._done.is_set()

    def wait(self, seconds: float) -> bool:
        """Wait up to `seconds` for the call; whether it is done."""
        return self._done.wait(seconds)

    def abandon(self, discard: Callable[[T], None] | None) -> None:
        """Give the call up; a value it returns (now or later) goes to `discard` (a connection to close)."""
        with self._lock:
            self._discard = discard
            late = self._done.is_set() and self.error is None
        if late and discard is not None and self.value is not None:
            with contextlib.suppress(Exception):
                discard(self.value)


def within(call: Callable[[], T], stall_s: float, stop: threading.Event | None, what: str,
           discard: Callable[[T], None] | None = None) -> T:
    """`call()`'s value, or LinkStalled when it has not returned within the stall window (STOP_GRACE_S once `stop`
    is set); its own errors are raised as they are."""
    pending = _Call(call, f"farm-adb-{what}")
    asked = time.monotonic()
    while not pending.wait(POLL_S):
        window = stall_window(stall_s, stop)
        if time.monotonic() - asked >= window:
            pending.abandon(discard)
            raise LinkStalled(f"{LINK_STALLED}: no answer from the phone for {window:g} s ({what})")
    if pending.error is not None:
        raise pending.error
    return pending.value  # type: ignore[return-value]  # set whenever the call returned without an error


def one_line(reason: str, limit: int = REASON_CHARS) -> tuple[str, bool]:
    """The first non-empty line of `reason`, at most `limit` characters; and whether anything was left out.

    The parser's failure reasons may span many lines (a stack, the runner's output) and reach 64 KiB."""
    text = reason.strip()
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    short = first if len(first) <= limit else first[: limit - 1].rstrip() + "…"
    return short, short != text


def instrument_argv(opts: RunOptions, run: str, bundle_path: str) -> list[str]:
    """`am instrument -w -r -e class … <test package>/<runner>` with every seed argument."""
    argv = ["am", "instrument", "-w", "-r"]
    for key, value in opts.agent.instrument_extras(run, bundle_path, opts.profile):
        argv += ["-e", key, value]
    return [*argv, opts.profile.component()]


@dataclass
class InstrumentExecutor:
    """Runs a phone's tasks through the agent app's EvalRunTest."""

    pull_limits: PullLimits
    name: ExecutorName = "instrument"

    def close(self) -> None:
        """Nothing is kept between jobs: each `am instrument` call stands alone."""

    def run(self, job: PhoneJob, progress: ProgressSink) -> ExecutorOutcome:
        """Push, instrument with a watchdog, parse live, pull; never raises for device trouble."""
        from adbutils import AdbError

        outcome = ExecutorOutcome()
        ids = [t.id for t in job.tasks]
        parser = InstrumentParser()
        ended: list[str] = []
        stall_s = job.options.stall_s
        try:
            folder = job.device_bundle_path.rsplit("/", 1)[0]
            within(lambda: shell(job.device, ["mkdir", "-p", folder], timeout=stall_s), stall_s, job.stop, "mkdir")
            bundle = bundle_json(job.run_id, job.tasks).encode("utf-8")
            within(lambda: job.device.sync.push(bundle, job.device_bundle_path), stall_s, job.stop, "bundle push")
            argv = instrument_argv(job.options, job.run_id, job.device_bundle_path)
            outcome.infrastructure_error = self._stream(job, argv, parser, progress, ended)
        except LinkStalled as exc:
            outcome.infrastructure_error = str(exc)
        except (AdbError, OSError) as exc:
            outcome.infrastructure_error = f"adb error: {' '.join(str(exc).split())[:200]}"
        stalled = (outcome.infrastructure_error or "").startswith(LINK_STALLED)
        parser.close()
        whole_failure: str | None = None
        if outcome.infrastructure_error is None and parser.failed_reason:
            short, cut = one_line(parser.failed_reason)
            more = f" (whole text: {FAILURE_FILE})" if cut else ""
            outcome.infrastructure_error = f"instrumentation: {short}{more}"
            if cut:
                whole_failure = parser.failed_reason
                log.warning("%s: instrumentation failed: %s", job.serial, parser.failed_reason)
        outcome.crashed = parser.crashed
        by_test = {key.split("#", 1)[1]: status for key, status in parser.statuses.items()}
        for tid in ids:
            status = by_test.get(tid)
            if status is None or status == "incomplete":
                outcome.unfinished.append(tid)
                if status == "incomplete":
                    outcome.statuses[tid] = status
            else:
                outcome.finished.append(tid)
                outcome.statuses[tid] = status
        if outcome.unfinished and outcome.infrastructure_error is None:
            # The run ended normally yet skipped tasks: say why if the runner reported it (initializationError…).
            known = set(ids)
            other = [key for key in parser.statuses if key.split("#", 1)[1] not in known]
            first = next((one_line(parser.stacks[k])[0] for k in other if parser.stacks.get(k)), None)
            test = other[0].split("#", 1)[1] if other else None
            outcome.infrastructure_error = (
                f"instrumentation ran {test}: {first}" if first else "instrumentation ended before these tasks ran"
            )
        if outcome.crashed:
            progress.note("agent process crashed")
        if stalled and not parser.started:
            # Nothing ran that could have left a tree, and the link has just been silent for a whole window.
            progress.note("not pulled: the link stalled before the instrumentation started")
        else:
            self._pull(job, outcome, progress, started=parser.started, stalled=stalled)
        if whole_failure is not None:
            try:
                # After the pull, which never overwrites: the harness's file replaces any the app left there.
                job.raw_dir.mkdir(parents=True, exist_ok=True)
                atomic_write_text(job.raw_dir / FAILURE_FILE, whole_failure + "\n")
            except OSError:
                pass
        if outcome.pulled:
            # In the order the tasks ended (then any the stream did not report ending), for `later_in_call`.
            order = [t for t in ended if t in outcome.finished]
            order += [t for t in outcome.finished if t not in order]
            try:
                outcome.looked = take_looks(job, order, progress)
            except Exception as exc:  # noqa: BLE001 - the attempts that needed a look stay unscored, the rest count
                progress.note(f"harness look failed: {' '.join(str(exc).split())[:200]}")
        return outcome

    def _force_stop(self, job: PhoneJob, *, quick: bool) -> None:
        """`am force-stop` the agent app, best effort, waiting at most `_force_stop_wait`."""
        wait = _force_stop_wait(job, quick)
        package = job.options.profile.package
        try:
            within(lambda: shell(job.device, ["am", "force-stop", package], timeout=wait), wait, None, "am force-stop")
        except Exception:  # noqa: BLE001 - best effort on a phone that may be gone
            pass

    def _pull(self, job: PhoneJob, outcome: ExecutorOutcome, progress: ProgressSink, *, started: bool,
              stalled: bool) -> None:
        """Pull the job's tree into `job.raw_dir`; what the pull did goes into `outcome`."""
        from adbutils import AdbError

        stall_s = job.options.stall_s
        try:
            # A link that dropped (the likely end of a broken stream) may come back within seconds: the
            # phone's finished results are fetched then rather than lost to another try. Nothing to wait
            # for when the instrumentation never started.
            # After a stall the link has just been silent for a whole window: the pull gets a short one (a link that
            # came back answers at once) and no retries, each of which would wait the window again.
            pulled = pull_tree_retrying(job.device, job.device_eval_dir, job.raw_dir, self.pull_limits, stop=job.stop,
                                        waits=RETRY_WAITS_S if started and not stalled else (),
                                        stall_s=min(stall_s, STOP_GRACE_S) if stalled else stall_s)
        except (AdbError, OSError) as exc:
            outcome.pull_refused.append(f"pull failed: {exc}")
            return
        # A stalled pull's tree is partial: the tasks whose scores did not arrive are infrastructure errors
        # (phone_records), and no look is taken over a link that does not answer.
        outcome.pulled = pulled.found and pulled.stalled is None
        outcome.pull_refused = pulled.refused
        if pulled.stalled is not None and outcome.infrastructure_error is None:
            outcome.infrastructure_error = f"{LINK_STALLED}: {pulled.stalled} (pulling the results)"
        if pulled.refused:
            progress.note(f"pull refused {len(pulled.refused)} entries")

    def _stream(self, job: PhoneJob, argv: list[str], parser: InstrumentParser, progress: ProgressSink,
                ended: list[str] | None = None) -> str | None:
        """Run the instrumentation; return why it was stopped early (None when its output ended).

        `ended` gets each task id once, as its test ends: a runner that re-runs a test reports it again, but a
        task counts as finished once per call (progress counts each task once)."""
        ended = ended if ended is not None else []
        opts = job.options
        command = " ".join(shlex.quote(a) for a in argv)
        try:
            conn = within(lambda: job.device.shell(command, stream=True), opts.stall_s, job.stop,
                          "starting am instrument", discard=lambda late: late.close())
        except LinkStalled:
            self._force_stop(job, quick=True)  # the command may have reached the phone: its app must not run on
            raise
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        last = time.monotonic()
        reason: str | None = None
        link = _LinkCheck(job, opts.stall_s)
        try:
            sock = conn.conn
            sock.settimeout(POLL_S)
            while True:
                now = time.monotonic()
                if job.stop is not None and job.stop.is_set():
                    reason = "stopped by the user"
                    break
                if opts.deadline_monotonic is not None and now > opts.deadline_monotonic:
                    reason = "run deadline passed"
                    break
                if now - last > opts.idle_timeout_s:
                    reason = f"no output for {opts.idle_timeout_s:g} s (watchdog)"
                    break
                reason = link.check(now, silent=now - last)
                if reason is not None:
                    break
                try:
                    data = sock.recv(65536)
                except TimeoutError:
                    continue
                except OSError as exc:
                    reason = f"connection lost: {exc}"
                    break
                if not data:
                    break
                last = time.monotonic()
                link.alive()
                for event in parser.feed(decoder.decode(data)):
                    if event.event == "test_started" and event.test:
                        progress.task_started(event.test)
                    elif event.event == "test_ended" and event.test and event.status and event.test not in ended:
                        ended.append(event.test)
                        progress.task_finished(event.test, event.status)
            parser.feed(decoder.decode(b"", final=True))
        finally:
            conn.close()
        if reason is not None:
            progress.note(reason)
            self._force_stop(job, quick=reason.startswith(LINK_STALLED))
        elif not parser.ended and parser.started:
            reason = "instrumentation output stopped before the run ended (phone disconnected?)"
        return reason


class _LinkCheck:
    """Whether the phone still answers while its app is silent: a cheap question (`echo`) on a separate connection
    every `stall_s / 4` of silence, at most one at a time; the link is stalled when no question has been answered
    (and nothing has arrived) for `stall_s` since the first one asked after the last sign of life."""

    def __init__(self, job: PhoneJob, stall_s: float) -> None:
        self._job = job
        self._stall_s = stall_s
        self._every = stall_s / 4
        self._probe: _Call[str] | None = None
        self._asked = 0.0
        self._unanswered: float | None = None
        """When the first question since the last sign of life was asked (None: none is waiting)."""

    def alive(self) -> None:
        """The app's output arrived: a sign of life."""
        self._unanswered = None

    def check(self, now: float, silent: float) -> str | None:
        """Ask when the output has been silent long enough; the stall reason once no answer came for the window."""
        probe = self._probe
        if probe is not None and probe.done:
            if probe.error is None and PROBE_TOKEN in (probe.value or ""):
                self._unanswered = None
            self._probe = None
        if self._unanswered is not None and now - self._unanswered >= self._stall_s:
            return f"{LINK_STALLED}: no answer from the phone for {self._stall_s:g} s"
        if self._probe is None and silent >= self._every and now - self._asked >= self._every:
            device, stall_s = self._job.device, self._stall_s
            self._probe = _Call(lambda: shell(device, ["echo", PROBE_TOKEN], timeout=stall_s), "farm-adb-probe")
            self._asked = now
            if self._unanswered is None:
                self._unanswered = now
        return None


def _force_stop_wait(job: PhoneJob, quick: bool) -> float:
    """How long `am force-stop` is waited for: a phone that just failed to answer, or a run that is stopping, gets
    STOP_GRACE_S (the command is sent either way, and the next `am instrument` restarts the app anyhow)."""
    stopping = job.stop is not None and job.stop.is_set()
    return min(job.options.stall_s, STOP_GRACE_S if quick or stopping else FORCE_STOP_S)
