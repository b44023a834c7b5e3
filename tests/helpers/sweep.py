"""Builders for sweep tests: a task set the scripted host policy can run, extra adb servers, phone profiles."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from farm.android.options import AgentOptions, HostSettings
from farm.sim.launcher import SimFarm, SimPhone, free_port, kill_adb_server, start_adb_server
from farm.sim.profile import PhoneProfile, default_profile
from farm.sweep.request import SweepRequest

REPO = Path(__file__).resolve().parents[2]
SCRIPTED = ("read/system/calculator-multiply", "read/system/settings-android-version", "write/clock-alarm-7am",
            "read/shopping/shop-search-headphones", "impossible/settings-upgrade-android-99")
"""Shipped tasks with a script for the scripted host policy (fixtures/scripts/), one needing the shop."""


def scripted_tasks(root: Path, names: tuple[str, ...] = SCRIPTED) -> Path:
    """Copy shipped tasks (`directory/id`) into `root` and return it."""
    for name in names:
        target = root / f"{name}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / "tasks" / f"{name}.json", target)
    return root


def without_shop() -> PhoneProfile:
    """The default phone with the Shop app not installed."""
    p = default_profile()
    return p.model_copy(update={"packages": [pkg for pkg in p.packages if pkg.name != "dev.agentfarm.shop"]})


def low_battery() -> PhoneProfile:
    """A phone the health gate refuses (5 %, not charging)."""
    return default_profile().model_copy(update={"battery_level": 5, "charging": False})


@contextmanager
def extra_adb_server() -> Iterator[int]:
    """Another real adb server on a free loopback port, killed afterwards."""
    port = free_port()
    start_adb_server(port)
    try:
        yield port
    finally:
        kill_adb_server(port)


@contextmanager
def phones_on(port: int, n: int, profile: PhoneProfile | None = None) -> Iterator[list[SimPhone]]:
    """`n` virtual phones attached to the adb server on `port`, stopped afterwards."""
    farm = SimFarm(port)
    try:
        yield farm.add(n, profile=profile)
    finally:
        farm.stop()


def farm_yaml(path: Path, *ports: int) -> Path:
    """A farm.yaml listing adb servers on these loopback ports."""
    servers = "\n".join(f"  - {{host: 127.0.0.1, port: {p}}}" for p in ports)
    path.write_text(f"adb_servers:\n{servers}\n" if ports else "{}\n", encoding="utf-8")
    return path


def sweep_request(tmp: Path, tasks: Path, **kw: object) -> SweepRequest:
    """A host-executor, scripted-policy sweep over `tasks` into `tmp/runs` (quiet)."""
    base: dict[str, object] = {
        "agent": AgentOptions(split="all"), "executor": "host", "host": HostSettings(policy="scripted"),
        "tasks_dir": tasks, "runs_dir": tmp / "runs", "show_progress": False, "recheck_s": 0.5,
    }
    base.update(kw)
    return SweepRequest(**base)  # type: ignore[arg-type]
