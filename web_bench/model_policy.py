"""The model loop every browser lane shares, and the web lane's model policy built on it.

`run_tool_loop` asks the model, runs the tools it calls, and repeats until the model answers without tools,
the step limit runs out, the deadline passes, a model call fails for good, or a hook halts the loop. A lane
brings its tools (an executor), its limits and its hooks (accounting, traces, guards) — never its own loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import JsonValue

from farm.llm.client import ModelCallError, ModelClient
from farm.llm.types import Message, ModelTurn, ToolCall, ToolSpec
from web_bench.browser.contract import SYSTEM_PROMPT, TOOLS, ToolResult
from web_bench.turn import PolicyResult, Turn

if TYPE_CHECKING:
    from web_bench.site.catalog import TaskInstance

MAX_STEPS = 40

LoopStatus = Literal["completed", "max_steps", "timeout", "model_error", "halted"]
ToolExecutor = Callable[[ToolCall, dict[str, JsonValue]], ToolResult]
"""Runs one tool call (arguments already parsed) and returns what the model reads."""


def tool_specs() -> list[ToolSpec]:
    """The browser tools as the model sees them (same for both backends)."""
    return [ToolSpec(name=t.name, description=t.description, parameters=t.parameters()) for t in TOOLS]


class LoopHalt(Exception):  # noqa: N818 - a control signal, not an error
    """Raised by a hook or the tool executor to end the loop now (`reason` says why, for the caller)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class LoopHooks:
    """Callbacks of `run_tool_loop`; every default does nothing. Any of them may raise `LoopHalt`."""

    def on_request(self, step: int, messages: Sequence[Message]) -> None:
        """A model request of logical step `step` (1-based) is about to be sent."""

    def on_delta(self) -> None:
        """The first non-empty streamed delta of a request arrived (streamed requests only)."""

    def on_reply(self, step: int, reply: ModelTurn) -> None:
        """A model call succeeded (after any retries)."""

    def on_error(self, step: int, exc: ModelCallError) -> None:
        """A model call failed for good; the loop ends with `model_error`."""

    def on_answer(self, step: int, text: str | None) -> None:
        """The model answered without tools; the loop ends with `completed`."""

    def on_bad_arguments(self, call: ToolCall, error: str) -> None:
        """A tool call's arguments were not a JSON object; the model reads `error` as its result."""

    def halt(self) -> None:
        """Checked before every request and after every tool call: raise `LoopHalt` to stop."""

    def request(self, client: ModelClient, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        """Send one model call; streamed, so `on_delta` sees the first output (a lane may bound the wait)."""
        return client.complete(messages, tools, stream=True, on_first_delta=self.on_delta)


@dataclass
class LoopOutcome:
    """How a loop ended, with the conversation as it stands."""

    status: LoopStatus
    """Why it ended."""
    messages: list[Message]
    """The conversation, every reply and tool result included."""
    steps: int = 0
    """Logical model steps started (one per reply asked for)."""
    answer: str | None = None
    """The final answer (status `completed`)."""
    last_text: str | None = None
    """The latest non-empty text the model produced (kept when a limit ends the loop)."""
    error: ModelCallError | None = None
    """The model failure (status `model_error`)."""
    halt: LoopHalt | None = None
    """What halted the loop (status `halted`)."""
    tool_calls: int = 0
    """Tool calls handed to the executor."""


def run_tool_loop(
    client: ModelClient,
    messages: list[Message],
    tools: Sequence[ToolSpec],
    execute: ToolExecutor,
    *,
    max_steps: int,
    expired: Callable[[], bool],
    hooks: LoopHooks | None = None,
) -> LoopOutcome:
    """Model steps until a final answer, `max_steps`, `expired()`, a failed model call or a `LoopHalt`.

    `messages` is extended in place (the outcome carries it too).
    """
    hooks = hooks or LoopHooks()
    out = LoopOutcome(status="max_steps", messages=messages)
    try:
        for step in range(1, max_steps + 1):
            if expired():
                out.status = "timeout"
                return out
            hooks.halt()
            out.steps = step
            hooks.on_request(step, messages)
            try:
                reply = hooks.request(client, messages, tools)
            except ModelCallError as exc:
                hooks.on_error(step, exc)
                out.status, out.error = "model_error", exc
                return out
            hooks.on_reply(step, reply)
            messages.append(reply.as_message())
            if reply.text and reply.text.strip():
                out.last_text = reply.text
            if not reply.tool_calls:
                hooks.on_answer(step, reply.text)
                out.status, out.answer = "completed", reply.text
                return out
            for call in reply.tool_calls:
                try:
                    arguments = call.arguments()
                except ValueError as exc:
                    hooks.on_bad_arguments(call, str(exc))
                    messages.append(Message.tool_result(call.id, f"Error: {exc}"))
                    continue
                out.tool_calls += 1
                result = execute(call, arguments)
                images = [result.image_jpeg] if result.image_jpeg else None
                messages.append(Message.tool_result(call.id, result.text, images))
                hooks.halt()
    except LoopHalt as halt:
        out.status, out.halt = "halted", halt
    return out


class _TurnHooks(LoopHooks):
    """The web lane's events on its `Turn` (names kept: they feed the run's event diagnostics)."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn

    def on_request(self, step: int, messages: Sequence[Message]) -> None:
        self.turn.event("model/request")

    def on_delta(self) -> None:
        # Streamed so ttftMs is the first non-empty delta (seed 001), not the first whole reply.
        self.turn.model_delta()

    def on_reply(self, step: int, reply: ModelTurn) -> None:
        self.turn.model_reply(reply.usage, reply.cost_usd)

    def on_error(self, step: int, exc: ModelCallError) -> None:
        self.turn.event("model/error")

    def on_answer(self, step: int, text: str | None) -> None:
        self.turn.event("assistant/text")

    def on_bad_arguments(self, call: ToolCall, error: str) -> None:
        self.turn.event("tool/bad_arguments")


class ModelPolicy:
    """Ask the model, run the tools it calls, repeat until it answers without tools."""

    name = "model"

    def __init__(self, client: ModelClient, *, max_steps: int = MAX_STEPS) -> None:
        self.client = client
        self.max_steps = max_steps

    def run(self, instance: TaskInstance, prompt: str, turn: Turn) -> PolicyResult:
        """One turn: the prompt, then model steps until a final answer, the step limit or the deadline."""
        messages = [Message.system(SYSTEM_PROMPT), Message.user(prompt)]
        out = run_tool_loop(
            self.client, messages, tool_specs(), lambda call, args: turn.call_tool(call.name, args),
            max_steps=self.max_steps, expired=turn.expired, hooks=_TurnHooks(turn),
        )
        if out.status == "completed":
            return PolicyResult(status="completed", answer=out.answer)
        if out.status == "timeout":
            return PolicyResult(status="timeout", error="time limit reached")
        if out.status == "model_error" and out.error is not None:
            # Retries exhausted or a refused request: the model service failed, not the agent.
            return PolicyResult(status="error", error=out.error.line(), infrastructure=True)
        if out.status == "halted" and out.halt is not None:
            return PolicyResult(status="error", error=out.halt.detail)
        return PolicyResult(status="max_steps", error=f"no final answer within {self.max_steps} model steps")
