"""What a run measured, as its manifest records it: the settings of each lane that change what its numbers mean,
and how the report counts its holdout pool. `farm.report.since` pairs a run only with an earlier one of equal
setup (like with like); a comparison of two runs says what each measured and where they differ.

Settings (`SETTINGS`, read from each lane's `detail`):

- android: executor, split, set (the `--set` prefix), kind (sweep or run), spread, repeats, profile; from the
  request the lane recorded, the host executor's policy, model, provider and reasoning effort, and a task
  selection beyond one `--set` (`-k`, `--exclude`, `--only-failed-from`);
- web (seed 001): policy, model, provider, suiteVersion (results of another suite version are not comparable),
  backends, virtualPhone;
- webvoyager: judge;
- desktop: suite.

The android lane records no task-set version: each task's content hash is in the manifest's `tasks` instead, and
a task whose file changed between two runs is another task (`changed_tasks`; `since` leaves it out of the pairs).

Holdout policy: `none planned` when the run plans no holdout unit — its android lane's `planned_units` has no
`holdout` pool, or (a lane that did not record them: a pulled run) its split is neither holdout nor all; else
`counted` or `hidden`, as the report counts holdout (`include_holdout`; by default `holdout_counted`: counted where
the run planned them). A run and the previous one are comparable only under one policy: this report's for this
run, the previous run's own report's for it (so the number the since line starts from is the one that run showed).

App versions (`PhoneEntry.apps`: the agent app's and the tasks' apps', read before each phone's first unit) are no
setting: the farm does not choose them, and a nightly run after an app update is still like with like for `since`.
What changed is said beside the numbers instead: `app_version_changes` compares two runs' phones, the one
computation `farm history` (night over night, per phone) and a comparison of two runs (`SideSetup`) both show.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from farm.manifest import AppVersion, LaneEntry, Manifest, PhoneEntry
from farm.report.headline import HOLDOUT_SPLITS, planned_units
from farm.report.paired import HoldoutPolicy, LaneSetup, RunSetup, Setting, SettingDiff

SETTINGS = ("executor", "policy", "model", "provider", "reasoning_effort", "judge", "split", "set", "selection",
            "suite", "suiteVersion", "backends", "virtualPhone", "kind", "spread", "repeats", "profile")
"""Lane settings that change what a run measures, in the order they are shown: two runs that differ in one are
not like with like."""
_HOST = ("policy", "model", "provider", "reasoning_effort")
"""The host executor's settings, read from the android lane's recorded request (`request.host`)."""
UNSET = "unset"
"""A setting's value in a difference when that run does not record it."""


def _text(value: JsonValue) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)


def _selection_text(selection: JsonValue) -> str | None:
    """A recorded task selection as its flags (`--set a -k 'x'`); None when it says nothing beyond the pool."""
    from pydantic import ValidationError

    from farm.taskset.select import TaskSelection

    if not selection:
        return None
    try:
        return TaskSelection.model_validate(selection).describe() or None
    except ValidationError:
        return _text(selection)  # an odd record is still a setting to compare, shown as recorded


def lane_setup(lane: LaneEntry) -> LaneSetup:
    """A lane's settings (`SETTINGS`) from its manifest entry; unset ones are left out."""
    found: dict[str, str] = {k: _text(v) for k, v in lane.detail.items() if k in SETTINGS and v is not None}
    request = lane.detail.get("request")
    if lane.lane == "android" and isinstance(request, dict):
        host = request.get("host")
        if isinstance(host, dict):
            found |= {k: _text(v) for k in _HOST if (v := host.get(k)) is not None}
        selection = _selection_text(request.get("selection"))
        if selection is not None:
            found["selection"] = selection
    return LaneSetup(lane=lane.lane, settings=[Setting(name=k, value=found[k]) for k in SETTINGS if k in found])


def _plans_holdout(run_dir: Path, manifest: Manifest) -> bool:
    every, without = planned_units(run_dir, include_holdout=True), planned_units(run_dir, include_holdout=False)
    if every is not None and without is not None:
        return every > without
    return any(lane.lane == "android" and lane.detail.get("split") in HOLDOUT_SPLITS for lane in manifest.lanes)


def holdout_policy(run_dir: Path, manifest: Manifest, *, include_holdout: bool) -> HoldoutPolicy:
    """How a report that counts holdout (`include_holdout`) or hides it counts this run's holdout pool."""
    if not _plans_holdout(run_dir, manifest):
        return "none planned"
    return "counted" if include_holdout else "hidden"


def run_setup(run_dir: Path, manifest: Manifest | None, *, include_holdout: bool, hidden_holdout: int = 0) -> RunSetup:
    """What the run measured, under a report that counts holdout or hides it (a run without a manifest records
    no lane and plans no holdout)."""
    if manifest is None:
        return RunSetup(run=run_dir.name, holdout="none planned", hidden_holdout=hidden_holdout)
    policy = holdout_policy(run_dir, manifest, include_holdout=include_holdout)
    return RunSetup(
        run=manifest.run_id, label=manifest.label, holdout=policy,
        lanes=sorted((lane_setup(lane) for lane in manifest.lanes), key=lambda s: s.lane),
        hidden_holdout=hidden_holdout if policy == "hidden" else 0,
    )


def comparable(a: RunSetup, b: RunSetup) -> bool:
    """Like with like: the same label, the same lanes with the same settings, the same holdout policy."""
    return not differences(a, b)


def differences(a: RunSetup, b: RunSetup) -> list[SettingDiff]:
    """Where A and B differ: label, lanes, each common lane's settings, holdout policy (in that order)."""
    out: list[SettingDiff] = []
    if a.label != b.label:
        out.append(SettingDiff(lane="", name="label", a=a.label or UNSET, b=b.label or UNSET))
    lanes_a, lanes_b = {s.lane: s for s in a.lanes}, {s.lane: s for s in b.lanes}
    if list(lanes_a) != list(lanes_b):
        out.append(SettingDiff(lane="", name="lanes", a=", ".join(lanes_a) or "none", b=", ".join(lanes_b) or "none"))
    for lane in (name for name in lanes_a if name in lanes_b):
        va = {s.name: s.value for s in lanes_a[lane].settings}
        vb = {s.name: s.value for s in lanes_b[lane].settings}
        out += [SettingDiff(lane=lane, name=k, a=va.get(k, UNSET), b=vb.get(k, UNSET))
                for k in SETTINGS if va.get(k) != vb.get(k)]
    if a.holdout != b.holdout:
        out.append(SettingDiff(lane="", name="holdout", a=a.holdout, b=b.holdout))
    return out


def changed_tasks(a: Manifest, b: Manifest) -> set[str]:
    """Tasks selected in both runs whose file content differs between them (another version of the task)."""
    hashes = {t.id: t.sha256 for t in a.tasks}
    return {t.id for t in b.tasks if t.id in hashes and hashes[t.id] != t.sha256}


def holdout_text(s: RunSetup) -> str:
    """`holdout counted`, `holdout hidden (N units)` or `no holdout planned`."""
    if s.holdout == "none planned":
        return "no holdout planned"
    return f"holdout hidden ({s.hidden_holdout} units)" if s.holdout == "hidden" and s.hidden_holdout else \
        f"holdout {s.holdout}"


def lanes_text(s: RunSetup) -> str:
    """`lane android: executor instrument, split tune; lane web: policy model` (`no lane recorded` when none)."""
    parts = [f"lane {lane.lane}" + (": " + ", ".join(f"{x.name} {x.value}" for x in lane.settings)
                                     if lane.settings else "") for lane in s.lanes]
    return "; ".join(parts) or "no lane recorded"


def setup_text(s: RunSetup) -> str:
    """The run's setup in words: label, lanes with their settings, holdout policy."""
    label = "no label" if s.label is None else f"label {s.label}"
    return f"{label}; {lanes_text(s)}; {holdout_text(s)}"


def differences_text(diffs: list[SettingDiff]) -> str:
    """`A and B differ in executor (instrument vs host): this is an A/B of that setting.`"""
    several = len({d.lane for d in diffs if d.lane}) > 1

    def one(d: SettingDiff) -> str:
        return f"{d.lane + ' ' if several and d.lane else ''}{d.name} ({d.a} vs {d.b})"

    names = [one(d) for d in diffs]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    that = "that setting" if len(diffs) == 1 else "those settings"
    return f"A and B differ in {listed}: this is an A/B of {that}."


class SideSetup(RunSetup):
    """One run of a comparison: what it measured, and its phones with the app versions each had."""

    phones: list[PhoneEntry] = Field(default_factory=list)
    """The phones its manifest lists (`PhoneEntry.apps`: versions read before each one's first unit); what a
    comparison's `app_version_changes` reads."""


class AppVersionChange(BaseModel):
    """An app whose version on one phone differs between two runs (an earlier night and a later one, or A and B)."""

    model_config = ConfigDict(extra="forbid")

    phone: str
    """The phone's stable name (`farm.phone_name`)."""
    serial: str
    """Its serial: the phones of the two runs are paired by it."""
    package: str
    """The app."""
    before: AppVersion
    """Its version in the earlier run (A)."""
    after: AppVersion
    """Its version in the later run (B)."""

    def versions(self) -> tuple[str, str]:
        """(before, after) in words: the version names, with the codes when the names alone do not tell them apart
        (`8.0.50 (code 2540)`), `code N` when a phone gave no name, `unknown` when it gave neither."""
        codes = self.before.version_name == self.after.version_name

        def one(v: AppVersion) -> str:
            if v.version_name is None:
                return "unknown" if v.version_code is None else f"code {v.version_code}"
            return f"{v.version_name} (code {v.version_code})" if codes and v.version_code is not None \
                else v.version_name

        return one(self.before), one(self.after)

    def text(self) -> str:
        """`com.tencent.mm 8.0.50 → 8.0.51`."""
        before, after = self.versions()
        return f"{self.package} {before} → {after}"


def app_version_changes(before: Sequence[PhoneEntry], after: Sequence[PhoneEntry],
                        names: Mapping[str, str]) -> list[AppVersionChange]:
    """The apps whose version differs between two runs' phones (`Manifest.phones` of the earlier run, of the later
    one), by phone name then package. Phones pair by serial (`names`: serial → stable name; the serial when it has
    none); only a phone that recorded versions in both, and only a package both recorded (one not installed, or not
    touched by that run's tasks, is absent from a list: nothing is said of it), name (or code) compared."""
    earlier = {p.serial: p for p in before if p.apps}
    out: list[AppVersionChange] = []
    for phone in after:
        was = earlier.get(phone.serial)
        if was is None or not phone.apps:
            continue
        old = {a.package: a for a in was.apps}
        out += [AppVersionChange(phone=names.get(phone.serial, phone.serial), serial=phone.serial, package=a.package,
                                 before=old[a.package], after=a)
                for a in phone.apps if a.package in old and old[a.package] != a]
    return sorted(out, key=lambda c: (c.phone, c.package))


def app_changes_by_phone(changes: Sequence[AppVersionChange]) -> list[str]:
    """`Pixel 8 · S1: com.tencent.mm 8.0.50 → 8.0.51, dev.agentfarm.simagent 0.9.0 → 1.0.0`, one line per phone (in
    the order given)."""
    by_phone: dict[str, list[str]] = {}
    for c in changes:
        by_phone.setdefault(c.phone, []).append(c.text())
    return [f"{phone}: {', '.join(texts)}" for phone, texts in by_phone.items()]
