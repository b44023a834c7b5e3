"""The scripted policy: deterministic steps per task id (demo and tests on the virtual phone).

A script is YAML, `fixtures/scripts/<task id>.yaml`:

    steps:
      - launch: {capability: calculator}
      - tap: "7"                          # shorthand for {at: {text: "7"}}
      - tap: {at: {resource_id: eq}}
      - type: {text: "buy milk {marker}", into: {resource_id: body}}
      - answer: {text: "结果是 {read:result}"}

Selectors (`at`, `into`): text, resource_id, desc, contains, after (the node following the one
whose text is given). Values may use `{marker}` (the task's resolved marker), `{read:<id>}` (text
of the node with that resource id), `{after:<text>}` (text of the node following that text) and
`{time+<minutes>:<id>}` (the `HH:MM` the node with that resource id shows, that many minutes later — the
phone's own clock, e.g. the status bar's `clock`).
A step `raw: {tool, arguments}` sends a call verbatim (to exercise malformed calls). A selector
that finds nothing ends the script with give_up: scripts fail loudly, never tap at random.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from farm.errors import FarmError
from farm.llm.loop import Feedback, LoopHooks, Step
from farm.llm.types import ToolCall
from farm.yaml_strict import strict_load
from host_agent.observation import Observation, UiNode
from host_agent.policy import PhoneBrief, PolicyUnavailable, TaskContext
from host_agent.session import screen_now

DEFAULT_SCRIPTS = Path(__file__).resolve().parent.parent / "fixtures" / "scripts"
_VALUE = re.compile(r"\{(marker|read:[^{}]+|after:[^{}]+|time\+[0-9]{1,4}:[^{}]+)\}")
_SELECTOR_KEYS = ("text", "resource_id", "desc", "contains", "after")


class Script(BaseModel):
    """The steps for one task."""

    model_config = ConfigDict(extra="forbid")

    steps: list[dict[str, JsonValue]] = Field(min_length=1)
    """One `{tool: args}` mapping per step."""
    note: str | None = None
    """Why the script does what it does."""


def load_scripts(root: Path | None = None) -> dict[str, Script]:
    """Every `<id>.yaml` under `root` (default fixtures/scripts/); FarmError on a bad file."""
    folder = root or DEFAULT_SCRIPTS
    scripts: dict[str, Script] = {}
    for path in sorted(folder.glob("*.yaml")):
        try:
            scripts[path.stem] = Script.model_validate(strict_load(path.read_text(encoding="utf-8"), path))
        except (yaml.YAMLError, ValidationError) as exc:
            raise FarmError(f"{path}: not a valid script ({str(exc).splitlines()[0]})") from None
    return scripts


class ScriptError(Exception):
    """A script step could not be resolved against the screen."""


def _select(obs: Observation, sel: Any) -> UiNode:
    if isinstance(sel, str):
        sel = {"text": sel}
    if not isinstance(sel, dict) or not set(sel) <= set(_SELECTOR_KEYS):
        raise ScriptError(f"bad selector {sel!r}")
    if "after" in sel:
        anchor = obs.find(text=str(sel["after"]))
        follower = obs.node(anchor.ref + 1) if anchor else None
        if follower is None:
            raise ScriptError(f"nothing after {sel['after']!r} on screen")
        return follower
    node = obs.find(**{k: str(v) for k, v in sel.items()})
    if node is None:
        raise ScriptError(f"no element {sel} on screen")
    return node


def _fill(text: str, obs: Observation, ctx: TaskContext) -> str:
    def value(m: re.Match[str]) -> str:
        key = m.group(1)
        if key == "marker":
            return ctx.task.marker or ""
        kind, _, arg = key.partition(":")
        node = _select(obs, {"resource_id": arg} if kind == "read" or kind.startswith("time+") else {"after": arg})
        shown = node.text or node.desc
        if not kind.startswith("time+"):
            return shown
        clock = re.fullmatch(r"([01]?[0-9]|2[0-3]):([0-5][0-9])", shown.strip())
        if clock is None:
            raise ScriptError(f"{arg} shows {shown!r}, not a time HH:MM")
        minutes = (int(clock.group(1)) * 60 + int(clock.group(2)) + int(kind[5:])) % (24 * 60)
        return f"{minutes // 60:02d}:{minutes % 60:02d}"

    return _VALUE.sub(value, text)


class ScriptedPolicy:
    """Plays the script of the current task (one call per step, ids `s1`, `s2`…); gives up when it runs out.

    A task without a script cannot be driven at all: `begin` raises `PolicyUnavailable`.
    """

    name = "scripted"
    wants_screenshots = False

    def __init__(self, scripts: dict[str, Script] | None = None) -> None:
        self.scripts = load_scripts() if scripts is None else scripts
        self._ctx: TaskContext | None = None
        self._screen: Observation | None = None
        self._steps: list[dict[str, JsonValue]] = []
        self._next = 0

    def has_script(self, task_id: str) -> bool:
        """Whether there is a script for this task (the executor skips tasks without one)."""
        return task_id in self.scripts

    def begin(self, brief: PhoneBrief, hooks: LoopHooks) -> None:
        """Load the task's script (a script makes no model steps, so `hooks` has nothing to hear)."""
        self._ctx, self._screen = brief.ctx, brief.screen
        script = self.scripts.get(brief.ctx.task.id)
        self._steps = list(script.steps) if script else []
        self._next = 0
        if not self._steps:
            # Not the agent's failure: the demo data has no script for this task.
            raise PolicyUnavailable(f"no script for task {brief.ctx.task.id}")

    def step(self, step: int, feedback: Sequence[Feedback]) -> Step:
        """The next scripted call, resolved against the screen the last call left (or the same screen)."""
        assert self._ctx is not None and self._screen is not None, "begin() first"
        obs = self._screen = screen_now(feedback, self._screen)
        name, arguments = self._call(obs)
        return Step(calls=[ToolCall(id=f"s{step}", name=name, arguments_json=arguments)])

    def _call(self, obs: Observation) -> tuple[str, str]:
        if self._next >= len(self._steps):
            return _give_up("script ended without finishing the task")
        step = self._steps[self._next]
        self._next += 1
        if len(step) != 1:
            return _give_up(f"script step {self._next} must have exactly one tool: {step}")
        tool, raw = next(iter(step.items()))
        try:
            if tool == "raw" and isinstance(raw, dict):
                # Verbatim, malformed or not: the lane judges the call as it would a model's.
                return str(raw.get("tool", "")), str(raw.get("arguments", ""))
            return tool, json.dumps(self._resolve(tool, raw, obs), ensure_ascii=False)
        except ScriptError as exc:
            return _give_up(f"script step {self._next} ({tool}): {exc}")

    def _resolve(self, tool: str, raw: Any, obs: Observation) -> dict[str, Any]:
        assert self._ctx is not None
        if raw is None:
            return {}
        if tool in ("tap", "long_press") and not (isinstance(raw, dict) and ("ref" in raw or "x" in raw)):
            sel = raw.get("at") if isinstance(raw, dict) else raw
            return {"ref": _select(obs, sel).ref}
        if not isinstance(raw, dict):
            raw = {"text": raw} if tool in ("answer", "type") else {"reason": raw} if tool != "ask_user" else {
                "question": raw}
        out: dict[str, Any] = {}
        for key, value in raw.items():
            if key == "into":
                out["ref"] = _select(obs, value).ref
            elif isinstance(value, str):
                out[key] = _fill(value, obs, self._ctx)
            else:
                out[key] = value
        return out


def _give_up(reason: str) -> tuple[str, str]:
    return "give_up", json.dumps({"reason": reason}, ensure_ascii=False)
