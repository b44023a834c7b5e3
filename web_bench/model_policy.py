"""The web lane's model policy: the plain model policy (`farm.llm.policy.ModelPolicy`) with the browser tools."""

from __future__ import annotations

from farm.llm.client import ModelClient
from farm.llm.policy import ModelPolicy
from farm.llm.types import Message, ToolSpec
from web_bench.browser.contract import SYSTEM_PROMPT, TOOLS
from web_bench.turn import WebBrief


def tool_specs() -> list[ToolSpec]:
    """The browser tools as the model sees them (same for both backends)."""
    return [ToolSpec(name=t.name, description=t.description, parameters=t.parameters()) for t in TOOLS]


def opening(brief: WebBrief) -> list[Message]:
    """A run's conversation starts with the browser system prompt and the task's prompt."""
    return [Message.system(SYSTEM_PROMPT), Message.user(brief.prompt)]


def model_policy(client: ModelClient) -> ModelPolicy[WebBrief]:
    """The model behind `client` driving the browser tools until it answers without tools."""
    return ModelPolicy(client, tool_specs(), opening)
