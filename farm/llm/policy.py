"""The plain model policy: one conversation per task, one `ask` per step (see `farm.llm.loop` for the protocol)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic

from farm.llm.client import ModelClient
from farm.llm.loop import BriefT, Feedback, LoopHooks, Step, ask
from farm.llm.types import Message, ToolSpec


def result_messages(feedback: Sequence[Feedback]) -> list[Message]:
    """Feedback as conversation messages: tool results, or a user message for a step without a usable call."""
    out: list[Message] = []
    for item in feedback:
        images = [item.output.image_jpeg] if item.output.image_jpeg else None
        if item.call is None:
            out.append(Message.user(item.output.text, images or []))
        else:
            out.append(Message.tool_result(item.call.id, item.output.text, images))
    return out


class ModelPolicy(Generic[BriefT]):
    """A model as a policy: `opening` builds the first messages from the lane's brief; every tool call the model
    makes is run, in order; an answer without tools ends the task."""

    name = "model"

    def __init__(
        self,
        client: ModelClient,
        tools: Sequence[ToolSpec],
        opening: Callable[[BriefT], list[Message]],
    ) -> None:
        self.client = client
        self.tools = list(tools)
        self.opening = opening
        self.hooks = LoopHooks()
        self.messages: list[Message] = []

    def begin(self, brief: BriefT, hooks: LoopHooks) -> None:
        """Fresh conversation for a task; its model steps are reported to `hooks`."""
        self.messages = self.opening(brief)
        self.hooks = hooks

    def take(self, feedback: Sequence[Feedback]) -> None:
        """Add feedback to the conversation (each step does; a lane does it for results a halt left unread)."""
        self.messages.extend(result_messages(feedback))

    def step(self, step: int, feedback: Sequence[Feedback]) -> Step:
        """Send the feedback and return the model's next move."""
        self.take(feedback)
        reply = ask(self.client, self.messages, self.tools, step=step, hooks=self.hooks)
        self.messages.append(reply.as_message())
        return Step(calls=list(reply.tool_calls), text=reply.text, reply=reply)
