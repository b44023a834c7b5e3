"""Builders for tests of the virtual phone's apps, UI, u2 server and simulated instrumentation."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from farm.sim.apps.base import Node
from farm.sim.instrument import run_instrument
from farm.sim.phone import PhoneState
from farm.sim.profile import PhoneProfile, default_profile
from farm.sim.ui import UiDevice

AGENT_COMPONENT = "dev.agentfarm.simagent.test/androidx.test.runner.AndroidJUnitRunner"
EVAL_CLASS = "dev.agentfarm.simagent.eval.EvalRunTest"


def make_phone(tmp_path: Path, profile: PhoneProfile | None = None) -> PhoneState:
    """A phone state on a file system under tmp_path (no transport)."""
    root = tmp_path / "phone"
    root.mkdir(parents=True, exist_ok=True)
    return PhoneState(profile or default_profile(), root=root)


def nodes(ui: UiDevice) -> list[Node]:
    """Every node on screen, in document order."""
    return [n for root in ui.roots() for n in root.walk()]


def find(ui: UiDevice, *, text: str | None = None, rid: str | None = None, desc: str | None = None) -> Node:
    """The first node with the given text / resource-id / content-desc; AssertionError when absent."""
    for n in nodes(ui):
        if (text is None or n.text == text) and (rid is None or n.rid == rid) and (desc is None or n.desc == desc):
            return n
    raise AssertionError(f"no node text={text!r} rid={rid!r} desc={desc!r} on {ui.foreground()}")


def tap(ui: UiDevice, **kw: str) -> None:
    """Tap the centre of a node found like `find`."""
    left, top, right, bottom = find(ui, **kw).bounds
    assert ui.tap((left + right) / 2, (top + bottom) / 2)


def texts(ui: UiDevice) -> list[str]:
    """All non-empty texts on screen."""
    return [n.text for n in nodes(ui) if n.text]


def tap_keys(ui: UiDevice, keys: str) -> None:
    """Tap calculator-style keys, one character each, by their text."""
    for ch in keys:
        tap(ui, text=ch)


def open_app(tmp_path: Path, package: str, profile: PhoneProfile | None = None) -> UiDevice:
    """A fresh phone's UI with `package` in the foreground."""
    ui = make_phone(tmp_path, profile).ui
    assert ui.launch(package)
    return ui


def texts_of(ui: UiDevice, rid: str) -> list[str]:
    """Texts of every node with resource-id `rid`, in document order."""
    return [n.text for n in nodes(ui) if n.rid == rid]


def long_press(ui: UiDevice, **kw: str) -> None:
    """Long-press the centre of a node found like `find`."""
    left, top, right, bottom = find(ui, **kw).bounds
    assert ui.long_press((left + right) / 2, (top + bottom) / 2)


def calculator_after(tmp_path: Path, keys: str) -> UiDevice:
    """A fresh phone's Calculator after tapping `keys` (see `tap_keys`)."""
    ui = open_app(tmp_path, "com.android.calculator2")
    tap_keys(ui, keys)
    return ui


def relaunch(ui: UiDevice, package: str) -> None:
    """Force-stop `package` and start it again (only saved data survives)."""
    ui.force_stop(package)
    assert ui.launch(package)


def fill_new(ui: UiDevice, new_desc: str, first: str, more: dict[str, str] | None = None, save: bool = True) -> None:
    """Tap the `new_desc` button, type `first` into the focused field, then each rid → text, then 保存."""
    tap(ui, desc=new_desc)
    ui.input_text(first)
    for rid, text in (more or {}).items():
        tap(ui, rid=rid)
        ui.input_text(text)
    if save:
        tap(ui, text="保存")


# --- instrumentation ------------------------------------------------------------------------------


def task(tid: str, directory: str = "read/system", partition: str = "tune", **extra: Any) -> dict[str, Any]:
    """A bundled task object as the harness pushes it."""
    base: dict[str, Any] = {
        "id": tid, "goal": f"goal of {tid}", "apps": ["com.android.settings"], "category": directory,
        "partition": partition, "expect": "confirmation" if directory == "irreversible" else "succeeded",
        "checks": [{"type": "answer_contains", "text": ["x"]}], "maxSteps": 20, "timeoutSec": 300,
    }
    base.update(extra)
    return base


def push_bundle(phone: PhoneState, run: str, tasks: list[dict[str, Any]],
                device_path: str = "/data/local/tmp/eval-tasks.json") -> str:
    """Write a task bundle onto the phone; returns its device path."""
    phone.host_path(device_path).write_text(
        json.dumps({"bundleVersion": 1, "run": run, "tasks": tasks}, ensure_ascii=False), encoding="utf-8")
    return device_path


def instrument_argv(run: str, bundle: str | None, *extra: str, component: str = AGENT_COMPONENT) -> list[str]:
    """`am instrument -w -r -e class … -e evalRun run [-e evalTasks bundle] extra… component`."""
    argv = ["-w", "-r", "-e", "class", EVAL_CLASS, "-e", "evalRun", run]
    if bundle:
        argv += ["-e", "evalTasks", bundle]
    return [*argv, *extra, component]


def run_to_text(phone: PhoneState, argv: list[str], timeout: float = 60) -> str:
    """The whole output of a simulated `am instrument` run."""

    async def collect() -> str:
        out = bytearray()
        async for chunk in run_instrument(phone, argv):
            out += chunk
        return out.decode("utf-8")

    return asyncio.run(asyncio.wait_for(collect(), timeout))


@dataclass
class Bundle:
    """One parsed status or result bundle: key → value and its code."""

    kind: str
    values: dict[str, str] = field(default_factory=dict)
    code: int | None = None


def parse_status(text: str) -> list[Bundle]:
    """Split `-r` output into bundles ending at a *_CODE line; unprefixed lines continue the last value."""
    out: list[Bundle] = []
    cur: Bundle | None = None
    last_key: str | None = None
    for line in text.split("\n"):
        for prefix, kind in (("INSTRUMENTATION_STATUS: ", "status"), ("INSTRUMENTATION_RESULT: ", "result")):
            if line.startswith(prefix):
                if cur is None or cur.kind != kind:
                    cur = Bundle(kind)
                key, _, value = line[len(prefix):].partition("=")
                cur.values[key] = value
                last_key = key
                break
        else:
            if line.startswith("INSTRUMENTATION_STATUS_CODE: ") or line.startswith("INSTRUMENTATION_CODE: "):
                code = int(line.split(": ", 1)[1])
                kind = "status" if "STATUS" in line else "result"
                if cur is None or cur.kind != kind:
                    cur = Bundle(kind)
                cur.code = code
                out.append(cur)
                cur, last_key = None, None
            elif cur is not None and last_key is not None:
                cur.values[last_key] += "\n" + line
    if cur is not None:
        out.append(cur)
    return out


def eval_dir(phone: PhoneState, run: str) -> Path:
    """Host directory of the agent's `eval/<run>/`."""
    return phone.host_path(phone.external_files_dir(phone.profile.agent.package)) / "eval" / run


def scores(phone: PhoneState, run: str) -> list[dict[str, Any]]:
    """Parsed scores.jsonl of a run."""
    lines = (eval_dir(phone, run) / "scores.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]
