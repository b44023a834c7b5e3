"""One run's turn as the runner sees it: the brief a policy gets, and the recorder every tool call and model
step goes through, so event sequence, tool wall time, token sums and forbidden tools are recorded the same way
for every policy (model or scripted, both on `farm.llm.loop.run_tool_loop`)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, JsonValue

from farm.llm.client import ModelCallError
from farm.llm.loop import LoopHooks
from farm.llm.types import Message, ModelTurn, ToolCall
from farm.results.record import Tokens
from web_bench.browser.contract import TOOLS_BY_NAME, BrowserSession, ToolResult
from web_bench.paired.results import TurnStatus
from web_bench.paired.site.catalog import TaskInstance


class Turn:
    """Recorder and gatekeeper of one run; `t0` is when the prompt was sent."""

    def __init__(self, session: BrowserSession, timeout_ms: int) -> None:
        self.session = session
        self.timeout_ms = timeout_ms
        self.t0 = time.monotonic()
        self.events: list[str] = ["turn/start"]
        self.tool_wall_ms = 0.0
        self.tool_calls = 0
        self.tool_errors = 0
        self.model_calls = 0
        self.disallowed: list[str] = []
        self.first_output_ms: float | None = None
        self.tokens = Tokens()
        self.cost_usd: float | None = None
        self._cost_known = True

    def elapsed_ms(self) -> float:
        """Milliseconds since the prompt was sent."""
        return (time.monotonic() - self.t0) * 1000

    def expired(self) -> bool:
        """Whether the run's time limit has passed."""
        return self.elapsed_ms() >= self.timeout_ms

    def event(self, kind: str) -> None:
        """Record an event."""
        self.events.append(kind)

    def call_tool(self, name: str, arguments: Mapping[str, JsonValue]) -> ToolResult:
        """Run a browser tool; a non-`browser_*` tool is refused, recorded and fails the run."""
        self.tool_calls += 1
        self.event("tool/call")
        if name not in TOOLS_BY_NAME:
            self.disallowed.append(name)
            self.event("tool/refused")
            return ToolResult(text=f"Error: tool {name!r} is not allowed; use only the browser_* tools",
                              is_error=True)
        started = time.monotonic()
        result = self.session.call(name, arguments)
        self.tool_wall_ms += (time.monotonic() - started) * 1000
        if result.is_error:
            self.tool_errors += 1
        self.event("tool/error" if result.is_error else "tool/result")
        return result

    def model_delta(self) -> None:
        """A model reply's first non-empty streamed delta arrived; the turn's first one is its ttftMs."""
        if self.first_output_ms is None:
            self.first_output_ms = self.elapsed_ms()

    def model_reply(self, usage: Tokens, cost_usd: float | None) -> None:
        """Account one model response (tokens summed over steps; unknown tokens and cost stay unknown)."""
        self.model_calls += 1
        self.event("model/response")
        # A reply without usage makes the turn's total unknown; it is never summed as 0.
        self.tokens = usage if self.model_calls == 1 else self.tokens.plus(usage)
        if cost_usd is None:
            self._cost_known = False
            self.cost_usd = None
        elif self._cost_known:
            self.cost_usd = (self.cost_usd or 0.0) + cost_usd


class TurnHooks(LoopHooks):
    """The loop's callbacks as events on a `Turn` (names kept: they feed the run's event diagnostics)."""

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


@dataclass(frozen=True)
class WebBrief:
    """What a web-lane policy is given for one run."""

    instance: TaskInstance
    """The task at its seed (a script picks its steps and reads its targets from it)."""
    prompt: str
    """The prompt the model gets: the goal, then `Start at <url>`."""

    @property
    def start_url(self) -> str:
        """The URL the prompt says to start at."""
        return self.prompt.rsplit("Start at ", 1)[-1].strip()


GAVE_UP = "gave_up"
"""`LoopHalt` reason of a policy that stops without an answer (a script whose step failed): the turn completes
with no answer and the halt's detail as its error."""


class TurnOutcome(BaseModel):
    """How a run's turn ended."""

    model_config = ConfigDict(extra="forbid")

    status: TurnStatus
    """completed, timeout, max_steps or error."""
    answer: str | None = None
    """Final answer text."""
    error: str | None = None
    """One-line error."""
    infrastructure: bool = False
    """The turn failed for a reason outside the agent (site, browser, phone, model API unavailable)."""
    stop_dispatch: str | None = None
    """The model call that ended the turn stops the matrix (the provider's quota is used up, its key refused): one
    line naming the provider and why. Every later run would fail the same way."""
