"""The model policy: a conversation with an LLM through farm.llm, one tool call per turn.

The phone stays step-wise (observe → decide → act, see `host_agent.loop`); each decision is one model step of
the shared loop's `farm.llm.loop.ask`, so retries and errors take the same path as the browser lanes.
"""

from __future__ import annotations

from farm.llm.client import ModelCallError, ModelClient
from farm.llm.loop import LoopHooks, ask
from farm.llm.types import Message, ToolSpec
from host_agent.observation import Observation
from host_agent.policy import Decision, ModelUnavailable, TaskContext
from host_agent.tools import tool_specs

SYSTEM_PROMPT = """You operate an Android phone for a user, one tool call per turn.
Each turn you get the screen as text: one line per element, `[ref] Class "text" desc="…" (id) flags`.
Act with tap/long_press/type (use refs), swipe, back, home, launch, wait.
Rules:
- Read-only tasks: only look; do not like, add to cart, change settings or send anything.
- Ask the user (ask_user) only for what only they know (who, which one, what time); otherwise decide
  sensibly yourself and say what you chose in the answer.
- Before any irreversible step (send, post, buy, delete) call confirm(action, target, content, amount)
  instead of pressing the final button; that ends the task.
- A login box or captcha you cannot pass: hand_over(reason="login" or "captcha").
- Impossible tasks: give_up(reason) saying why.
- Finish with answer(text): state the values exactly as the screen shows them; quote names in “”."""
_SCREEN = "\n\nScreen now:\n"
KEEP_SCREENS = 3
"""Older screens are cut from the conversation (the transcript keeps every one)."""


class _PhoneHooks(LoopHooks):
    """The phone's model step: not streamed, so the request is the one it has always sent."""

    stream = False


def goal_text(ctx: TaskContext) -> str:
    """The goal as the user says it (web-channel tasks are told to use the web)."""
    goal = ctx.task.goal
    if ctx.task.channel == "web" and not goal.startswith("用网页"):
        goal = "用网页" + goal
    return goal


class ModelPolicy:
    """Keeps one conversation per task; a call that is not a tool call is a step error the model sees."""

    name = "model"

    def __init__(self, client: ModelClient, *, screenshots: bool = False, tools: list[ToolSpec] | None = None) -> None:
        self.client = client
        self.wants_screenshots = screenshots
        self.tools = tools or tool_specs()
        self.messages: list[Message] = []
        self._pending: list[str] = []
        self._screens: list[int] = []
        self._goal = ""
        self._apps = ""
        self._step = 0
        self._hooks = _PhoneHooks()

    def begin(self, ctx: TaskContext) -> None:
        """Fresh conversation for a task."""
        self.messages = [Message.system(SYSTEM_PROMPT)]
        self._pending, self._screens = [], []
        self._step = 0
        self._goal = goal_text(ctx)
        apps = ", ".join(f"{cap}={pkg}" for cap, pkg in sorted(ctx.apps.items()))
        self._apps = f"\nApps on this phone (launch by capability or package): {apps}" if apps else ""

    def _images(self, obs: Observation) -> list[bytes]:
        return [obs.screenshot] if (self.wants_screenshots and obs.screenshot) else []

    def _add_screen(self, message: Message) -> None:
        self.messages.append(message)
        self._screens.append(len(self.messages) - 1)
        for index in self._screens[:-KEEP_SCREENS]:
            old = self.messages[index]
            if old.text and _SCREEN in old.text:
                cut = old.text.split(_SCREEN, 1)[0] + _SCREEN + "(older screen omitted)"
                self.messages[index] = old.model_copy(update={"text": cut, "images": []})

    def decide(self, obs: Observation, feedback: str | None) -> Decision:
        """Send the new screen (as the result of the last call) and return the model's next call."""
        if len(self.messages) == 1:
            self._add_screen(Message.user(f"Task: {self._goal}{self._apps}{_SCREEN}{obs.text}", self._images(obs)))
        elif self._pending:
            first, *rest = self._pending
            self._add_screen(Message.tool_result(first, f"{feedback or 'done'}{_SCREEN}{obs.text}", self._images(obs)))
            for extra in rest:
                self.messages.append(Message.tool_result(extra, "not performed: one tool call per turn"))
        else:
            self._add_screen(Message.user(f"{feedback or ''}{_SCREEN}{obs.text}", self._images(obs)))
        self._step += 1
        try:
            turn = ask(self.client, self.messages, self.tools, step=self._step, hooks=self._hooks)
        except ModelCallError as exc:
            raise ModelUnavailable(exc.line()) from None
        self.messages.append(turn.as_message())
        trips = len(turn.attempts) or 1
        if not turn.tool_calls:
            self._pending = []
            return Decision(tool="", arguments="", text=turn.text, tokens=turn.usage, cost_usd=turn.cost_usd,
                            model_ms=turn.latency_ms, round_trips=trips,
                            error="no tool call: reply with exactly one tool call")
        self._pending = [c.id for c in turn.tool_calls]
        call = turn.tool_calls[0]
        return Decision(tool=call.name, arguments=call.arguments_json, text=turn.text, tokens=turn.usage,
                        cost_usd=turn.cost_usd, model_ms=turn.latency_ms, round_trips=trips)
