"""The model loop every agent lane shares, over a tool contract.

`ask` is one model step: the request hook, the (retried, by default streamed) call, then the reply or error
hook. `run_tool_loop` repeats `ask`, runs the tools the model calls, and stops when the model answers without
tools, the step limit runs out, the deadline passes, a model call fails for good, or a hook halts it. A lane
brings its tools (an executor), its limits and its hooks (accounting, traces, guards) — never its own loop; a
step-wise lane (the phone: observe → decide → act) calls `ask` once per decision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, JsonValue

from farm.llm.client import ModelCallError, ModelClient
from farm.llm.types import Message, ModelTurn, ToolCall, ToolSpec

LoopStatus = Literal["completed", "max_steps", "timeout", "model_error", "halted"]


class ToolOutput(Protocol):
    """What a tool call gives back to the model, whatever lane's tool produced it."""

    @property
    def text(self) -> str:
        """Text the model reads."""

    @property
    def image_jpeg(self) -> bytes | None:
        """A JPEG the model sees along with the text, if any."""

    @property
    def is_error(self) -> bool:
        """Whether the call failed."""


class ToolResult(BaseModel):
    """A plain `ToolOutput`, for lanes (and tests) without a result type of their own."""

    model_config = ConfigDict(extra="forbid")

    text: str
    """Text the model reads."""
    image_jpeg: bytes | None = None
    """A JPEG the model sees along with the text."""
    is_error: bool = False
    """Whether the call failed."""


ToolExecutor = Callable[[ToolCall, dict[str, JsonValue]], ToolOutput]
"""Runs one tool call (arguments already parsed) and returns what the model reads."""


class LoopHalt(Exception):  # noqa: N818 - a control signal, not an error
    """Raised by a hook or the tool executor to end the loop now (`reason` says why, for the caller)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class LoopHooks:
    """Callbacks of `ask` and `run_tool_loop`; every default does nothing. Any of them may raise `LoopHalt`."""

    stream: bool = True
    """Whether the default `request` streams the reply (so `on_delta` sees the first output)."""

    def on_request(self, step: int, messages: Sequence[Message]) -> None:
        """A model request of logical step `step` (1-based) is about to be sent."""

    def on_delta(self) -> None:
        """The first non-empty streamed delta of a request arrived (streamed requests only)."""

    def on_reply(self, step: int, reply: ModelTurn) -> None:
        """A model call succeeded (after any retries)."""

    def on_error(self, step: int, exc: ModelCallError) -> None:
        """A model call failed for good (after any retries)."""

    def on_answer(self, step: int, text: str | None) -> None:
        """The model answered without tools; the loop ends with `completed`."""

    def on_bad_arguments(self, call: ToolCall, error: str) -> None:
        """A tool call's arguments were not a JSON object; the model reads `error` as its result."""

    def halt(self) -> None:
        """Checked before every request and after every tool call: raise `LoopHalt` to stop."""

    def request(self, client: ModelClient, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        """Send one model call with the client's retries (a lane may override this to bound the wait)."""
        if self.stream:
            return client.complete(messages, tools, stream=True, on_first_delta=self.on_delta)
        return client.complete(messages, tools)


def ask(
    client: ModelClient,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    *,
    step: int,
    hooks: LoopHooks | None = None,
) -> ModelTurn:
    """One model step: `on_request`, the call, then `on_reply`; a failed call goes to `on_error` and is raised."""
    hooks = LoopHooks() if hooks is None else hooks
    hooks.on_request(step, messages)
    try:
        reply = hooks.request(client, messages, tools)
    except ModelCallError as exc:
        hooks.on_error(step, exc)
        raise
    hooks.on_reply(step, reply)
    return reply


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
    hooks = LoopHooks() if hooks is None else hooks
    out = LoopOutcome(status="max_steps", messages=messages)
    try:
        for step in range(1, max_steps + 1):
            if expired():
                out.status = "timeout"
                return out
            hooks.halt()
            out.steps = step
            try:
                reply = ask(client, messages, tools, step=step, hooks=hooks)
            except ModelCallError as exc:
                out.status, out.error = "model_error", exc
                return out
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
                    # The model reads what was wrong and may try again; the loop goes on.
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
