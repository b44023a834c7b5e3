"""The instrument executor: push the bundle, run `am instrument -w -r`, watch it, pull the tree."""

from __future__ import annotations

import codecs
import shlex
import time
from dataclasses import dataclass

from farm.android.bundle import bundle_json
from farm.android.devices import shell
from farm.android.executor import ExecutorName, ExecutorOutcome, PhoneJob, ProgressSink
from farm.android.instrument_parser import InstrumentParser
from farm.android.options import RunOptions
from farm.android.pull import RETRY_WAITS_S, pull_tree_retrying
from farm.config import PullLimits

POLL_S = 0.5


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
        try:
            folder = job.device_bundle_path.rsplit("/", 1)[0]
            shell(job.device, ["mkdir", "-p", folder])
            job.device.sync.push(bundle_json(job.run_id, job.tasks).encode("utf-8"), job.device_bundle_path)
            argv = instrument_argv(job.options, job.run_id, job.device_bundle_path)
            outcome.infrastructure_error = self._stream(job, argv, parser, progress)
        except (AdbError, OSError) as exc:
            outcome.infrastructure_error = f"adb error: {' '.join(str(exc).split())[:200]}"
        parser.close()
        if outcome.infrastructure_error is None and parser.failed_reason:
            outcome.infrastructure_error = f"instrumentation: {parser.failed_reason}"
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
            first = next((parser.stacks[k].splitlines()[0] for k in other if parser.stacks.get(k)), None)
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
        return outcome

    def _stream(self, job: PhoneJob, argv: list[str], parser: InstrumentParser, progress: ProgressSink) -> str | None:
        """Run the instrumentation; return why it was stopped early (None when its output ended)."""
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
                    elif event.event == "test_ended" and event.test and event.status:
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
