"""What the android lane writes into its run's manifest: the phones, the planned units per pool, the lease notes,
and what it sets in a run another lane made."""

from __future__ import annotations

from collections import Counter

from pydantic import JsonValue

from farm import manifest as mf
from farm.sweep.runner import Fleet
from farm.taskset.loader import LoadedTask


def planned_units(tasks: list[LoadedTask], unit_tasks: list[str]) -> dict[str, JsonValue]:
    """Planned units per pool (`tune`, `holdout`)."""
    partition = {t.task.id: t.task.partition or "tune" for t in tasks}
    counts = Counter(partition[task_id] for task_id in unit_tasks)
    return {str(part): n for part, n in counts.items()}


def lease_notes(fleet: Fleet) -> list[str]:
    """The manifest's notes on leases: phones held by others at the start, dead holders' leases taken over."""
    return [f"{b.line()} at the start" for b in fleet.busy] + fleet.took_over


def android_lane(manifest: mf.Manifest) -> mf.LaneEntry:
    """The run's android lane entry."""
    return next(e for e in manifest.lanes if e.lane == "android")


def adopt(into: mf.Manifest, planned: mf.Manifest, *, existing: bool) -> None:
    """What the android lane sets in a run it joins: its phones, and for a run another lane made, its tasks,
    config, label and notes."""
    into.phones = planned.phones
    into.status, into.finished_at = "running", None
    if existing:
        return
    into.tasks, into.config = planned.tasks, planned.config
    into.label = into.label or planned.label
    into.notes += planned.notes


def phone_entries(fleet: Fleet, apps: dict[str, list[mf.AppVersion]] | None = None) -> list[mf.PhoneEntry]:
    """The manifest's phones: every phone the gate saw, used or left out, with its app versions (`apps`)."""
    return [
        mf.PhoneEntry(serial=h.serial, adb_server=h.server, name=h.name, model=h.model, android=h.android,
                      agent_version=h.agent_version, status="used" if h.ok else "left_out", reason=h.reason,
                      apps=(apps or {}).get(h.serial, []))
        for h in fleet.healths
    ]
