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
