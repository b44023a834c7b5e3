"""The instrument executor: push the bundle, run `am instrument -w -r`, watch it, pull the tree, then look.

After the pull the harness takes its own look at the phone for the finished tasks that need one
(`farm.android.harness_look`): the app's transcript is never the evidence that a write task's data is there.
"""

from __future__ import annotations

import codecs
import logging
import shlex
import time
from dataclasses import dataclass

from farm.android.bundle import bundle_json
from farm.android.devices import shell
from farm.android.executor import ExecutorName, ExecutorOutcome, PhoneJob, ProgressSink
from farm.android.harness_look import take_looks
from farm.android.instrument_parser import InstrumentParser
from farm.android.options import RunOptions
from farm.android.pull import RETRY_WAITS_S, pull_tree_retrying
from farm.config import PullLimits
from farm.fsutil import atomic_write_text

POLL_S = 0.5
REASON_CHARS = 300
"""Longest instrumentation failure kept in `infrastructure_error`: report rows stay one line."""
FAILURE_FILE = "instrumentation-failure.txt"
"""In the job's pulled tree, written by the harness: the whole failure text when the one-line error was cut."""
log = logging.getLogger(__name__)


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
        try:
            folder = job.device_bundle_path.rsplit("/", 1)[0]
            shell(job.device, ["mkdir", "-p", folder])
            job.device.sync.push(bundle_json(job.run_id, job.tasks).encode("utf-8"), job.device_bundle_path)
            argv = instrument_argv(job.options, job.run_id, job.device_bundle_path)
            outcome.infrastructure_error = self._stream(job, argv, parser, progress, ended)
        except (AdbError, OSError) as exc:
            outcome.infrastructure_error = f"adb error: {' '.join(str(exc).split())[:200]}"
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
        try:
            # A link that dropped (the likely end of a broken stream) may come back within seconds: the
            # phone's finished results are fetched then rather than lost to another try. Nothing to wait
            # for when the instrumentation never started.
            pulled = pull_tree_retrying(job.device, job.device_eval_dir, job.raw_dir, self.pull_limits, stop=job.stop,
                                        waits=RETRY_WAITS_S if parser.started else ())
            outcome.pulled = pulled.found
            outcome.pull_refused = pulled.refused
            if pulled.refused:
                progress.note(f"pull refused {len(pulled.refused)} entries")
        except (AdbError, OSError) as exc:
            outcome.pull_refused.append(f"pull failed: {exc}")
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

    def _stream(self, job: PhoneJob, argv: list[str], parser: InstrumentParser, progress: ProgressSink,
                ended: list[str] | None = None) -> str | None:
        """Run the instrumentation; return why it was stopped early (None when its output ended).

        `ended` gets each task id once, as its test ends: a runner that re-runs a test reports it again, but a
        task counts as finished once per call (progress counts each task once)."""
        ended = ended if ended is not None else []
        opts = job.options
        conn = job.device.shell(" ".join(shlex.quote(a) for a in argv), stream=True)
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        last = time.monotonic()
        reason: str | None = None
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
            try:
                shell(job.device, ["am", "force-stop", opts.profile.package], timeout=10)
            except Exception:  # noqa: BLE001 - best effort on a phone that may be gone
                pass
        elif not parser.ended and parser.started:
            reason = "instrumentation output stopped before the run ended (phone disconnected?)"
        return reason
