"""Per-phone task resolution: `{app:…}` through intents, `requires`, probes, `{run}`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from farm.android.devices import shell
from farm.android.executor import ResolvedTask
from farm.config import FarmConfig, InstrumentProfile
from farm.taskset import placeholders
from farm.taskset.capabilities import Capability, load_capabilities
from farm.taskset.loader import LoadedTask
from farm.taskset.probes import ProbeSpec, split_key

if TYPE_CHECKING:
    from adbutils import AdbDevice

_COMPONENT = re.compile(r"^\s*([A-Za-z][\w.]*)/[\w.$]+\s*$", re.MULTILINE)
_SIGNED_IN_PREFIXES = ("signedIn:", "login:", "site:")


@dataclass
class PhoneFacts:
    """What resolution needs to know about one phone (read once, cached)."""

    installed: set[str]
    signed_in: set[str]
    capabilities: dict[str, str | None] = field(default_factory=dict)
    handlers: dict[str, list[str]] = field(default_factory=dict)
    """Capability → every package handling its intent (preferred first)."""
    probes: dict[str, str] = field(default_factory=dict)
    probe_errors: dict[str, str] = field(default_factory=dict)


@dataclass
class Prepared:
    """One phone's tasks: resolved ones to run, and skipped ones with their reason."""

    tasks: list[ResolvedTask] = field(default_factory=list)
    skipped: list[tuple[LoadedTask, str]] = field(default_factory=list)


def installed_packages(device: AdbDevice) -> set[str]:
    """Packages installed on the phone (`pm list packages`)."""
    out = shell(device, ["pm", "list", "packages"])
    return {line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("package:")}


def signed_in(device: AdbDevice, serial: str, cfg: FarmConfig, profile: InstrumentProfile) -> set[str]:
    """Packages/sites signed in on this phone: farm.yaml `signed_in` plus the app's `eval/logged-in.txt`."""
    names = set(cfg.signed_in.get(serial, []))
    out = shell(device, ["cat", profile.logged_in_file()])
    if "No such file" not in out:
        names |= {ln.strip() for ln in out.splitlines() if ln.strip() and not ln.strip().startswith("#")}
    return names


def capability_handlers(device: AdbDevice, cap: Capability) -> list[str]:
    """Every package handling the capability's standard intent, the preferred one first ([] when none)."""
    if cap.action is None:
        return []
    argv = ["cmd", "package", "query-activities", "--brief", "-a", cap.action]
    if cap.category:
        argv += ["-c", cap.category]
    found = list(dict.fromkeys(m.group(1) for m in _COMPONENT.finditer(shell(device, argv))))
    if not found:
        argv[2] = "resolve-activity"
        match = _COMPONENT.search(shell(device, argv))
        found = [match.group(1)] if match else []
    return found


class Resolver:
    """Resolves tasks for one phone, caching capability lookups and probe values."""

    def __init__(
        self,
        device: AdbDevice,
        facts: PhoneFacts,
        catalogue: dict[str, ProbeSpec],
        *,
        run: str,
        allow_irreversible: bool,
    ) -> None:
        self.device = device
        self.facts = facts
        self.catalogue = catalogue
        self.run = run
        self.allow_irreversible = allow_irreversible
        self.table = load_capabilities()

    def capability(self, name: str) -> str | None:
        """Package for a capability on this phone (cached)."""
        handlers = self.handlers(name)
        return handlers[0] if handlers else None

    def handlers(self, name: str) -> list[str]:
        """Every package handling a capability on this phone, preferred first (cached)."""
        if name not in self.facts.handlers:
            cap = self.table.get(name)
            self.facts.handlers[name] = capability_handlers(self.device, cap) if cap else []
            self.facts.capabilities[name] = self.facts.handlers[name][0] if self.facts.handlers[name] else None
        return self.facts.handlers[name]

    def probe(self, key: str) -> str:
        """Value of a catalogue probe (cached); ValueError when it cannot be read."""
        if key in self.facts.probes:
            return self.facts.probes[key]
        if key in self.facts.probe_errors:
            raise ValueError(self.facts.probe_errors[key])
        name, param = split_key(key)
        try:
            spec = self.catalogue.get(name)
            if spec is None:
                raise ValueError(f"probe {name!r} is not in the catalogue")
            value = spec.parse(shell(self.device, spec.command(param)))
        except ValueError as exc:
            self.facts.probe_errors[key] = str(exc)
            raise
        self.facts.probes[key] = value
        return value

    def skip_reason(self, loaded: LoadedTask) -> str | None:
        """Why the task cannot run on this phone, or None."""
        task = loaded.task
        if task.category == "irreversible" and not self.allow_irreversible:
            return "irreversible task not allowed (pass --allow-irreversible)"
        for req in task.requires:
            kind, _, name = req.partition(":")
            if kind == "installed" and name not in self.facts.installed:
                return f"not installed: {name}"
            if kind == "app":
                if name not in self.table:
                    return f"capability unknown: {name}"
                if self.table[name].standard and self.capability(name) is None:
                    return f"capability missing: {name} (no app handles its intent)"
            if req.startswith(_SIGNED_IN_PREFIXES) and name not in self.facts.signed_in:
                return f"not signed in: {name} (未登录)"
        return None

    def resolve(self, loaded: LoadedTask) -> ResolvedTask | str:
        """The resolved task, or the reason it is skipped."""
        reason = self.skip_reason(loaded)
        if reason:
            return reason
        task = loaded.task
        texts = [task.goal, *task.apps, *(t for _, t in task.check_texts())]
        texts += [task.marker] if task.marker else []
        apps: dict[str, str] = {}
        alternatives: dict[str, list[str]] = {}
        for text in texts:
            for ph in placeholders.find(text):
                if ph.kind != "app" or ph.name in apps:
                    continue
                cap = self.table.get(ph.name)
                if cap is None:
                    return f"capability unknown: {ph.name}"
                if not cap.standard:
                    # No standard intent: the agent picks the app; the placeholder stays for it.
                    apps[ph.name] = ph.text
                    continue
                package = self.capability(ph.name)
                if package is None:
                    return f"capability missing: {ph.name} (no app handles its intent)"
                apps[ph.name] = package
                if len(self.handlers(ph.name)) > 1:
                    alternatives[package] = self.handlers(ph.name)
        probes: dict[str, str] = {}
        for key in task.probes_before:
            try:
                probes[key] = self.probe(key)
            except ValueError as exc:
                return f"probe {key} failed: {exc}"
        try:
            resolved = placeholders.resolve_task(task, apps=apps, probes=probes, run=self.run)
        except placeholders.PlaceholderError as exc:
            return f"cannot resolve placeholders: {exc}"
        markers = [resolved.marker] if resolved.marker else []
        return ResolvedTask(resolved, loaded.directory, loaded.sha256, apps, probes, markers, alternatives)


def prepare(resolver: Resolver, tasks: list[LoadedTask]) -> Prepared:
    """Resolve every task for the resolver's phone."""
    out = Prepared()
    for loaded in tasks:
        got = resolver.resolve(loaded)
        if isinstance(got, str):
            out.skipped.append((loaded, got))
        else:
            out.tasks.append(got)
    return out
