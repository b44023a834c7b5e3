"""The paired benchmark's model policy: the plain model policy (`farm.llm.policy.ModelPolicy`) with the browser
tools."""

from __future__ import annotations

from farm.llm.client import ModelClient
from farm.llm.policy import ModelPolicy
from farm.llm.types import Message
from web_bench.browser.contract import SYSTEM_PROMPT, tool_specs
from web_bench.paired.turn import WebBrief


def opening(brief: WebBrief) -> list[Message]:
    """A run's conversation starts with the browser system prompt and the task's prompt."""
    return [Message.system(SYSTEM_PROMPT), Message.user(brief.prompt)]


def model_policy(client: ModelClient) -> ModelPolicy[WebBrief]:
    """The model behind `client` driving the browser tools until it answers without tools."""
    return ModelPolicy(client, tool_specs(), opening)
