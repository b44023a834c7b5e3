"""The phone's state just before each task's agent starts: the readings its checks compare with, and whether the
attempt can prove anything at all.

A task's goalState that already holds makes the attempt worthless (a "turn Bluetooth on" task on a phone where
it is on passes with no action). Such a unit is not run and is recorded as an invalid start — unless the task
lists whitelisted setup actions (`farm.taskset.setup_actions`): those run, the goal is read again until it no
longer holds (at most `SETTLE_S`), and the agent starts from there; what the setup did is kept with the record.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from farm.scoring.evidence import ProbeReading
from farm.taskset.model import Task

SETTLE_S = 5.0
"""How long the goal is read again after setup before the start counts as not reached (a radio takes a moment
to switch on a real phone)."""
_POLL_S = 0.5
_MAX_ECHO = 200

Shell = Callable[[list[str]], str]
"""Runs an argv on the phone (never a shell string) and returns its output."""


@dataclass
class StartState:
    """What the harness saw (and did) before the agents of one batch started."""

    before: dict[str, dict[str, ProbeReading]] = field(default_factory=dict)
    """Task id → its state probes as read just before its agent starts (after any setup)."""
    invalid: dict[str, str] = field(default_factory=dict)
    """Task id → why its attempt is an invalid start (the goal already held, and setup, if any, did not change
    that), quoting the values seen."""
    setups: dict[str, str] = field(default_factory=dict)
    """Task id → what its setup actions did to reach the start state (one line), for tasks that needed them."""


def _line(text: str) -> str:
    return " ".join(text.split())[:_MAX_ECHO]


def run_setup(shell: Shell, keys: list[str]) -> tuple[list[str], bool]:
    """Run a task's setup actions in order: one line per action (its argv, and the phone's answer if any), and
    whether every action could be run (a bad key or a link error stops the rest)."""
    from farm.taskset.setup_actions import setup_command

    said: list[str] = []
    for key in keys:
        try:
            argv = setup_command(key)
        except ValueError as exc:
            said.append(f"{key}: {exc}")
            return said, False
        try:
            out = _line(shell(argv))
        except Exception as exc:  # noqa: BLE001 - the phone or its link: said, and the start is not reached
            said.append(f"{' '.join(argv)}: {type(exc).__name__}: {_line(str(exc))}")
            return said, False
        said.append(" ".join(argv) + (f" → {out}" if out else ""))
    return said, True


def read_start_state(shell_for: Callable[[Task], Shell], tasks: list[Task], *,
                     clock: Callable[[], float] = time.monotonic,
                     sleep: Callable[[float], None] = time.sleep) -> StartState:
    """Each task's state probes as the phone holds them just before its agent starts, running its setup actions
    first when its goal already holds."""
    from host_agent.state_probes import goal_already_met, keys_before, read_state

    state = StartState()
    for task in tasks:
        keys = keys_before(task)
        if not keys:
            continue
        shell = shell_for(task)
        readings = read_state(shell, keys)
        why = goal_already_met(task, readings)
        if why is not None and task.setup:
            said, ran = run_setup(shell, task.setup)
            deadline = clock() + SETTLE_S
            while True:
                readings = read_state(shell, keys)
                still = goal_already_met(task, readings)
                if still is None or not ran or clock() >= deadline:
                    break
                sleep(_POLL_S)
            if still is None:
                state.setups[task.id] = (f"setup reached a start state ({'; '.join(said)}); before it "
                                         + why.removeprefix("invalid start: "))
                why = None
            else:
                why = f"{still}; setup ({'; '.join(said)}) did not reach a start state"
        state.before[task.id] = readings
        if why is not None:
            state.invalid[task.id] = why
    return state
