"""Running one task instance on one backend, and a whole matrix of them.

A model call that fails for a reason every run shares (the provider's quota is used up, its key refused: the one
classifier's verdict, `farm.llm.provider_errors`) ends the matrix there: the run it hit is recorded as an
infrastructure error and no later run starts (`RunContext.stopped` says why), as the host executor and the
WebVoyager lane do."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

from farm.errors import FarmError
from farm.llm.loop import LoopOutcome, Policy, run_tool_loop
from farm.manifest import utc_now
from farm.results.record import Tokens
from web_bench.browser.contract import BackendName, BrowserBackend, BrowserSession
from web_bench.paired.matrix import PlannedRun
from web_bench.paired.results import Diagnostics, PolicyName, Timings, Validation, WebRun, run_length
from web_bench.paired.site.catalog import (
    STATEFUL_TASKS,
    SUITE_VERSION,
    TaskInstance,
    make_instance,
    state_reached,
    validate,
)
from web_bench.paired.site.server import SiteClient
from web_bench.paired.turn import GAVE_UP, Turn, TurnHooks, TurnOutcome, WebBrief

POLL_INTERVAL_S = 0.05
MAX_STEPS = 40
"""Steps a turn may take (a model step, or one call of a script, which never gets near it)."""


class StatePoller:
    """Polls the state API every 50 ms from its own thread and remembers when the goal was first met."""

    def __init__(self, base_url: str, session_id: str, instance: TaskInstance, t0: float) -> None:
        self._client = SiteClient(base_url)
        self._sid = session_id
        self._instance = instance
        self._t0 = t0
        self._stop = threading.Event()
        self.reached_ms: float | None = None
        self._thread = threading.Thread(target=self._loop, name="web-bench-state-poll", daemon=True)

    def start(self) -> StatePoller:
        """Begin polling."""
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set() and self.reached_ms is None:
            try:
                if state_reached(self._instance, self._client.state(self._sid)):
                    self.reached_ms = (time.monotonic() - self._t0) * 1000
                    return
            except Exception:  # noqa: BLE001 - a missed poll only costs precision
                pass
            self._stop.wait(POLL_INTERVAL_S)

    def stop(self) -> None:
        """Stop polling and close the client."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._client.close()


class RunContext:
    """What every run of a matrix shares."""

    def __init__(
        self, *, run_id: str, site_url: str, policy: Policy[WebBrief], policy_name: PolicyName, timeout_ms: int,
        provider: str | None = None, model: str | None = None, reasoning_effort: str | None = None,
        devices: Mapping[str, str] | None = None, simulated: set[str] | None = None, max_steps: int = MAX_STEPS,
    ) -> None:
        self.run_id = run_id
        self.site_url = site_url.rstrip("/")
        self.policy = policy
        self.policy_name: PolicyName = policy_name
        self.timeout_ms = timeout_ms
        self.provider = provider
        self.model = model
        self.reasoning_effort = reasoning_effort
        self.devices = dict(devices or {})
        self.simulated = set(simulated or ())
        self.max_steps = max_steps
        self.stopped: str | None = None
        """Set when a run's model call stopped dispatch (quota, key): one line naming the provider and why."""


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, FarmError):
        return exc.line()
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:300]


def outcome(out: LoopOutcome, turn: Turn, max_steps: int) -> TurnOutcome:
    """How the turn ended, from how its loop ended; a policy that gave up leaves `assistant/text` on the turn,
    as an answer does."""
    if out.status == "completed":
        return TurnOutcome(status="completed", answer=out.answer)
    if out.status == "timeout":
        return TurnOutcome(status="timeout", error="time limit reached")
    if out.status == "model_error" and out.error is not None:
        # Retries exhausted or a refused request: the model service failed, not the agent.
        stop = out.error.stop_line() if out.error.stops_dispatch else None
        return TurnOutcome(status="error", error=out.error.line(), infrastructure=True, stop_dispatch=stop)
    if out.status == "halted" and out.halt is not None:
        if out.halt.reason == GAVE_UP:
            # The policy's last word, like an answer: the run completes, with nothing to validate.
            turn.event("assistant/text")
            return TurnOutcome(status="completed", answer=None, error=out.halt.detail)
        return TurnOutcome(status="error", error=out.halt.detail)
    return TurnOutcome(status="max_steps", error=f"no final answer within {max_steps} model steps")


def run_one(planned: PlannedRun, backend: BrowserBackend, ctx: RunContext) -> WebRun:
    """One run: new site session, new browser session, the policy's turn, then the validator."""
    site = SiteClient(ctx.site_url)
    instance = make_instance(planned.task, planned.seed)
    started_at = utc_now()
    session: BrowserSession | None = None
    turn: Turn | None = None
    poller: StatePoller | None = None
    reached_ms: float | None = None
    result: TurnOutcome
    try:
        created = site.new_session(planned.task, planned.seed)
        session = backend.new_session()
        prompt = instance.prompt(ctx.site_url + created.start_path)
        turn = Turn(session, ctx.timeout_ms)
        if planned.task in STATEFUL_TASKS:
            poller = StatePoller(ctx.site_url, created.session_id, instance, turn.t0).start()
        try:
            out = run_tool_loop(
                ctx.policy, WebBrief(instance, prompt), lambda call, args: turn.call_tool(call.name, args),
                max_steps=ctx.max_steps, expired=turn.expired, hooks=TurnHooks(turn),
            )
            result = outcome(out, turn, ctx.max_steps)
            if result.stop_dispatch is not None:
                ctx.stopped = ctx.stopped or result.stop_dispatch
        except Exception as exc:  # noqa: BLE001 - a crashing turn is a failed run, not a crashed matrix
            result = TurnOutcome(status="error", error=_one_line(exc))
        completion_ms = turn.elapsed_ms()
        turn.event("turn/end")
        if completion_ms > ctx.timeout_ms and result.status == "completed":
            result = TurnOutcome(status="timeout", answer=result.answer, error="time limit exceeded")
        if poller is not None:
            poller.stop()
        final_state = site.state(created.session_id)
        verdict = validate(instance, final_state, result.answer)
        if poller is not None:
            # Polling may notice the goal after the turn ended; it was reached by then at the latest.
            if poller.reached_ms is not None:
                reached_ms = min(poller.reached_ms, completion_ms)
            elif state_reached(instance, final_state):
                reached_ms = completion_ms
    except Exception as exc:  # noqa: BLE001 - infrastructure failure: recorded, the matrix goes on
        # The policy's own failures are caught above; what lands here is the site, browser or phone.
        result = TurnOutcome(status="error", error=_one_line(exc), infrastructure=True)
        completion_ms = turn.elapsed_ms() if turn else 0.0
        verdict = None
    finally:
        if poller is not None:
            poller.stop()
        if session is not None:
            try:
                session.close()
            except Exception:  # noqa: BLE001 - closing a broken page must not hide the run's result
                pass
        site.close()
    disallowed = list(turn.disallowed) if turn else []
    success = bool(verdict and verdict.passed) and not disallowed and result.status == "completed"
    validation = (
        Validation(passed=verdict.passed, state_ok=verdict.state_ok, answer_ok=verdict.answer_ok, detail=verdict.detail)
        if verdict else Validation(passed=False, state_ok=False, answer_ok=False, detail="not validated")
    )
    if disallowed:
        validation.detail += f"; used forbidden tools {disallowed}"
    return WebRun(
        benchmark_suite_version=SUITE_VERSION, run_id=ctx.run_id, task=planned.task, seed=planned.seed,
        trial=planned.trial, pair_id=planned.pair_id, backend=planned.backend, order_in_pair=planned.order_in_pair,
        first_backend=planned.first_backend, device=ctx.devices.get(planned.backend),
        simulated_device=planned.backend in ctx.simulated, policy=ctx.policy_name,
        provider=ctx.provider, model=ctx.model, reasoning_effort=ctx.reasoning_effort, success=success,
        status=result.status, error=result.error, infrastructure_error=result.infrastructure, answer=result.answer,
        validation=validation, timeout_ms=ctx.timeout_ms,
        timings=Timings(
            completion_ms=round(completion_ms, 1),
            state_reached_ms=round(reached_ms, 1) if reached_ms is not None else None,
            ttft_ms=round(turn.first_output_ms, 1) if turn and turn.first_output_ms is not None else None,
            tool_wall_ms=round(turn.tool_wall_ms, 1) if turn else 0.0,
        ),
        tokens=turn.tokens if turn else Tokens(), cost_usd=turn.cost_usd if turn else None,
        diagnostics=Diagnostics(
            event_type_runs=run_length(turn.events if turn else ["turn/start", "turn/end"]),
            tool_calls=turn.tool_calls if turn else 0, model_calls=turn.model_calls if turn else 0,
            disallowed_tools=disallowed, tool_errors=turn.tool_errors if turn else 0,
        ),
        started_at=started_at, ended_at=utc_now(),
    )


def run_matrix(
    runs: list[PlannedRun], backends: Mapping[BackendName, BrowserBackend], ctx: RunContext,
    on_run: Callable[[WebRun], None],
) -> list[WebRun]:
    """Every planned run in order; `on_run` sees each result as soon as it exists. A run whose model call stops
    dispatch (quota, key) is the last one started: `ctx.stopped` says why, and the rest are left unrun."""
    done = []
    for planned in runs:
        if ctx.stopped is not None:
            break
        record = run_one(planned, backends[planned.backend], ctx)
        on_run(record)
        done.append(record)
    return done
