"""The probe catalogue: named, whitelisted, read-only queries of a phone, declared as data.

Each `probes/<name>.yaml` gives an argv list (never a shell string; the executor quotes each
argument when it has to go through `adb shell`) and a parser. The loader refuses unknown keys,
regexes without a `value` group, and any argv outside the read-only allow-list below; `command`
checks the argv again once the parameter is in it.

State probes (`parser: {kind: rows, format: …}`) read what apps stored — contacts, alarms, volumes,
files — as rows of fields (farm.android.state_parsers); their value is the canonical JSON text of
the rows (`rows_value`), decoded with `probe_rows`. When the phone refuses (a provider the shell may
not read, a missing file, a service this build lacks), `parse` raises `ProbeRefused`: a note about
the phone, never a verdict on the task.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, TypeVar, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from farm.android import state_parsers
from farm.errors import FarmError
from farm.yaml_strict import strict_load

SpecT = TypeVar("SpecT", bound=BaseModel)
PARAM_TOKEN = "{param}"
SETTINGS_NAMESPACES = ("global", "secure", "system")
"""The `settings` tables a probe may read."""
MAX_HEAD_BYTES = 65_536
"""Most bytes `head -c N` may read from a file."""
MAX_TEXT_CHARS = MAX_HEAD_BYTES
"""Most characters a `text` parser keeps (the output of `head -c 65536`)."""
ALLOWED_PROGRAMS: dict[str, tuple[str, ...]] = {
    "getprop": ("getprop [PROPERTY]",),
    "settings": ("settings get global|secure|system KEY", "settings list global|secure|system"),
    "date": ("date [+FORMAT]",),
    "ls": ("ls [-l|-la|-al|-a|-1] [/ABSOLUTE/PATH]",),
    "dumpsys": ("dumpsys battery|alarm|audio", "dumpsys notification [--noredact]", "dumpsys package [PACKAGE]"),
    "pm": ("pm list packages [-s|-3|-e|-d|-f|-i|-u|-U|--show-versioncode]… [FILTER]", "pm path PACKAGE",
           "pm dump PACKAGE"),
    "cmd": ("cmd package list|query-activities|resolve-activity …", "cmd uimode night", "cmd notification list"),
    "wm": ("wm size", "wm density"),
    "content": ("content query --uri content://… [--projection COL:COL…] [--where WHERE] [--sort ORDER]",),
    "stat": (f"stat -c '{state_parsers.STAT_FORMAT}' /ABSOLUTE/PATH",),
    "head": (f"head -c N /ABSOLUTE/PATH (1 ≤ N ≤ {MAX_HEAD_BYTES})",),
}
"""Program → the argument shapes a probe may give it. Everything here only reads; each program's shape is
checked exactly by `argv_refusal` (a shape that would write — `settings put`, `content insert`,
`cmd uimode night yes`, `dumpsys battery set` — is refused)."""
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_PACKAGE = r"[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)+"
_SETTING_KEY = r"[A-Za-z0-9_.]+"
_CONTENT_URI = r"content://[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]*)*"
_PM_LIST_FLAGS = ("-s", "-3", "-e", "-d", "-f", "-i", "-u", "-U", "--show-versioncode")
_LS_FLAGS = ("-l", "-la", "-al", "-a", "-1")
_CONTENT_OPTIONS = ("--uri", "--projection", "--where", "--sort")
_CMD_PACKAGE_READS = ("list", "query-activities", "resolve-activity")

RowFormat = Literal["content_query", "dumpsys_alarm", "dumpsys_audio", "dumpsys_package", "dumpsys_notification",
                    "ls_long", "stat", "settings_list", "pm_packages"]
"""A row parser of farm.android.state_parsers (`parse_rows`)."""
ROW_FORMAT_PROGRAM: dict[str, str] = {
    "content_query": "content", "dumpsys_alarm": "dumpsys", "dumpsys_audio": "dumpsys",
    "dumpsys_package": "dumpsys", "dumpsys_notification": "dumpsys", "ls_long": "ls", "stat": "stat",
    "settings_list": "settings", "pm_packages": "pm",
}
"""Row format → the program whose output it reads (a probe's argv[0] must be that program)."""


class ProbeRefused(ValueError):
    """The phone refused the probe (permission denial, unknown provider or service, missing file) rather than
    answering it. The message is the phone's first line (at most 300 characters). It is a note about the phone
    for the caller, never a task failure."""


def rows_value(rows: Sequence[dict[str, str]]) -> str:
    """The canonical JSON text of rows: the value of a `rows` probe (same rows → same text)."""
    return json.dumps(list(rows), ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def probe_rows(value: str) -> list[dict[str, str]]:
    """The rows a `rows` probe's value holds; ValueError when it is not a JSON list of string → string maps."""
    try:
        rows = json.loads(value)
    except (TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a rows value (JSON): {exc}") from exc
    if not isinstance(rows, list) or not all(
            isinstance(r, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in r.items())
            for r in rows):
        raise ValueError("not a rows value: expected a JSON list of objects with string values")
    return rows


def _arg_checker(template: bool) -> tuple[Callable[[str, str], bool], Callable[[str], bool]]:
    """(value_ok, path_ok) for argv checks. In a template (`template`), a token that is exactly `{param}` fills
    any value position (its `param_pattern` and the check of the filled argv constrain it); elsewhere `{param}`
    reads as `x`. A literal or flag position never takes `{param}`."""

    def sample(token: str) -> str:
        return token.replace(PARAM_TOKEN, "x") if template else token

    def value_ok(token: str, pattern: str) -> bool:
        return (template and token == PARAM_TOKEN) or re.fullmatch(pattern, sample(token)) is not None

    def path_ok(token: str) -> bool:
        path = sample(token)
        return path.startswith("/") and ".." not in path.split("/") and "\0" not in path

    return value_ok, path_ok


def argv_refusal(argv: Sequence[str], *, template: bool = False) -> str | None:
    """Why `argv` is outside the read-only allow-list (ALLOWED_PROGRAMS), or None when it is allowed.
    `template`: argv may still hold `{param}` (a catalogue file) rather than the parameter itself."""
    if not argv:
        return "argv is empty"
    program, args = argv[0], list(argv[1:])
    if program not in ALLOWED_PROGRAMS:
        return f"program {program!r} is not allowed (allowed: {', '.join(ALLOWED_PROGRAMS)})"
    value_ok, path_ok = _arg_checker(template)
    shapes = " | ".join(ALLOWED_PROGRAMS[program])
    ok: bool
    if program == "getprop":
        if len(args) > 1:
            return "getprop takes at most one property name"
        ok = not args or not args[0].startswith("-")
    elif program == "settings":
        ok = (len(args) == 3 and args[0] == "get" and args[1] in SETTINGS_NAMESPACES
              and value_ok(args[2], _SETTING_KEY)) or (
            len(args) == 2 and args[0] == "list" and args[1] in SETTINGS_NAMESPACES)
    elif program == "date":
        if any(not a.startswith("+") for a in args):
            return "date only takes a +FORMAT argument (anything else could set the clock)"
        ok = len(args) <= 1
    elif program == "ls":
        flags = [a for a in args if a.startswith("-")]
        paths = [a for a in args if not a.startswith("-")]
        ok = len(flags) <= 1 and all(f in _LS_FLAGS for f in flags) and len(paths) <= 1 and all(map(path_ok, paths))
    elif program == "dumpsys":
        service, rest = (args[0], args[1:]) if args else ("", [])
        ok = (service in ("battery", "alarm", "audio") and not rest) or (
            service == "notification" and rest in ([], ["--noredact"])) or (
            service == "package" and len(rest) <= 1 and all(value_ok(a, _PACKAGE) for a in rest))
    elif program == "pm":
        if args[:2] == ["list", "packages"]:
            rest = args[2:]
            filters = [a for a in rest if not a.startswith("-")]
            ok = all(a in _PM_LIST_FLAGS for a in rest if a.startswith("-")) and len(filters) <= 1 and all(
                value_ok(a, r"[A-Za-z0-9_.]+") for a in filters)
        else:
            ok = len(args) == 2 and args[0] in ("path", "dump") and value_ok(args[1], _PACKAGE)
    elif program == "cmd":
        ok = (len(args) >= 2 and args[0] == "package" and args[1] in _CMD_PACKAGE_READS) or args in (
            ["uimode", "night"], ["notification", "list"])
        if args[:2] == ["uimode", "night"] and len(args) > 2:
            return "cmd uimode night takes no further argument (one would set the night mode)"
    elif program == "wm":
        if len(args) != 1:
            return "wm size|density takes no further argument (one would change the display)"
        ok = args[0] in ("size", "density")
    elif program == "content":
        ok = _content_query_ok(args, value_ok)
    elif program == "stat":
        ok = len(args) == 3 and args[:2] == ["-c", state_parsers.STAT_FORMAT] and path_ok(args[2])
    else:  # head
        ok = (len(args) == 3 and args[0] == "-c" and re.fullmatch(r"[1-9][0-9]{0,5}", args[1]) is not None
              and int(args[1]) <= MAX_HEAD_BYTES and path_ok(args[2]))
    return None if ok else f"{program} is only allowed as: {shapes}"


def _content_query_ok(args: list[str], value_ok: Callable[[str, str], bool]) -> bool:
    """`query` then `--option value` pairs, each option at most once, `--uri content://…` required; no `{param}`
    (a parameter never reaches a provider's where clause)."""
    if not args or args[0] != "query" or len(args) % 2 == 0 or any(PARAM_TOKEN in a for a in args):
        return False
    pairs = list(zip(args[1::2], args[2::2], strict=True))
    options = [flag for flag, _ in pairs]
    if any(o not in _CONTENT_OPTIONS for o in options) or len(set(options)) != len(options):
        return False
    values = dict(pairs)
    return "--uri" in values and value_ok(values["--uri"], _CONTENT_URI) and not any(
        v.startswith("--") for v in values.values())


class ProbeParser(BaseModel):
    """How the probe's output becomes one string value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["regex", "strip", "int", "lines", "text", "rows"] = "strip"
    """`regex`: the named group `value` of the first match; `strip`: the trimmed output;
    `int`: an integer; `lines`: non-empty lines, trimmed, joined by newline; `text`: the output as
    printed (a file's content: BOM dropped, CRLF read as LF, at most MAX_TEXT_CHARS); `rows`: the
    rows `format` reads, as canonical JSON text (`rows_value`, decoded by `probe_rows`)."""
    regex: str | None = None
    """Pattern for `kind: regex`, with a named group `value` (searched, multi-line)."""
    format: RowFormat | None = None
    """For `kind: rows` (and only then): the parser of farm.android.state_parsers that reads the output."""

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
        if self.kind == "rows" and self.format is None:
            raise ValueError(f"kind rows needs `format` (one of: {', '.join(get_args(RowFormat))})")
        if self.kind != "rows" and self.format is not None:
            raise ValueError(f"`format` is only for kind rows, not {self.kind}")
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
        reason = argv_refusal(argv, template=True)
        if reason is not None:
            raise ValueError(reason)
        return argv

    @model_validator(mode="after")
    def _format_fits_program(self) -> ProbeSpec:
        fmt = self.parser.format
        if fmt is not None and self.argv[0] != ROW_FORMAT_PROGRAM[fmt]:
            raise ValueError(f"format {fmt} reads the output of {ROW_FORMAT_PROGRAM[fmt]}, not {self.argv[0]}")
        return self

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
        argv = [a.replace(PARAM_TOKEN, param) for a in self.argv]
        reason = argv_refusal(argv)
        if reason is not None:
            raise ValueError(f"probe {self.name}: parameter {param!r} gives a refused command: {reason}")
        return argv

    def parse(self, output: str) -> str:
        """The value of the probe's output. ProbeRefused when the output is the phone's refusal (any kind);
        ValueError when the output does not match."""
        refused = state_parsers.refusal(output, self.argv[0])
        if refused is not None:
            raise ProbeRefused(refused)
        output = output.removeprefix("\ufeff")  # a BOM is never part of a value
        p = self.parser
        if p.kind == "rows":
            assert p.format is not None
            try:
                return rows_value(state_parsers.parse_rows(p.format, output, self.argv))
            except ValueError as exc:
                raise ValueError(f"probe {self.name}: {exc}") from exc
        if p.kind == "text":
            return output.replace("\r\n", "\n")[:MAX_TEXT_CHARS]
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


def load_named_spec(path: Path, model: type[SpecT], what: str, shape: str, hint: str) -> SpecT:
    """Read one catalogue file (`<name>.yaml` holding a mapping) as `model`; FarmError naming the file and the
    field when it is invalid, or when a `name` inside differs from the file name."""
    try:
        raw = strict_load(path.read_text(encoding="utf-8"), path)
    except (OSError, yaml.YAMLError) as exc:
        raise FarmError(f"{path}: cannot read {what}: {' '.join(str(exc).split())}") from exc
    if not isinstance(raw, dict):
        raise FarmError(f"{path}: a {what} file is a mapping ({shape})")
    raw.setdefault("name", path.stem)
    try:
        spec = model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or what
        msg = first["msg"].removeprefix("Value error, ")
        raise FarmError(f"{path}: {where}: {msg}", hint=hint) from exc
    name = getattr(spec, "name", path.stem)
    if name != path.stem:
        raise FarmError(f"{path}: name: {name!r} differs from the file name", hint=f"rename to {name}.yaml")
    return spec


def load_probe(path: Path) -> ProbeSpec:
    """Read one probe file; FarmError naming the file and field when it is invalid."""
    return load_named_spec(path, ProbeSpec, "probe", "name, description, argv, parser",
                           "see probes/README.md for the probe format")


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
