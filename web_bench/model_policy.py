"""The model policy: a farm.llm client offered exactly the `browser_*` tools."""

from __future__ import annotations

from farm.llm.client import ModelCallError, ModelClient
from farm.llm.types import Message, ToolSpec
from web_bench.browser.contract import SYSTEM_PROMPT, TOOLS
from web_bench.site.catalog import TaskInstance
from web_bench.turn import PolicyResult, Turn

MAX_STEPS = 40


def tool_specs() -> list[ToolSpec]:
    """The browser tools as the model sees them (same for both backends)."""
    return [ToolSpec(name=t.name, description=t.description, parameters=t.parameters()) for t in TOOLS]


class ModelPolicy:
    """Ask the model, run the tools it calls, repeat until it answers without tools."""

    name = "model"

    def __init__(self, client: ModelClient, *, max_steps: int = MAX_STEPS) -> None:
        self.client = client
        self.max_steps = max_steps

    def run(self, instance: TaskInstance, prompt: str, turn: Turn) -> PolicyResult:
        """One turn: the prompt, then model steps until a final answer, the step limit or the deadline."""
        messages = [Message.system(SYSTEM_PROMPT), Message.user(prompt)]
        tools = tool_specs()
        for _ in range(self.max_steps):
            if turn.expired():
                return PolicyResult(status="timeout", error="time limit reached")
            turn.event("model/request")
            try:
                # Streamed so ttftMs is the first non-empty delta (seed 001), not the first whole reply.
                reply = self.client.complete(messages, tools, stream=True, on_first_delta=turn.model_delta)
            except ModelCallError as exc:
                turn.event("model/error")
                # Retries exhausted or a refused request: the model service failed, not the agent.
                return PolicyResult(status="error", error=exc.line(), infrastructure=True)
            turn.model_reply(reply.usage, reply.cost_usd)
            messages.append(reply.as_message())
            if not reply.tool_calls:
                turn.event("assistant/text")
                return PolicyResult(status="completed", answer=reply.text)
            for call in reply.tool_calls:
                try:
                    arguments = call.arguments()
                except ValueError as exc:
                    turn.event("tool/bad_arguments")
                    messages.append(Message.tool_result(call.id, f"Error: {exc}"))
                    continue
                result = turn.call_tool(call.name, arguments)
                images = [result.image_jpeg] if result.image_jpeg else None
                messages.append(Message.tool_result(call.id, result.text, images))
        return PolicyResult(status="max_steps", error=f"no final answer within {self.max_steps} model steps")
