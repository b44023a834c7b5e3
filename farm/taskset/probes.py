"""The probe catalogue: named, whitelisted, read-only queries of a phone, declared as data.

Each `probes/<name>.yaml` gives an argv list (never a shell string; the executor quotes each
argument when it has to go through `adb shell`) and a parser. The loader refuses unknown keys,
regexes without a `value` group, and any argv outside the read-only allow-list below.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from farm.errors import FarmError
from farm.yaml_strict import strict_load

PARAM_TOKEN = "{param}"
# Program → allowed argument prefixes (None: any arguments). Everything here only reads.
ALLOWED_PROGRAMS: dict[str, tuple[tuple[str, ...], ...] | None] = {
    "getprop": None,
    "settings": (("get",), ("list",)),
    "date": None,
    "ls": None,
    "dumpsys": None,
    "pm": (("list",), ("path",), ("dump",)),
    "cmd": (("package", "list"), ("package", "query-activities"), ("package", "resolve-activity")),
    "wm": (("size",), ("density",)),
}
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class ProbeParser(BaseModel):
    """How the probe's output becomes one string value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["regex", "strip", "int", "lines"] = "strip"
    """`regex`: the named group `value` of the first match; `strip`: the trimmed output;
    `int`: an integer; `lines`: non-empty lines, trimmed, joined by newline."""
    regex: str | None = None
    """Pattern for `kind: regex`, with a named group `value` (searched, multi-line)."""

    @model_validator(mode="after")
    def _regex_ok(self) -> ProbeParser:
        if self.kind == "regex":
            if not self.regex:
                raise ValueError("kind regex needs `regex`")
            try:
                compiled = re.compile(self.regex, re.MULTILINE)
            except re.error as exc:
                raise ValueError(f"regex does not compile: {exc}") from exc
            if "value" not in compiled.groupindex:
                raise ValueError("regex needs a named group (?P<value>…)")
        elif self.regex is not None:
            raise ValueError(f"`regex` is only for kind regex, not {self.kind}")
        return self


class ProbeSpec(BaseModel):
    """One catalogue probe."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Name used in `probesBefore` and `{probe:<name>}`; equals the file name."""
    description: str = Field(min_length=1)
    """What the probe reads, for people."""
    argv: list[str] = Field(min_length=1)
    """Program and arguments; `{param}` marks where the parameter goes (parameterised probes)."""
    parser: ProbeParser = Field(default_factory=ProbeParser)
    """How the output becomes the value."""
    param_pattern: str | None = None
    """Full-match regex a parameter must satisfy (required when argv has `{param}`)."""

    @field_validator("name")
    @classmethod
    def _name_ok(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError("probe name must be lower_snake_case")
        return value

    @field_validator("argv")
    @classmethod
    def _allowed(cls, argv: list[str]) -> list[str]:
        program, args = argv[0], argv[1:]
        if program not in ALLOWED_PROGRAMS:
            raise ValueError(f"program {program!r} is not allowed (allowed: {', '.join(ALLOWED_PROGRAMS)})")
        prefixes = ALLOWED_PROGRAMS[program]
        if prefixes is not None and not any(tuple(args[: len(p)]) == p for p in prefixes):
            shapes = " | ".join(" ".join((program, *p)) for p in prefixes)
            raise ValueError(f"{program} is only allowed as: {shapes}")
        if program == "date" and any(not a.startswith("+") for a in args):
            raise ValueError("date only takes a +FORMAT argument (anything else could set the clock)")
        if program == "getprop" and len(args) > 1:
            raise ValueError("getprop takes at most one property name")
        if program == "wm" and len(args) != 1:
            raise ValueError("wm size|density takes no further argument (one would change the display)")
        return argv

    @model_validator(mode="after")
    def _param_ok(self) -> ProbeSpec:
        if self.parameterised and not self.param_pattern:
            raise ValueError("a probe with {param} in argv needs `param_pattern`")
        if not self.parameterised and self.param_pattern:
            raise ValueError("`param_pattern` without {param} in argv")
        if self.param_pattern:
            try:
                re.compile(self.param_pattern)
            except re.error as exc:
                raise ValueError(f"param_pattern does not compile: {exc}") from exc
        return self

    @property
    def parameterised(self) -> bool:
        """Whether the probe takes a parameter (`{probe:<name>:<param>}`)."""
        return any(PARAM_TOKEN in a for a in self.argv)

    def command(self, param: str | None = None) -> list[str]:
        """The argv to run (a list, never a shell string). ValueError on a missing/bad parameter."""
        if not self.parameterised:
            if param is not None:
                raise ValueError(f"probe {self.name} takes no parameter")
            return list(self.argv)
        if param is None:
            raise ValueError(f"probe {self.name} needs a parameter ({{probe:{self.name}:<param>}})")
        assert self.param_pattern is not None
        if not re.fullmatch(self.param_pattern, param):
            raise ValueError(f"probe {self.name}: parameter {param!r} does not match {self.param_pattern}")
        return [a.replace(PARAM_TOKEN, param) for a in self.argv]

    def parse(self, output: str) -> str:
        """The value of the probe's output; ValueError when the output does not match."""
        p = self.parser
        if p.kind == "regex":
            assert p.regex is not None
            match = re.search(p.regex, output, re.MULTILINE)
            if match is None or match.group("value") is None:
                raise ValueError(f"probe {self.name}: output does not match {p.regex!r}")
            return match.group("value").strip()
        text = output.strip()
        if p.kind == "int":
            if not re.fullmatch(r"-?\d+", text):
                raise ValueError(f"probe {self.name}: expected an integer, got {text[:60]!r}")
            return str(int(text))
        if p.kind == "lines":
            return "\n".join(line.strip() for line in output.splitlines() if line.strip())
        if not text:
            raise ValueError(f"probe {self.name}: empty output")
        return text


def default_probes_root() -> Path:
    """The repository's `probes/` directory."""
    return Path(__file__).resolve().parents[2] / "probes"


def load_probe(path: Path) -> ProbeSpec:
    """Read one probe file; FarmError naming the file and field when it is invalid."""
    try:
        raw = strict_load(path.read_text(encoding="utf-8"), path)
    except (OSError, yaml.YAMLError) as exc:
        raise FarmError(f"{path}: cannot read probe: {' '.join(str(exc).split())}") from exc
    if not isinstance(raw, dict):
        raise FarmError(f"{path}: a probe file is a mapping (name, description, argv, parser)")
    raw.setdefault("name", path.stem)
    try:
        spec = ProbeSpec.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "probe"
        msg = first["msg"].removeprefix("Value error, ")
        raise FarmError(f"{path}: {where}: {msg}", hint="see probes/README.md for the probe format") from exc
    if spec.name != path.stem:
        raise FarmError(f"{path}: name: {spec.name!r} differs from the file name", hint=f"rename to {spec.name}.yaml")
    return spec


def load_catalogue(root: Path | None = None) -> dict[str, ProbeSpec]:
    """Every probe in `root` (default: the repo's `probes/`), keyed by name."""
    base = root or default_probes_root()
    if not base.is_dir():
        raise FarmError(f"{base}: probe catalogue directory not found")
    return {spec.name: spec for spec in (load_probe(p) for p in sorted(base.glob("*.yaml")))}


def split_key(key: str) -> tuple[str, str | None]:
    """`name` or `name:param` → (name, param)."""
    name, _, param = key.partition(":")
    return name, param or None
