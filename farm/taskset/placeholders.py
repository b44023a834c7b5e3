"""Placeholders in task text: `{app:<capability>}`, `{probe:<name>[:<param>]}`, `{run}`.

Only text starting with `{app:`, `{probe:` or exactly `{run}` is a placeholder, so regex
quantifiers such as `{2,3}` in `answer_regex` patterns are left alone; a started placeholder
that does not complete the grammar is an error, never silently kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

from pydantic import BaseModel

if TYPE_CHECKING:
    from farm.taskset.model import Task

NAME = r"[a-z][a-z0-9_]*"
PARAM = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_PLACEHOLDER = re.compile(
    rf"\{{run\}}|\{{app:(?P<app>{NAME})\}}|\{{probe:(?P<probe>{NAME})(?::(?P<param>{PARAM}))?\}}"
)
_STARTED = re.compile(r"\{(?:app|probe):")

Kind = Literal["app", "probe", "run"]


class PlaceholderError(ValueError):
    """A placeholder is malformed or has no value."""


@dataclass(frozen=True)
class Placeholder:
    """One placeholder occurrence."""

    kind: Kind
    name: str
    """Capability or probe name; empty for `{run}`."""
    param: str | None
    """Probe parameter (`{probe:package_version:com.x}` → `com.x`)."""
    start: int
    end: int

    @property
    def key(self) -> str:
        """The lookup key: capability, `name` or `name:param` for probes, `run`."""
        if self.kind == "run":
            return "run"
        return f"{self.name}:{self.param}" if self.param else self.name

    @property
    def text(self) -> str:
        """The placeholder as written."""
        if self.kind == "run":
            return "{run}"
        return f"{{{self.kind}:{self.key}}}"


def find(text: str) -> list[Placeholder]:
    """Every placeholder in `text`, in order; PlaceholderError on a malformed one."""
    found: list[Placeholder] = []
    for started in _STARTED.finditer(text):
        match = _PLACEHOLDER.match(text, started.start())
        if match is None:
            end = text.find("}", started.start())
            bad = text[started.start() : end + 1] if end >= 0 else text[started.start() :]
            raise PlaceholderError(
                f"malformed placeholder {bad!r}: use {{app:<capability>}} or {{probe:<name>[:<param>]}}"
            )
    for match in _PLACEHOLDER.finditer(text):
        if match.group("app"):
            found.append(Placeholder("app", match.group("app"), None, match.start(), match.end()))
        elif match.group("probe"):
            found.append(
                Placeholder("probe", match.group("probe"), match.group("param"), match.start(), match.end())
            )
        else:
            found.append(Placeholder("run", "", None, match.start(), match.end()))
    return found


def _replace(text: str, value_of: Callable[[Placeholder], str]) -> str:
    parts: list[str] = []
    pos = 0
    for ph in find(text):
        parts.append(text[pos : ph.start])
        parts.append(value_of(ph))
        pos = ph.end
    parts.append(text[pos:])
    return "".join(parts)


def substitute(
    text: str,
    *,
    apps: Mapping[str, str],
    probes: Mapping[str, str],
    run: str,
    escape: Callable[[str], str] | None = None,
) -> str:
    """Fill every placeholder; probe keys are `name` or `name:param`.

    `escape` is applied to each inserted value (e.g. `re.escape` for regex patterns).
    Raises PlaceholderError when a value is missing.
    """

    def value_of(ph: Placeholder) -> str:
        if ph.kind == "run":
            value = run
        elif ph.kind == "app":
            if ph.name not in apps:
                raise PlaceholderError(f"no app resolved for capability {ph.name!r}")
            value = apps[ph.name]
        else:
            if ph.key not in probes:
                raise PlaceholderError(f"no value for probe {ph.key!r} (list it in probesBefore)")
            value = probes[ph.key]
        return escape(value) if escape else value

    return _replace(text, value_of)


def substitute_all(text: str, value: str) -> str:
    """Replace every placeholder by one fixed value (to validate a pattern before resolution)."""
    return _replace(text, lambda _ph: value)


C = TypeVar("C", bound=BaseModel)


def resolve_task(
    task: Task, *, apps: Mapping[str, str], probes: Mapping[str, str], run: str
) -> Task:
    """A copy of `task` with every placeholder in goal, apps, checks and marker filled.

    Values inserted into `answer_regex` patterns are regex-escaped.
    """

    def fill(text: str, escape: Callable[[str], str] | None = None) -> str:
        return substitute(text, apps=apps, probes=probes, run=run, escape=escape)

    def fill_check(check: C) -> C:
        # Values inserted into a regex (answer_regex patterns, a state check's `matches`) are escaped.
        regex = getattr(check, "type", None) == "answer_regex" or getattr(check, "op", None) == "matches"
        updates: dict[str, object] = {}
        for name, value in vars(check).items():
            if name == "type":
                continue
            if isinstance(value, str):
                updates[name] = fill(value, re.escape if regex and name in ("pattern", "value") else None)
            elif isinstance(value, dict):
                updates[name] = {k: fill(v) if isinstance(v, str) else v for k, v in value.items()}
        return check.model_copy(update=updates)

    return task.model_copy(
        update={
            "goal": fill(task.goal),
            "apps": [fill(a) for a in task.apps],
            "marker": fill(task.marker) if task.marker is not None else None,
            "checks": [fill_check(c) for c in task.checks],
            "goal_state": [fill_check(c) for c in task.goal_state],
            "probes_after": [fill(k) for k in task.probes_after],
        }
    )
