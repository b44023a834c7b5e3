"""The web lane's model policy: the browser tools over the shared model loop (`farm.llm.loop`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from farm.llm.client import ModelCallError, ModelClient
from farm.llm.loop import LoopHooks, run_tool_loop
from farm.llm.types import Message, ModelTurn, ToolCall, ToolSpec
from web_bench.browser.contract import SYSTEM_PROMPT, TOOLS
from web_bench.turn import PolicyResult, Turn

if TYPE_CHECKING:
    from web_bench.site.catalog import TaskInstance

MAX_STEPS = 40


def tool_specs() -> list[ToolSpec]:
    """The browser tools as the model sees them (same for both backends)."""
    return [ToolSpec(name=t.name, description=t.description, parameters=t.parameters()) for t in TOOLS]


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
