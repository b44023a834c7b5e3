"""The state of one running attempt: the model loop's hooks, the tool executor, the limits and the counts,
and how a failed model step is classified."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Literal

from playwright.sync_api import Error as PlaywrightError
from pydantic import JsonValue

from farm.llm.client import ModelCallError, ModelClient
from farm.llm.loop import LoopHalt, LoopHooks
from farm.llm.provider_errors import lane_error_kind
from farm.llm.types import Message, ModelTurn, ToolCall, ToolSpec
from farm.manifest import utc_now
from web_bench.browser.contract import ACTION_TIMEOUT_MS, NAVIGATION_TIMEOUT_MS, TOOLS_BY_NAME, ToolResult
from web_bench.webvoyager import accounting
from web_bench.webvoyager.guard import GuardAction
from web_bench.webvoyager.har import AttemptBrowser
from web_bench.webvoyager.model import AgentStatus, ErrorKind, ModelCall, UsageTotals
from web_bench.webvoyager.model_setup import WvPrice
from web_bench.webvoyager.trace import (
    GuardEvent,
    ModelCallEvent,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelRetry,
    NetworkEvent,
    ToolCallEvent,
    ToolResultEvent,
    TracedCall,
    TraceWriter,
)


def model_error_kind(exc: ModelCallError) -> ErrorKind:
    """How a failed model step counts: quota, auth, service_unavailable or model_error, by the one provider-error
    classifier (`farm.llm.provider_errors`), whose call verdict already counts a timeout or 5xx that followed a
    quota refusal of the same step as the quota."""
    return lane_error_kind(exc.verdict)


class AttemptState(LoopHooks):
    """Recorder and gatekeeper of one attempt: the loop's hooks, the tool executor, the limits, the counts."""

    def __init__(self, timeout_ms: int, price: WvPrice | None, model: str, trace: TraceWriter,
                 cancel: threading.Event) -> None:
        self.started_at = utc_now()
        self._t0 = time.monotonic()
        self.timeout_ms = timeout_ms
        self.price = price
        self.model = model
        self.trace = trace
        self.cancel = cancel
        self.browser: AttemptBrowser | None = None
        self.calls: list[ModelCall] = []
        self.status: AgentStatus = "error"
        self.error_kind: ErrorKind | None = None
        self.error: str | None = None
        self.answer: str | None = None
        self.last_text: str | None = None
        self.steps = self.failed_steps = self.incomplete_steps = self.model_steps = 0
        self._pending = 0  # tool calls of the latest reply not run yet
        self._seq = 0
        self._step = 0
        self._step_started = self.started_at

    # -- limits ------------------------------------------------------------------------------
    def elapsed_ms(self) -> float:
        """Milliseconds since the attempt started."""
        return (time.monotonic() - self._t0) * 1000.0

    def expired(self) -> bool:
        """Whether the time limit has passed."""
        return self.elapsed_ms() >= self.timeout_ms

    def _stop(self, reason: str, detail: str) -> LoopHalt:
        # Calls the model asked for that will never run are cut off: counted, with no result.
        self.steps += self._pending
        self.incomplete_steps += self._pending
        self._pending = 0
        return LoopHalt(reason, detail)

    def halt(self) -> None:
        if self.cancel.is_set():
            raise self._stop("interrupted", "the attempt was interrupted")
        guard = self.browser.guard if self.browser else None
        if guard is not None and guard.exhausted:
            raise self._stop("website_unavailable", f"{guard.restricted_results} restricted results "
                             f"({', '.join(guard.restricted_origins)}): the site is restricting access")

    # -- model -------------------------------------------------------------------------------
    def on_request(self, step: int, messages: Sequence[Message]) -> None:
        self._step = self.model_steps = step
        self._step_started = utc_now()
        self.trace.emit(ModelRequest(step=step, messages=len(messages)))

    def request(self, client: ModelClient, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        """The model call on a helper thread, so the time limit and a cancel end the wait (the request itself is
        abandoned; it may still have been billed)."""
        box: dict[str, ModelTurn | BaseException] = {}
        done = threading.Event()
        sent = list(messages)  # the loop goes on appending to its own list

        def work() -> None:
            try:
                box["reply"] = client.complete(sent, tools, stream=True)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                box["error"] = exc
            finally:
                done.set()

        began = time.monotonic()
        threading.Thread(target=work, name="wv-model-call", daemon=True).start()
        while not done.wait(0.05):
            if self.cancel.is_set() or self.expired():
                why = "interrupted" if self.cancel.is_set() else "timeout"
                self._abandoned(began, why)
                detail = "the attempt was interrupted" if why == "interrupted" else (
                    f"time limit of {self.timeout_ms} ms reached while waiting for the model")
                raise self._stop(why, detail)
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        reply = box["reply"]
        assert isinstance(reply, ModelTurn)
        return reply

    def _abandoned(self, began: float, why: str) -> None:
        step = self._step
        call = ModelCall(role="agent", step=step, started_at=self._step_started,
                         duration_ms=round((time.monotonic() - began) * 1000.0, 3), outcome="timeout",
                         model=self.model, usage_expected=True,
                         error=f"no reply before the attempt stopped ({why})")
        self._record(step, [call])

    def _record(self, step: int, calls: list[ModelCall], waits: Sequence[float] = ()) -> None:
        for n, call in enumerate(calls):
            self.calls.append(call)
            self.trace.emit(ModelCallEvent(call=call))
            if call.outcome != "ok" and n < len(calls) - 1:
                wait = waits[n] if n < len(waits) else 0.0
                self.trace.emit(ModelRetry(step=step, request=n + 1, outcome=call.outcome, status=call.status,
                                           wait_ms=wait))

    def on_reply(self, step: int, reply: ModelTurn) -> None:
        calls = accounting.calls_from_turn(reply, role="agent", step=step, started_at=self._step_started,
                                           price=self.price)
        self._record(step, calls, [a.wait_after_ms for a in reply.attempts])
        self.trace.emit(ModelResponse(
            step=step, text=reply.text, stop=reply.stop, thinking_chars=sum(len(b.text) for b in reply.thinking),
            tool_calls=[TracedCall(id=c.id, name=c.name, arguments=c.arguments_json) for c in reply.tool_calls],
        ))
        self._pending = len(reply.tool_calls)
        if reply.text and reply.text.strip():
            self.last_text = reply.text

    def on_error(self, step: int, exc: ModelCallError) -> None:
        calls = accounting.calls_from_error(exc, role="agent", step=step, started_at=self._step_started,
                                            price=self.price, model=self.model)
        self._record(step, calls, [a.wait_after_ms for a in exc.attempt_log])
        self.trace.emit(ModelError(step=step, error=exc.line(), error_kind=model_error_kind(exc)))

    def error_kind_of(self, exc: ModelCallError) -> ErrorKind:
        """The error kind of a failed step."""
        return model_error_kind(exc)

    def totals(self) -> UsageTotals:
        """Usage and cost over every request."""
        return accounting.totals(self.calls)

    # -- tools -------------------------------------------------------------------------------
    def on_bad_arguments(self, call: ToolCall, error: str) -> None:
        seq = self._begin(call)
        self._end(seq, call, ToolResult(text=f"Error: {error}", is_error=True), time.monotonic())

    def execute(self, call: ToolCall, arguments: dict[str, JsonValue]) -> ToolResult:
        """Run one tool call under the limits and the access guard, traced."""
        if self.cancel.is_set():
            raise self._stop("interrupted", "the attempt was interrupted")
        if self.expired():
            raise self._stop("timeout", f"time limit of {self.timeout_ms} ms reached")
        seq = self._begin(call)
        began = time.monotonic()
        browser = self.browser
        if call.name not in TOOLS_BY_NAME or browser is None:
            result = ToolResult(is_error=True,
                                text=f"Error: tool {call.name!r} is not allowed; use only the browser_* tools")
        else:
            # Playwright waits are cut to the time left, so a slow page cannot carry the attempt far past it.
            left = max(1, int(self.timeout_ms - self.elapsed_ms()))
            browser.page.set_default_timeout(min(ACTION_TIMEOUT_MS, left))
            browser.page.set_default_navigation_timeout(min(NAVIGATION_TIMEOUT_MS, left))
            result = browser.guard.call(call.name, arguments)
        self._end(seq, call, result, began)
        return result

    def _begin(self, call: ToolCall) -> int:
        self._seq += 1
        self.steps += 1
        self._pending = max(0, self._pending - 1)
        self.trace.emit(ToolCallEvent(seq=self._seq, call_id=call.id, tool=call.name, arguments=call.arguments_json))
        return self._seq

    def _end(self, seq: int, call: ToolCall, result: ToolResult, began: float) -> None:
        if result.is_error:
            self.failed_steps += 1
        url: str | None = None
        if self.browser is not None:
            try:
                url = self.browser.page.url
            except PlaywrightError:
                url = None
        self.trace.emit(ToolResultEvent(
            seq=seq, call_id=call.id, tool=call.name, url=url, captured_at=utc_now(), text=result.text,
            is_error=result.is_error, duration_ms=round((time.monotonic() - began) * 1000.0, 3),
            image_bytes=len(result.image_jpeg) if result.image_jpeg else None,
        ))

    # -- browser listeners -------------------------------------------------------------------
    def on_guard(self, action: GuardAction, origin: str, reason: str) -> None:
        """The guard acted on the current tool call."""
        self.trace.emit(GuardEvent(seq=self._seq or None, action=action, origin=origin, reason=reason))

    def on_network(self, action: Literal["har_miss", "offline_block"], url: str) -> None:
        """A request was kept from the network."""
        self.trace.emit(NetworkEvent(action=action, url=url))
