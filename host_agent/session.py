"""The phone as a lane of `farm.llm.loop.run_tool_loop`: its tools as the executor, its accounting as the hooks.

`PhoneSession` is both. `on_step` counts a policy's step (tokens, cost, round trips, model time) and writes the
step line of a move without a usable call; `on_bad_arguments` writes the line of a call whose arguments are not
a JSON object; `__call__` performs one call on the phone — parse, repeat guard, action, takeover wait, step
line, next screen — and gives back a `PhoneResult` carrying the new screen. A terminal tool (answer, give_up,
hand_over, confirm) or a repeat halts the loop with `LoopHalt` once its step line is written.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

from farm.llm.loop import Feedback, LoopHalt, LoopHooks, Step
from farm.llm.types import ToolCall
from farm.results.record import Tokens
from farm.scoring.evidence import AskEvent, ConfirmationCard, EndKind, HandOver, ScreenRead
from farm.scoring.takeover import barrier_kind, barrier_visible
from farm.scoring.transcript import ActionLine, ObservationLine, ResultLine, StepLine, StepTimings
from host_agent import tools as t
from host_agent.actions import ActionEnv, perform
from host_agent.observation import Observation
from host_agent.phone import Phone, PhoneError
from host_agent.transcript import TranscriptWriter

MAX_REPEATS = 5
"""The same action on the same screen this many times ends the attempt."""
TAKEOVER_POLL_S = 1.0
"""How often the screen is read while waiting for the user to clear a barrier (`--on-takeover wait`)."""

OnTakeover = Literal["cancel", "wait"]


@dataclass
class PhoneResult:
    """What one call on the phone gives back to the policy (a `farm.llm.loop.ToolOutput`)."""

    text: str
    """What the call did, or `error: …`; the screen is not in it."""
    observation: Observation
    """The screen now: read after the call, or the same screen when the call was not performed."""
    image_jpeg: bytes | None = None
    """That screen's JPEG, when the policy takes screenshots."""
    is_error: bool = False
    """Whether the call failed."""


def call_error(call: ToolCall) -> str | None:
    """Why a call cannot be performed, in the phone's words (`host_agent.tools.parse_call`); None when it can."""
    try:
        t.parse_call(call.name, call.arguments_json)
    except t.ToolCallError as exc:
        return str(exc)
    return None


def said(item: Feedback) -> str:
    """What the phone tells a policy about one call of its previous step, in the phone's own words."""
    if isinstance(item.output, PhoneResult):
        return item.output.text
    # The loop's own "Error: …": a step without a usable call, or arguments that were not a JSON object.
    why = item.output.text.removeprefix("Error: ")
    if item.call is not None:
        why = call_error(item.call) or why
    return f"error: {why}"


def screen_now(feedback: Sequence[Feedback], last: Observation) -> Observation:
    """The latest screen the feedback carries; `last` when it carries none (no call was performed)."""
    for item in reversed(feedback):
        if isinstance(item.output, PhoneResult):
            return item.output.observation
    return last


class Clock:
    """Where an attempt's time went (ms since it began; model, screen and action time summed)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.model = self.screen = self.action = 0.0
        self.first_feedback: float | None = None
        self.waited = 0.0

    def now_ms(self) -> float:
        """Time since the attempt began."""
        return (time.perf_counter() - self.start) * 1000


class PhoneSession(LoopHooks):
    """One attempt on one phone: the executor and the hooks of its `run_tool_loop`, and the evidence it leaves."""

    stream = False
    """The phone's model request is the one it has always sent: not streamed."""

    def __init__(self, phone: Phone, writer: TranscriptWriter, env: ActionEnv, clock: Clock, *,
                 screenshots: bool, timeout_sec: float, max_repeats: int = MAX_REPEATS,
                 on_takeover: OnTakeover = "cancel", poll_s: float = TAKEOVER_POLL_S) -> None:
        self.phone, self.writer, self.env, self.clock = phone, writer, env, clock
        self.screenshots = screenshots
        self.timeout_sec, self.max_repeats = timeout_sec, max_repeats
        self.on_takeover, self.poll_s = on_takeover, poll_s
        self.screen: Observation | None = None
        """The screen the policy's current step was decided on."""
        self.reads: list[ScreenRead] = []
        self.asks: list[AskEvent] = []
        self.cards: list[ConfirmationCard] = []
        self.hand_over: HandOver | None = None
        self.answer: str | None = None
        self.packages: list[str] = []
        self.tokens, self.cost, self.cost_known, self.round_trips = Tokens(), 0.0, True, 0
        self.steps = self.step_errors = 0
        self.end: EndKind | None = None
        """Set when a terminal tool or a repeat ended the attempt."""
        self.end_reason = ""
        self.takeover_wait: str | None = None
        """With `wait`: how the wait for the user ended."""
        self._repeats: Counter[tuple[str, str, str]] = Counter()
        self._move = Step()
        self._at_ms = self._model_ms = self._read_ms = 0.0

    def read(self, at_step: int) -> Observation:
        """Read the screen (the agent's screen-reading time), keep it as evidence and as the current screen."""
        t0 = time.perf_counter()
        obs = self.phone.read(screenshot=self.screenshots)
        self._read_ms = (time.perf_counter() - t0) * 1000
        self.clock.screen += self._read_ms
        if obs.screenshot is None and self.writer.wants_screenshot():
            # For the transcript only, so not the agent's screen-reading time; a phone that cannot give one
            # still runs the task (the step then names no screenshot).
            try:
                obs.screenshot = self.phone.screenshot_jpeg()
            except (PhoneError, ValueError):  # ValueError: an answer that is not base64
                pass
        self.reads.append(ScreenRead(step=at_step, text=obs.text, package=obs.package, activity=obs.activity))
        if obs.package and obs.package not in self.packages:
            self.packages.append(obs.package)
        self.screen = obs
        return obs

    def on_step(self, step: int, move: Step) -> None:
        """Count the step and what deciding it cost; a move without a usable call is a step error."""
        self.steps, self._move = step, move
        self._at_ms = self.clock.now_ms() - move.took_ms
        reply = move.reply
        self._model_ms = (reply.latency_ms if reply is not None else 0.0) or move.took_ms
        self.clock.model += self._model_ms
        if reply is not None:
            # A model call without usage makes the total unknown; it is never summed as 0.
            self.tokens = reply.usage if not self.round_trips else self.tokens.plus(reply.usage)
            self.round_trips += len(reply.attempts) or 1
            if reply.cost_usd is None:
                self.cost_known = False
            else:
                self.cost += reply.cost_usd
        if move.error is not None:
            self._write_error(ActionLine(tool="", message=move.text or None), move.error)

    def on_bad_arguments(self, call: ToolCall, error: str) -> None:
        """A call whose arguments are not a JSON object is a step error, named as `parse_call` names it."""
        self._write_error(_action(call, self._move.text), call_error(call) or error)

    def __call__(self, call: ToolCall, arguments: dict[str, JsonValue]) -> PhoneResult:
        """Perform one call on the current screen and read the next one; `LoopHalt` when the attempt ends."""
        obs = self.screen
        assert obs is not None, "read() the first screen before the loop"
        action = _action(call, self._move.text)
        try:
            args = t.parse_call(call.name, arguments)
        except t.ToolCallError as exc:
            self._write_error(action, str(exc))
            return self._result(f"error: {exc}", obs, ok=False)
        timings = self._timings()
        key = (obs.digest, call.name, json.dumps(args.model_dump(), sort_keys=True))
        self._repeats[key] += 1
        if self._repeats[key] >= self.max_repeats:
            self._write(action, ResultLine(ok=False, text="not performed: repeated on the same screen"), timings)
            self.end, self.end_reason = "repeat", f"{call.name} {self.max_repeats} times on the same screen"
            raise LoopHalt(self.end, self.end_reason)
        result = perform(args, obs, self.phone, self.env, self.steps)
        self.clock.action += result.action_ms
        if self.clock.first_feedback is None:
            self.clock.first_feedback = self.clock.now_ms()
        timings.action_ms, timings.other_ms = result.action_ms, result.waited_ms
        if result.ask:
            self.asks.append(result.ask)
        if result.card:
            self.cards.append(result.card)
        self.hand_over = result.hand_over or self.hand_over
        self.answer = result.answer if result.answer is not None else self.answer
        if not result.ok:
            self.step_errors += 1
        if result.end == "hand_over" and result.hand_over is not None and self.on_takeover == "wait":
            cleared, self.takeover_wait = self._wait_for_user(result.hand_over)
            if cleared:
                result.end = None
                result.text = f"the user completed the hand-over ({self.takeover_wait}); continue the task"
            else:
                result.end_reason += f"; waited for the user: {self.takeover_wait}"
            timings.other_ms += self.clock.waited
        self._write(action, ResultLine(ok=result.ok, text=result.text, error=result.error), timings)
        if result.end is not None:
            self.end, self.end_reason = result.end, result.end_reason
            raise LoopHalt(result.end, result.end_reason)
        return self._result(result.text if result.ok else f"error: {result.error}", self.read(self.steps),
                            ok=result.ok)

    def _result(self, text: str, obs: Observation, *, ok: bool) -> PhoneResult:
        image = obs.screenshot if self.screenshots else None
        return PhoneResult(text=text, observation=obs, image_jpeg=image, is_error=not ok)

    def _timings(self) -> StepTimings:
        # A screen read counts on the step that was decided on it; a step after an error re-uses the screen.
        timings = StepTimings(screen_read_ms=self._read_ms, model_ms=self._model_ms)
        self._read_ms = 0.0
        return timings

    def _write_error(self, action: ActionLine, error: str) -> None:
        self.step_errors += 1
        self._write(action, ResultLine(ok=False, text=f"error: {error}", error=error), self._timings())

    def _write(self, action: ActionLine, result: ResultLine, timings: StepTimings) -> None:
        obs = self.screen
        assert obs is not None
        shot = self.writer.screenshot(obs.screenshot)
        seen = ObservationLine(digest=obs.digest, text=obs.text, package=obs.package, activity=obs.activity,
                               screenshot=shot)
        reply = self._move.reply
        self.writer.step(StepLine(step=self.steps, at_ms=self._at_ms, observation=seen, action=action,
                                  result=result, timings=timings, tokens=reply.usage if reply is not None else None))

    def _wait_for_user(self, hand: HandOver) -> tuple[bool, str]:
        """Poll the screen until the barrier named by the hand-over is gone (True) or the budget runs out."""
        kind = barrier_kind(hand.reason)
        t0 = time.perf_counter()
        try:
            while True:
                # Reads while waiting are the user's time, not the agent's screen reading.
                if not barrier_visible(kind, self.phone.read(screenshot=False).text):
                    return True, f"{kind} cleared after {time.perf_counter() - t0:.1f} s"
                left = self.timeout_sec - self.clock.now_ms() / 1000
                if left <= 0:
                    return False, f"the wait timed out after {time.perf_counter() - t0:.1f} s ({kind} still on screen)"
                time.sleep(min(self.poll_s, left))
        finally:
            self.clock.waited = (time.perf_counter() - t0) * 1000


def _action(call: ToolCall, text: str | None) -> ActionLine:
    # Parsed as the loop parses it; arguments that are not a JSON object are kept raw for the transcript.
    try:
        return ActionLine(tool=call.name, args=call.arguments(), message=text or None)
    except ValueError:
        return ActionLine(tool=call.name, args={}, raw=call.arguments_json, message=text or None)
