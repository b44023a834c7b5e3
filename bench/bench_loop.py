"""The one agent loop's own cost: `run_tool_loop` (hooks, argument parsing, feedback, halts) versus a bare
for-loop that asks the same scripted policy for its steps and runs the same zero-cost tool, side by side in one
run. A model step costs hundreds of milliseconds and a phone or browser action tens, so the loop's share of a
step is what is printed per step and as a ratio to the bare loop.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import JsonValue  # noqa: E402

from farm.llm.loop import Feedback, LoopHooks, Step, ToolResult, run_tool_loop  # noqa: E402
from farm.llm.types import ToolCall  # noqa: E402

STEPS = 200
ROUNDS = 30


class Script:
    """A policy that makes one call per step and answers after `STEPS` steps."""

    name = "scripted"

    def begin(self, brief: str, hooks: LoopHooks) -> None:
        self.brief = brief

    def step(self, step: int, feedback: Sequence[Feedback]) -> Step:
        if step > STEPS:
            return Step(text="done")
        return Step(calls=[ToolCall(id=f"s{step}", name="tap", arguments_json='{"ref": 12}')])


def tool(call: ToolCall, arguments: dict[str, JsonValue]) -> ToolResult:
    return ToolResult(text="tapped")


def bare() -> None:
    policy = Script()
    policy.begin("task", LoopHooks())
    feedback: list[Feedback] = []
    for step in range(1, STEPS + 2):
        move = policy.step(step, feedback)
        if not move.calls:
            return
        feedback = [Feedback(call, tool(call, call.arguments())) for call in move.calls]


def looped() -> None:
    out = run_tool_loop(Script(), "task", tool, max_steps=STEPS + 1, expired=lambda: False)
    assert out.status == "completed" and out.tool_calls == STEPS


def per_step_us(fn: object) -> float:
    assert callable(fn)
    samples = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) / STEPS * 1e6)
    return statistics.median(samples)


def main() -> None:
    bare(), looped()  # warm up
    a, b = [], []
    for _ in range(3):  # alternate, so drift on a shared machine hits both
        b.append(per_step_us(bare))
        a.append(per_step_us(looped))
    loop_us, bare_us = statistics.median(a), statistics.median(b)
    print(f"run_tool_loop: {loop_us:.1f} µs per step; bare loop over the same policy and tool: {bare_us:.1f} µs")
    print(f"ratio {loop_us / bare_us:.2f}x; the loop adds {loop_us - bare_us:.1f} µs per step")


if __name__ == "__main__":
    main()
