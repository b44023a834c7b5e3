"""Builders for host-agent and scoring tests: tasks, evidence, synthetic hierarchies."""

from __future__ import annotations

from typing import Any

from farm.scoring.evidence import Evidence, ScreenRead
from farm.taskset.model import Task


def make_task(**fields: Any) -> Task:
    """A valid read task; keyword arguments (snake_case or camelCase) override fields."""
    data: dict[str, Any] = {
        "id": "t-read",
        "goal": "look something up",
        "category": "read",
        "partition": "tune",
        "expect": "succeeded",
        "checks": [],
        "max_steps": 20,
        "timeout_sec": 120,
    }
    data.update(fields)
    return Task.model_validate(data)


def make_evidence(*screens: str, **fields: Any) -> Evidence:
    """Evidence whose screen reads are `screens` (in order); fields override the rest."""
    reads = [ScreenRead(step=i, text=s) for i, s in enumerate(screens)]
    data: dict[str, Any] = {"end": "answer", "screen_reads": reads}
    data.update(fields)
    return Evidence.model_validate(data)


def node(text: str = "", *, cls: str = "android.widget.TextView", rid: str = "", desc: str = "",
         bounds: str = "[0,0][100,50]", clickable: bool = False, children: str = "", **flags: str) -> str:
    """One `<node>` element in uiautomator dump format."""
    attrs = {
        "index": "0", "text": text, "resource-id": rid, "class": cls, "package": "com.example",
        "content-desc": desc, "checkable": "false", "checked": "false",
        "clickable": "true" if clickable else "false", "enabled": "true", "focusable": "false",
        "focused": "false", "scrollable": "false", "long-clickable": "false", "password": "false",
        "selected": "false", "visible-to-user": "true", "bounds": bounds,
    }
    attrs.update({k.replace("_", "-"): v for k, v in flags.items()})
    rendered = " ".join(f'{k}="{_esc(v)}"' for k, v in attrs.items())
    return f"<node {rendered}>{children}</node>" if children else f"<node {rendered} />"


def _esc(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def hierarchy(*nodes: str) -> str:
    """A full dump wrapping `nodes` in a root frame."""
    root = node(cls="android.widget.FrameLayout", bounds="[0,0][1080,2400]", children="".join(nodes))
    return f"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\r\n<hierarchy rotation=\"0\">{root}</hierarchy>"


# --- virtual phone ---------------------------------------------------------------------------------
# Capability → package on the default virtual phone (the lane resolves these through intents).
SIM_APPS = {
    "calculator": "com.android.calculator2",
    "settings": "com.android.settings",
    "clock": "com.android.deskclock",
    "contacts": "com.android.contacts",
    "calendar": "com.android.calendar",
    "files": "com.android.documentsui",
    "notes": "dev.agentfarm.notes",
}


def host_phone(sim: Any) -> Any:
    """A host_agent Phone connected to a virtual phone through the private adb server."""
    import adbutils

    from host_agent.phone import Phone

    return Phone.connect(adbutils.AdbClient(port=sim.adb_port).device(sim.serial))


def installed(sim: Any) -> list[str]:
    """Packages installed on a virtual phone."""
    return [p.name for p in sim.profile.packages]


def task_spec(task_id: str, phone: Any, run: str = "r1") -> Any:
    """A task of the repository's task set resolved for the virtual phone (probes read from it)."""
    from farm.taskset.loader import default_tasks_root, load_taskset
    from farm.taskset.placeholders import resolve_task, substitute
    from farm.taskset.probes import load_catalogue, split_key
    from host_agent.runner import TaskSpec

    loaded = next(t for t in load_taskset(default_tasks_root()) if t.task.id == task_id)
    catalogue = load_catalogue()
    probes: dict[str, str] = {}
    for key in loaded.task.probes_before:
        name, param = split_key(key)
        spec = catalogue[name]
        probes[key] = spec.parse(phone.shell(spec.command(param)))
    task = resolve_task(loaded.task, apps=SIM_APPS, probes=probes, run=run)
    markers = [task.marker] if task.marker else []
    marker = substitute(loaded.task.marker, apps=SIM_APPS, probes=probes, run=run) if loaded.task.marker else None
    assert marker == task.marker
    return TaskSpec(task=task, directory=loaded.directory, apps=SIM_APPS, probes=probes, markers=markers)


# --- model stub ------------------------------------------------------------------------------------
def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def latest_screen(body: dict[str, Any]) -> str:
    """The last screen listing the agent sent to the model in a request body (either API)."""
    screens = [s for s in _strings(body.get("messages", [])) if "Screen now:" in s]
    return screens[-1].split("Screen now:", 1)[1] if screens else ""


def ref_of(screen: str, label: str) -> int:
    """The ref of the first element whose text is exactly `label` on a screen listing."""
    import re

    match = re.search(rf'^\[(\d+)\] \S+ "{re.escape(label)}"', screen, re.MULTILINE)
    assert match, f"{label!r} not on screen:\n{screen}"
    return int(match.group(1))


def screen_reading_model(plan: list[tuple[str, Any]]) -> Any:
    """A stub responder that plays `plan` like a model reading the screen: ("tap", "7") taps the
    element labelled 7 by its ref in the latest screen; other steps send their arguments as given."""
    from farm.llm.stub import StubReply

    steps = iter(plan)

    def respond(body: dict[str, Any]) -> StubReply:
        tool, args = next(steps)
        if tool == "tap" and isinstance(args, str):
            args = {"ref": ref_of(latest_screen(body), args)}
        return StubReply(text=f"next: {tool}", tool_calls=[(tool, args)])

    return respond


CALCULATOR_PLAN: list[tuple[str, Any]] = [
    ("launch", {"capability": "calculator"}),
    *[("tap", key) for key in "123×456="],
    ("answer", {"text": "123×456 = 56,088"}),
]
"""A model's path through calculator-multiply (answer as the screen shows it)."""
