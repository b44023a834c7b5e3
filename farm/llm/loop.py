"""The loop every agent lane shares: one policy protocol over a tool contract.

A policy (`Policy`: a model or a script) turns what its last tool calls gave back into its next `Step`.
`run_tool_loop` begins the policy with the lane's brief, asks it for steps, runs the tool calls through the
lane's executor and feeds the results back, until the policy answers without tools, the step limit runs out,
the deadline passes, a model call fails for good, or a hook or the executor halts it (a phone's terminal tool
does). A lane brings its tools, its brief, its limits and its hooks (accounting, traces, guards, transcripts)
— never its own loop.

`ask` is one model step of a model policy: the request hook, the (retried, by default streamed) call, then the
reply or error hook. `farm.llm.policy.ModelPolicy` is the plain model policy; the phone keeps its own
conversation shape (screens, one call per turn) on the same `ask`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar

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

    def on_step(self, step: int, move: Step) -> None:
        """The policy decided step `step` (before its calls run; `move.error` set when it has no usable call)."""

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
class Feedback:
    """What the lane gave back for one tool call of the previous step."""

    call: ToolCall | None
    """The call answered; null when the previous step had no usable call (`output` then says why)."""
    output: ToolOutput
    """What the policy reads."""


@dataclass
class Step:
    """A policy's next move, and the model reply behind it."""

    calls: list[ToolCall] = field(default_factory=list)
    """Tool calls to run, in order; empty = the policy is done (or, with `error`, could not go on)."""
    text: str | None = None
    """Text written along with the calls; the final answer when there are none."""
    error: str | None = None
    """The policy produced no usable call and is not done: the loop feeds this back and goes on."""
    reply: ModelTurn | None = None
    """The model reply (usage, cost, latency, retries); null for a script."""
    took_ms: float = 0.0
    """Wall time the policy took to decide (set by the loop)."""


BriefT_contra = TypeVar("BriefT_contra", contravariant=True)
BriefT = TypeVar("BriefT")


class Policy(Protocol[BriefT_contra]):
    """A model or a script, driven step by step by `run_tool_loop`; the brief is the lane's task description."""

    name: str
    """`model` or `scripted`."""

    def begin(self, brief: BriefT_contra, hooks: LoopHooks) -> None:
        """Start a task (fresh conversation or script); a model policy reports its model steps to `hooks`."""

    def step(self, step: int, feedback: Sequence[Feedback]) -> Step:
        """The next move (`step` is 1-based), given what the previous step's calls gave back (empty at first).

        A model policy raises `ModelCallError` when its model call failed for good.
        """
        ...


@dataclass
class LoopOutcome:
    """How a loop ended."""

    status: LoopStatus
    """Why it ended."""
    steps: int = 0
    """Steps started (one per move asked of the policy)."""
    answer: str | None = None
    """The final answer (status `completed`)."""
    last_text: str | None = None
    """The latest non-empty text the policy produced (kept when a limit ends the loop)."""
    error: ModelCallError | None = None
    """The model failure (status `model_error`)."""
    halt: LoopHalt | None = None
    """What halted the loop (status `halted`)."""
    tool_calls: int = 0
    """Tool calls handed to the executor."""
    unread: list[Feedback] = field(default_factory=list)
    """Results the policy never read (the loop ended before its next step)."""


def run_tool_loop(
    policy: Policy[BriefT],
    brief: BriefT,
    execute: ToolExecutor,
    *,
    max_steps: int,
    expired: Callable[[], bool],
    hooks: LoopHooks | None = None,
) -> LoopOutcome:
    """Begin `policy` with `brief`, then steps until a final answer, `max_steps`, `expired()`, a failed model
    call or a `LoopHalt` (from a hook, the executor or the policy)."""
    hooks = LoopHooks() if hooks is None else hooks
    out = LoopOutcome(status="max_steps")
    feedback: list[Feedback] = []
    try:
        policy.begin(brief, hooks)
        for step in range(1, max_steps + 1):
            if expired():
                out.status = "timeout"
                break
            hooks.halt()
            out.steps = step
            began = time.perf_counter()
            try:
                move = policy.step(step, feedback)
            except ModelCallError as exc:
                out.status, out.error = "model_error", exc
                return out
            feedback = []
            move.took_ms = (time.perf_counter() - began) * 1000
            if move.text and move.text.strip():
                out.last_text = move.text
            hooks.on_step(step, move)
            if move.error is not None:
                feedback = [Feedback(None, ToolResult(text=f"Error: {move.error}", is_error=True))]
                continue
            if not move.calls:
                hooks.on_answer(step, move.text)
                out.status, out.answer = "completed", move.text
                return out
            for call in move.calls:
                try:
                    arguments = call.arguments()
                except ValueError as exc:
                    # The policy reads what was wrong and may try again; the loop goes on.
                    hooks.on_bad_arguments(call, str(exc))
                    feedback.append(Feedback(call, ToolResult(text=f"Error: {exc}", is_error=True)))
                    continue
                out.tool_calls += 1
                feedback.append(Feedback(call, execute(call, arguments)))
                hooks.halt()
    except LoopHalt as halt:
        out.status, out.halt = "halted", halt
    out.unread = feedback
    return out
