"""After the attempt the harness looks for itself: reopens apps (screen_has) and runs probes (probe_has)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from farm.scoring.evidence import Evidence, FreshLook
from farm.taskset.model import ProbeHas, ScreenHas, Task
from host_agent.phone import Phone

MAX_PAGES = 4
"""Pages the harness scrolls through in a fresh look (long lists hide older entries)."""
_NOT_AN_APP = ("com.android.launcher3", "com.android.systemui", "com.google.android.apps.nexuslauncher")


def fresh_look(phone: Phone, package: str, *, installed: Iterable[str] = (), pages: int = MAX_PAGES) -> FreshLook:
    """Force-stop and relaunch `package`, read it and the pages below; PhoneError propagates."""
    known = set(installed)
    if known and package not in known:
        return FreshLook(package=package, error="not installed")
    phone.stop(package)
    phone.launch(package)
    obs = phone.read()
    if obs.package and obs.package != package:
        return FreshLook(package=package, text=obs.text, error=f"{package} did not come to the front ({obs.package})")
    texts, last = [obs.text], obs.digest
    for _ in range(pages - 1):
        phone.swipe(*_scroll_points(phone.size()))
        page = phone.read()
        if page.digest == last or page.package != package:
            break
        texts.append(page.text)
        last = page.digest
    return FreshLook(package=package, text="\n".join(texts))


def _scroll_points(size: tuple[int, int]) -> tuple[int, int, int, int]:
    w, h = size
    return w // 2, int(h * 0.75), w // 2, int(h * 0.3)


def app_choices(task: Task, evidence: Evidence, alternatives: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Resolved capability package → the handler of that capability the agent opened last, when it differs.

    Seed 003: after the run, prefer the app the agent actually opened over the one resolved before it.
    """
    choices: dict[str, str] = {}
    for check in task.checks:
        if not isinstance(check, ScreenHas) or check.package_name not in alternatives:
            continue
        handlers = alternatives[check.package_name]
        used = [p for p in reversed(evidence.packages_used) if p in handlers]
        if used and used[0] != check.package_name:
            choices[check.package_name] = used[0]
    return choices


def look_targets(task: Task, evidence: Evidence) -> list[str]:
    """Packages the screen_has checks need; an unresolved `{app:…}` means the apps the agent opened."""
    targets: list[str] = []
    for check in task.checks:
        if not isinstance(check, ScreenHas):
            continue
        if check.package_name.startswith("{app:"):
            used = [p for p in reversed(evidence.packages_used) if p not in _NOT_AN_APP]
            targets.extend(p for p in used if p not in targets)
        else:
            package = evidence.app_choices.get(check.package_name, check.package_name)
            if package not in targets:
                targets.append(package)
    return targets


def probes_after(task: Task, phone: Phone, catalogue: Mapping[str, object] | None = None) -> dict[str, str]:
    """Run the probes named by probe_has checks; raw output per key (`name` or `name:param`)."""
    keys = [c.probe for c in task.checks if isinstance(c, ProbeHas)]
    if not keys:
        return {}
    from farm.taskset.probes import ProbeSpec, load_catalogue, split_key

    specs = catalogue if catalogue is not None else load_catalogue()
    outputs: dict[str, str] = {}
    for key in keys:
        name, param = split_key(key)
        spec = specs.get(name)
        if not isinstance(spec, ProbeSpec):
            continue
        try:
            argv = spec.command(param)
        except ValueError:
            continue
        outputs[key] = phone.shell(argv)
    return outputs


def verify(
    task: Task, evidence: Evidence, phone: Phone, *, installed: Iterable[str] = (),
    alternatives: Mapping[str, Sequence[str]] | None = None,
) -> Evidence:
    """Evidence completed with the harness's own looks; unchanged for an infrastructure error."""
    if evidence.end == "error":
        return evidence
    evidence = evidence.model_copy(update={"app_choices": app_choices(task, evidence, alternatives or {})})
    known = list(installed)
    looks = [fresh_look(phone, p, installed=known) for p in look_targets(task, evidence)]
    for check in task.checks:
        # A look the agent never opened an app for still leaves a trace: the check names it.
        if isinstance(check, ScreenHas) and check.package_name.startswith("{app:") and not looks:
            looks.append(FreshLook(package=check.package_name, error="the agent opened no app to look in"))
    from host_agent.state_probes import keys_after, read_state

    after = keys_after(task)
    state = read_state(phone.shell, after) if after else {}
    return evidence.model_copy(update={"fresh_looks": looks, "probes_after": probes_after(task, phone),
                                       "state_after": state})
