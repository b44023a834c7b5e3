"""The phone's model policy: a conversation with an LLM through farm.llm, one tool call per turn.

It implements `farm.llm.loop.Policy[PhoneBrief]`; each step is one model step of `farm.llm.loop.ask` with the
hooks the loop began it with, so retries and errors take the same path as the browser lanes. The conversation
is the phone's own: every tool result carries the screen read after the call, and only the first call of a
reply is performed.
"""

from __future__ import annotations

from collections.abc import Sequence

from farm.llm.client import ModelCallError, ModelClient
from farm.llm.loop import Feedback, LoopHooks, Step, ask
from farm.llm.types import Message, ToolSpec
from host_agent.observation import Observation
from host_agent.policy import PhoneBrief, TaskContext
from host_agent.session import said, screen_now
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


def goal_text(ctx: TaskContext) -> str:
    """The goal as the user says it (web-channel tasks are told to use the web)."""
    goal = ctx.task.goal
    if ctx.task.channel == "web" and not goal.startswith("用网页"):
        goal = "用网页" + goal
    return goal


class ModelPolicy:
    """Keeps one conversation per task; a reply that is not a tool call is a step error the model sees."""

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
        self._screen: Observation | None = None
        self._hooks = LoopHooks()
        self.failure: ModelCallError | None = None
        """The model call that failed for good and so ended the current task (None while none has). Its verdict
        tells the executor whether the run must stop dispatching (a used-up quota, a refused key)."""

    def begin(self, brief: PhoneBrief, hooks: LoopHooks) -> None:
        """Fresh conversation for a task, opening on the brief's screen; model steps are reported to `hooks`."""
        ctx = brief.ctx
        self.messages = [Message.system(SYSTEM_PROMPT)]
        self._pending, self._screens = [], []
        self._goal = goal_text(ctx)
        apps = ", ".join(f"{cap}={pkg}" for cap, pkg in sorted(ctx.apps.items()))
        self._apps = f"\nApps on this phone (launch by capability or package): {apps}" if apps else ""
        self._screen = brief.screen
        self._hooks = hooks
        self.failure = None

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

    def step(self, step: int, feedback: Sequence[Feedback]) -> Step:
        """Send what the last call did with the screen now (the same screen when it was not performed) and
        return the model's next call: at most one per step."""
        assert self._screen is not None, "begin() first"
        obs = self._screen = screen_now(feedback, self._screen)
        told = said(feedback[0]) if feedback else None
        if len(self.messages) == 1:
            self._add_screen(Message.user(f"Task: {self._goal}{self._apps}{_SCREEN}{obs.text}", self._images(obs)))
        elif self._pending:
            first, *rest = self._pending
            self._add_screen(Message.tool_result(first, f"{told or 'done'}{_SCREEN}{obs.text}", self._images(obs)))
            for extra in rest:
                self.messages.append(Message.tool_result(extra, "not performed: one tool call per turn"))
        else:
            self._add_screen(Message.user(f"{told or ''}{_SCREEN}{obs.text}", self._images(obs)))
        try:
            turn = ask(self.client, self.messages, self.tools, step=step, hooks=self._hooks)
        except ModelCallError as exc:
            # Kept for the executor: the loop turns it into the task's end reason, a line of text.
            self.failure = exc
            raise
        self.messages.append(turn.as_message())
        if not turn.tool_calls:
            self._pending = []
            return Step(text=turn.text, reply=turn, error="no tool call: reply with exactly one tool call")
        self._pending = [c.id for c in turn.tool_calls]
        return Step(calls=[turn.tool_calls[0]], text=turn.text, reply=turn)
