"""Setup actions: the few whitelisted commands that put a phone back into a task's start state.

A task whose goal is stated as phone state (`goalState`) is not run when the goal already holds — the attempt
would prove nothing. When the task also lists `setup` actions, the harness runs them instead, reads the goal
again, and runs the agent only once the goal no longer holds (farm.sweep.start_state).

Each `probes/setup/<name>.yaml` gives an argv (never a shell string) and, for a parameterised action, a
`param_pattern` whose named groups fill `{group}` tokens of the argv. Unlike probes these commands change the
phone, so the allow-list below is narrow: radios and modes a user toggles in Settings, and stream volumes —
nothing that deletes data, installs, or writes an arbitrary setting. The argv is checked when the file loads and
again once a parameter is in it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from farm.taskset.probes import default_probes_root, load_named_spec, split_key

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_TOKEN = re.compile(r"\{([a-z_]+)\}")
_SMALL_INT = r"[0-9]{1,2}"
ALLOWED_SHAPES: tuple[tuple[str, tuple[str | re.Pattern[str], ...]], ...] = (
    ("svc wifi enable|disable", ("svc", "wifi", re.compile("enable|disable"))),
    ("svc bluetooth enable|disable", ("svc", "bluetooth", re.compile("enable|disable"))),
    ("cmd connectivity airplane-mode enable|disable",
     ("cmd", "connectivity", "airplane-mode", re.compile("enable|disable"))),
    ("cmd uimode night yes|no|auto", ("cmd", "uimode", "night", re.compile("yes|no|auto"))),
    ("cmd media_session volume --stream N --set N",
     ("cmd", "media_session", "volume", "--stream", re.compile(_SMALL_INT), "--set", re.compile(_SMALL_INT))),
)
"""Every command a setup action may run (shape for people, then one matcher per argument: a literal or a
full-match pattern). `svc` has switched radios since Android 7 (bluetooth since 12); `cmd connectivity
airplane-mode` exists since Android 11, `cmd media_session volume` since Android 11 (`media volume` before),
`cmd uimode night` since Android 8."""


def setup_refusal(argv: Sequence[str], *, template: bool = False) -> str | None:
    """Why `argv` is not an allowed setup command (None when it is). With `template`, a `{group}` token stands
    for any value its pattern will allow and is checked again once filled."""
    for _shape, matchers in ALLOWED_SHAPES:
        if len(matchers) != len(argv):
            continue
        if all((template and _TOKEN.fullmatch(arg) is not None and not isinstance(m, str))
               or (m == arg if isinstance(m, str) else m.fullmatch(arg) is not None)
               for m, arg in zip(matchers, argv, strict=True)):
            return None
    return "a setup action may only run: " + "; ".join(shape for shape, _ in ALLOWED_SHAPES)


class SetupSpec(BaseModel):
    """One setup action (`probes/setup/<name>.yaml`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Name used in a task's `setup` list (`bluetooth_off`, `volume:4:3`); equals the file name."""
    description: str = Field(min_length=1)
    """What the action changes on the phone and on which Android versions it works, for people."""
    argv: list[str] = Field(min_length=1)
    """Program and arguments; `{group}` tokens are filled from the named groups of `param_pattern`."""
    param_pattern: str | None = None
    """Full-match regex with a named group per `{group}` token of argv (required when argv has tokens)."""

    @field_validator("name")
    @classmethod
    def _name_ok(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError("setup action name must be lower_snake_case")
        return value

    @field_validator("argv")
    @classmethod
    def _allowed(cls, argv: list[str]) -> list[str]:
        reason = setup_refusal(argv, template=True)
        if reason is not None:
            raise ValueError(reason)
        return argv

    @model_validator(mode="after")
    def _param_ok(self) -> SetupSpec:
        tokens = {t for a in self.argv for t in _TOKEN.findall(a)}
        if not tokens:
            if self.param_pattern is not None:
                raise ValueError("`param_pattern` without a {group} token in argv")
            return self
        if self.param_pattern is None:
            raise ValueError("an action with {group} tokens in argv needs `param_pattern`")
        try:
            groups = set(re.compile(self.param_pattern).groupindex)
        except re.error as exc:
            raise ValueError(f"param_pattern does not compile: {exc}") from exc
        if groups != tokens:
            raise ValueError(f"param_pattern's named groups {sorted(groups)} differ from argv's tokens "
                             f"{sorted(tokens)}")
        return self

    @property
    def parameterised(self) -> bool:
        """Whether the action takes a parameter (`volume:4:3`)."""
        return self.param_pattern is not None

    def command(self, param: str | None = None) -> list[str]:
        """The argv to run (a list, never a shell string). ValueError on a missing or bad parameter."""
        if not self.parameterised:
            if param is not None:
                raise ValueError(f"setup action {self.name} takes no parameter")
            return list(self.argv)
        assert self.param_pattern is not None
        if param is None:
            raise ValueError(f"setup action {self.name} needs a parameter ({self.name}:<param>)")
        match = re.fullmatch(self.param_pattern, param)
        if match is None:
            raise ValueError(f"setup action {self.name}: parameter {param!r} does not match {self.param_pattern}")
        values = match.groupdict()
        argv = [_TOKEN.sub(lambda m: values[m.group(1)] or "", a) for a in self.argv]
        reason = setup_refusal(argv)
        if reason is not None:
            raise ValueError(f"setup action {self.name}: parameter {param!r} gives a refused command: {reason}")
        return argv


def default_setup_root() -> Path:
    """The repository's `probes/setup/` directory."""
    return default_probes_root() / "setup"


def load_setup(path: Path) -> SetupSpec:
    """Read one setup action file; FarmError naming the file and field when it is invalid."""
    return load_named_spec(path, SetupSpec, "setup action", "description, argv, param_pattern",
                           "see probes/README.md (setup actions)")


def load_setup_catalogue(root: Path | None = None) -> dict[str, SetupSpec]:
    """Every setup action in `root` (default: the repo's `probes/setup/`), keyed by name."""
    base = root or default_setup_root()
    if not base.is_dir():
        return {}
    return {spec.name: spec for spec in (load_setup(p) for p in sorted(base.glob("*.yaml")))}


def setup_command(key: str, catalogue: dict[str, SetupSpec] | None = None) -> list[str]:
    """The argv of a task's `setup` entry (`name` or `name:param`). ValueError naming what is wrong."""
    specs = catalogue if catalogue is not None else load_setup_catalogue()
    name, param = split_key(key)
    spec = specs.get(name)
    if spec is None:
        raise ValueError(f"unknown setup action {name!r} (known: {', '.join(sorted(specs)) or 'none'})")
    return spec.command(param)
