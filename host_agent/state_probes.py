"""The harness reads the phone's state itself: the probes of a task's state checks and goalState just before the
agent starts, and again (with probesAfter) once it has ended. The same reading serves both executors: the host
executor reads through its uiautomator2 phone, the instrument executor through the job's adb device.

A probe the phone refuses (permission, missing provider) is kept as a refusal: its check reaches no verdict and the
attempt is not scored, never an agent failure. A goalState that already holds before the agent starts means the
attempt would prove nothing: it is not run, and is recorded as an invalid start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from farm.scoring.evidence import ProbeReading
from farm.scoring.state import needs_before, state_holds
from farm.taskset.model import StateCheck, Task

INVALID_START = "invalid_start"
"""The failure category of an attempt not run because its goal already held (outcome skipped)."""
_MAX_OUTPUT = 1 << 20
"""Output of one probe kept for parsing (a state probe's rows are capped by their parser too)."""

Shell = Callable[[list[str]], str]
"""Runs an argv on the phone (never a shell string) and returns its output."""


def keys_before(task: Task) -> list[str]:
    """Probes read just before the agent starts: goalState's and those of checks that compare before with after."""
    keys = [c.probe for c in task.goal_state]
    keys += [c.probe for c in task.checks if isinstance(c, StateCheck) and needs_before(c)]
    return list(dict.fromkeys(keys))


def keys_after(task: Task) -> list[str]:
    """Probes read after the attempt: those of every state check, and probesAfter."""
    keys = [c.probe for c in task.checks if isinstance(c, StateCheck)] + list(task.probes_after)
    return list(dict.fromkeys(keys))


def read_state(shell: Shell, keys: Iterable[str], catalogue: Mapping[str, object] | None = None
               ) -> dict[str, ProbeReading]:
    """Each probe's reading: its parsed value, the phone's refusal, or why it could not be read."""
    from farm.taskset.probes import ProbeRefused, ProbeSpec, load_catalogue, split_key

    specs = catalogue if catalogue is not None else load_catalogue()
    out: dict[str, ProbeReading] = {}
    for key in keys:
        name, param = split_key(key)
        spec = specs.get(name)
        if not isinstance(spec, ProbeSpec):
            out[key] = ProbeReading(error=f"no probe {name!r} in the catalogue")
            continue
        try:
            argv = spec.command(param)
            output = shell(argv)[:_MAX_OUTPUT]
        except ValueError as exc:
            out[key] = ProbeReading(error=str(exc))
            continue
        except Exception as exc:  # noqa: BLE001 - the phone or its link: no reading, and why
            out[key] = ProbeReading(error=f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
            continue
        try:
            out[key] = ProbeReading(value=spec.parse(output))
        except ProbeRefused as exc:
            out[key] = ProbeReading(refused=str(exc))
        except ValueError as exc:
            out[key] = ProbeReading(error=str(exc))
    return out


def goal_already_met(task: Task, readings: Mapping[str, ProbeReading]) -> str | None:
    """Why the attempt would prove nothing (every goalState check already holds, quoted), else None."""
    if not task.goal_state:
        return None
    said = []
    for check in task.goal_state:
        verdict = state_holds(check, task.marker, None, readings.get(check.probe))
        if verdict.passed is not True:
            return None
        said.append(verdict.detail)
    return "invalid start: the goal already held before the agent started (" + "; ".join(said) + ")"
