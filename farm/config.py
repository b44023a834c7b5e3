"""`farm.yaml`: adb servers, health thresholds, instrument profiles, sign-ins, model, pricing."""

from __future__ import annotations

import math
import os
import string
from pathlib import Path
from typing import Annotated

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from farm.android import pull_limits
from farm.disk_space import FREE_SPACE_FLOOR_MB
from farm.errors import FarmError
from farm.leases import LeaseSettings
from farm.llm.model_config import LLMConfig
from farm.results.query_limits import (
    DEFAULT_MAX_ROWS,
    DEFAULT_THREADS,
    DEFAULT_TIMEOUT_S,
    MAX_ROWS,
    MAX_THREADS,
    MAX_TIMEOUT_S,
    MIN_MEMORY_MB,
)
from farm.yaml_strict import strict_load

DEFAULT_CONFIG_NAME = "farm.yaml"
MAX_CONFIG_BYTES = 1 << 20
"""Largest farm.yaml read (1 MiB): a configuration is a page of text, not a data set."""
DEFAULT_STALL_S = 20.0
"""`stall_s` unless farm.yaml says: a link that carried nothing for this long is taken for stalled (a healthy phone
answers within a second; the app's own silence has `idle_timeout_s`)."""
MAX_STALL_S = 600.0
"""Longest `stall_s` accepted (ten minutes): past that a stall costs what the issue it prevents cost."""
MAX_SECONDS = 7 * 24 * 3600
"""Longest watchdog accepted (a week)."""
MAX_MB = 1 << 20
"""Largest size in MB accepted anywhere in farm.yaml (1 TiB)."""


def _path_text(value: str) -> str:
    if "\0" in value:
        raise ValueError("contains a NUL character")
    return value


PathText = Annotated[str, Field(min_length=1, max_length=4096), AfterValidator(_path_text)]
"""A directory named in farm.yaml: non-empty, no NUL."""


class AdbServer(BaseModel):
    """An adb server that reaches phones (local or on another farm host)."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field(default="127.0.0.1", min_length=1, max_length=253, pattern=r"^[^\s/@]+$")
    """Host name or address of the adb server."""
    port: int = Field(default=5037, ge=1, le=65535)
    """TCP port of the adb server."""

    def address(self) -> str:
        """`host:port`."""
        return f"{self.host}:{self.port}"


class HealthThresholds(BaseModel):
    """What a phone must satisfy before it runs tasks."""

    model_config = ConfigDict(extra="forbid")

    min_battery_pct: int = Field(default=20, ge=0, le=100)
    """Minimum battery level unless the phone is charging."""
    min_free_storage_mb: int = Field(default=500, ge=0, le=MAX_MB)
    """Minimum free space on /sdcard (MB)."""
    require_unlocked: bool = True
    """Wake the screen and dismiss the keyguard; a phone that stays locked fails the gate."""


class InstrumentProfile(BaseModel):
    """The agent app under test and how to start its EvalRunTest."""

    model_config = ConfigDict(extra="forbid")

    package: str
    """Agent app package (owner of the external files dir)."""
    test_package: str
    """Instrumentation (test) package."""
    runner: str = "androidx.test.runner.AndroidJUnitRunner"
    """Instrumentation runner class."""
    eval_class: str
    """The EvalRunTest class passed as `-e class`."""
    files_dir: str = "/sdcard/Android/data/{package}/files"
    """The app's external files dir; `{package}` is filled."""
    output_dir: str = "{files_dir}/eval/{run}"
    """Where the app writes `eval/<run>/`; `{files_dir}`, `{package}`, `{run}` are filled."""

    @field_validator("files_dir", "output_dir")
    @classmethod
    def _template(cls, value: str, info: ValidationInfo) -> str:
        # A placeholder the code does not fill would only fail mid-run, on a phone: refuse it at load.
        allowed = {"package"} if info.field_name == "files_dir" else {"files_dir", "package", "run"}
        try:
            names = {name for _, name, _, _ in string.Formatter().parse(value) if name is not None}
        except ValueError as exc:
            raise ValueError(f"not a valid template ({exc})") from None
        unknown = sorted(n for n in names if n not in allowed)
        if unknown:
            known = ", ".join(f"{{{a}}}" for a in sorted(allowed))
            raise ValueError(f"unknown placeholder {{{unknown[0]}}}; use {known}")
        return value

    def resolved_files_dir(self) -> str:
        """The external files dir with `{package}` filled."""
        return self.files_dir.format(package=self.package)

    def eval_dir(self, run: str) -> str:
        """The on-device `eval/<run>/` directory."""
        return self.output_dir.format(files_dir=self.resolved_files_dir(), package=self.package, run=run)

    def logged_in_file(self) -> str:
        """The on-device `eval/logged-in.txt` a person fills with signed-in packages."""
        return f"{self.resolved_files_dir()}/eval/logged-in.txt"

    def component(self) -> str:
        """`<test package>/<runner>`."""
        return f"{self.test_package}/{self.runner}"


SIM_PROFILE = InstrumentProfile(
    package="dev.agentfarm.simagent",
    test_package="dev.agentfarm.simagent.test",
    runner="androidx.test.runner.AndroidJUnitRunner",
    eval_class="dev.agentfarm.simagent.eval.EvalRunTest",
)


class Pricing(BaseModel):
    """Default token prices passed to the agent (USD per million tokens); null = unknown."""

    model_config = ConfigDict(extra="forbid")

    input_per_m: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """New input tokens."""
    output_per_m: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Output tokens."""
    cached_per_m: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Cached input tokens."""


class PullLimits(BaseModel):
    """Limits applied when pulling a phone's eval tree."""

    model_config = ConfigDict(extra="forbid")

    max_file_mb: float = Field(default=64, gt=0, le=MAX_MB, allow_inf_nan=False)
    """Largest single file accepted."""
    max_total_mb: float = Field(default=1024, gt=0, le=MAX_MB, allow_inf_nan=False)
    """Largest tree accepted."""
    max_depth: int = Field(default=pull_limits.MAX_DEPTH, ge=1, le=1000)
    """Directory levels pulled below the tree's root; deeper ones are refused and listed."""
    max_dir_entries: int = Field(default=pull_limits.MAX_DIR_ENTRIES, ge=1, le=10_000_000)
    """Entries read from one directory listing; the rest of it is refused."""
    max_tree_entries: int = Field(default=pull_limits.MAX_TREE_ENTRIES, ge=1, le=10_000_000)
    """Entries listed in the whole tree; directories not yet listed past it are refused."""
    max_lines: int = Field(default=pull_limits.MAX_LINES, ge=1, le=100_000_000)
    """Lines read from one pulled scores file; the rest are counted in the run notes."""
    max_line_bytes: int = Field(default=pull_limits.MAX_LINE_BYTES, ge=1024, le=1 << 30)
    """Longest scores line read; a longer one becomes an error record naming it."""
    max_records_per_unit: int = Field(default=pull_limits.MAX_RECORDS_PER_UNIT, ge=1, le=10_000)
    """Scores lines taken for one task from one file; the rest are counted."""
    max_records: int = Field(default=pull_limits.MAX_RECORDS, ge=1, le=10_000_000)
    """Records built from one pull's scores file; the rest are counted."""
    max_bundle_bytes: int = Field(default=pull_limits.MAX_BUNDLE_BYTES, ge=1024, le=1 << 30)
    """Largest task bundle read back from the phone."""


class QueryLimits(BaseModel):
    """Bounds of `farm query` (each has a flag that wins over it): the records are ours, the SQL is not."""

    model_config = ConfigDict(extra="forbid")

    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    """Seconds one query may run, from the start of its SQL (`--timeout`; at most an hour)."""
    memory_mb: int | None = Field(default=None, ge=MIN_MEMORY_MB, le=MAX_MB)
    """DuckDB's memory limit in MB of 2^20 bytes (`--memory-mb`); null: 2048, or half the RAM when that is less."""
    threads: int = Field(default=DEFAULT_THREADS, ge=1, le=MAX_THREADS)
    """DuckDB's worker threads."""
    max_rows: int = Field(default=DEFAULT_MAX_ROWS, ge=1, le=MAX_ROWS)
    """Rows printed (`--max-rows`; `--all` prints every row)."""


NOTIFY_MAX_TIMEOUT_S = 300
"""Longest wait for a notifier (five minutes): the morning message must never hold the night's exit."""
_ENV_VAR = r"^[A-Za-z_][A-Za-z0-9_]*$"
# An HTTP header name (RFC 9110 token).
_HEADER_NAME = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"


def check_notify_url(value: str) -> str:
    """An http(s) URL with a host and no user-info (a credential in a URL would be logged and kept: send it as a
    header named by `headers_env`). Used for `notify.url` at load and for `notify.url_env`'s value at send."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - a port that is no number raises here, not mid-night
    except ValueError as exc:
        raise ValueError(f"not a URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"only http and https URLs are posted to, not {parts.scheme or 'a URL without a scheme'}")
    if not parts.hostname:
        raise ValueError("the URL names no host")
    if "@" in parts.netloc:
        raise ValueError("a URL with user-info holds a credential; send it with headers_env instead")
    if any(c.isspace() or ord(c) < 32 for c in value):
        raise ValueError("the URL holds whitespace or a control character")
    return value


class NotifyConfig(BaseModel):
    """Who hears of a sweep: after every `farm sweep`, its headline JSON goes to a command and/or an HTTP URL.
    A notifier that fails or times out is logged in one line and never changes the sweep's exit status."""

    model_config = ConfigDict(extra="forbid")

    command: list[Annotated[str, Field(min_length=1)]] | None = Field(default=None, min_length=1)
    """argv of a program run with no shell: the payload JSON on its stdin, and FARM_NOTIFY_PAYLOAD_FILE naming a
    file that holds it; it inherits the sweep's environment (credentials stay there, not in argv)."""
    url: Annotated[str, AfterValidator(check_notify_url)] | None = Field(default=None, max_length=2048)
    """An http(s) URL the payload is POSTed to as JSON."""
    url_env: Annotated[str, Field(pattern=_ENV_VAR)] | None = None
    """The environment variable holding the URL instead, for a URL that is itself a secret (a chat webhook):
    never written to farm.yaml, a manifest or a log."""
    headers_env: dict[Annotated[str, Field(pattern=_HEADER_NAME, max_length=100)],
                      Annotated[str, Field(pattern=_ENV_VAR)]] = Field(default_factory=dict)
    """HTTP header name → the environment variable holding its value (`Authorization: FARM_NOTIFY_TOKEN`)."""
    timeout_s: float = Field(default=30, gt=0, le=NOTIFY_MAX_TIMEOUT_S, allow_inf_nan=False)
    """Seconds each notifier may take (the command is killed, the POST abandoned, past it)."""
    regressions_listed: int = Field(default=10, ge=0, le=100)
    """Regressions named in the payload ("task on phone"); the count is always whole."""

    @field_validator("url_env")
    @classmethod
    def _one_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and info.data.get("url") is not None:
            raise ValueError("give url or url_env, not both")
        return value

    @model_validator(mode="after")
    def _somewhere(self) -> NotifyConfig:
        if self.command is None and self.url is None and self.url_env is None:
            raise ValueError("names no notifier: give command, url or url_env")
        return self


class FarmConfig(BaseModel):
    """The whole `farm.yaml`."""

    model_config = ConfigDict(extra="forbid")

    adb_servers: list[AdbServer] = Field(default_factory=list)
    """Extra adb servers besides the local one (ANDROID_ADB_SERVER_PORT or 5037)."""
    health: HealthThresholds = Field(default_factory=HealthThresholds)
    """Health gate thresholds."""
    profiles: dict[str, InstrumentProfile] = Field(default_factory=dict)
    """Instrument profiles by name; `sim` (the virtual phone's agent app) is always there."""
    default_profile: str = Field(default="sim", min_length=1)
    """Profile used when `--profile` is not given."""
    signed_in: dict[str, list[str]] = Field(default_factory=dict)
    """Serial → packages/sites a person has signed in on that phone."""
    phone_labels: dict[str, Annotated[str, Field(min_length=1, max_length=80)]] = Field(default_factory=dict)
    """Serial → the phone's name on every surface (reports, junit.xml, history, progress); a phone without one is
    `<model> · <short serial>` (`farm.phone_name`)."""
    llm: LLMConfig | None = None
    """Model used by the host executor (holds no secret: `api_key_env` names the variable)."""
    pricing: Pricing = Field(default_factory=Pricing)
    """Default token prices."""
    pull: PullLimits = Field(default_factory=PullLimits)
    """Pull limits."""
    query: QueryLimits = Field(default_factory=QueryLimits)
    """Bounds of `farm query`."""
    idle_timeout_s: float = Field(default=600, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    """Default no-output watchdog per phone (seconds, at most a week)."""
    stall_s: float = Field(default=DEFAULT_STALL_S, gt=0, le=MAX_STALL_S, allow_inf_nan=False)
    """Seconds a phone's link may carry nothing before it counts as stalled (at most 600): a pull that receives no
    byte, or a phone that does not answer a liveness check while its app is silent, for this long ends the try as an
    infrastructure error (tried again). The app's own silence is bounded by `idle_timeout_s`, not by this."""
    runs_dir: PathText = "runs"
    """Where run directories go."""
    tasks_dir: PathText = "tasks"
    """The task set root."""
    min_free_mb: float = Field(default=FREE_SPACE_FLOOR_MB, ge=0, le=MAX_MB, allow_inf_nan=False)
    """Free space (MB) a sweep or run needs on its runs directory's filesystem to start (0: no floor)."""
    notify: NotifyConfig | None = None
    """Where `farm sweep` sends its result after every sweep (a command, a URL); none by default."""
    leases: LeaseSettings = Field(default_factory=LeaseSettings)
    """Per-phone leases (`farm.leases`): where they live, shared by every controller of these phones."""

    @field_validator("llm")
    @classmethod
    def _finite_llm(cls, value: LLMConfig | None) -> LLMConfig | None:
        # LLMConfig bounds its numbers from below only: `.inf` or `.nan` would reach a timeout or a backoff.
        if value is not None:
            for name, number in value.model_dump().items():
                if isinstance(number, float) and not math.isfinite(number):
                    raise ValueError(f"{name}: Input should be a finite number")
        return value

    def all_profiles(self) -> dict[str, InstrumentProfile]:
        """Configured profiles plus the built-in `sim` profile (configured ones win)."""
        return {"sim": SIM_PROFILE, **self.profiles}

    def profile(self, name: str | None) -> tuple[str, InstrumentProfile]:
        """The named (or default) profile; FarmError when it does not exist."""
        chosen = name or self.default_profile
        profiles = self.all_profiles()
        if chosen not in profiles:
            raise FarmError(
                f"farm.yaml: profiles.{chosen}: no such instrument profile",
                hint=f"known profiles: {', '.join(sorted(profiles))}",
            )
        return chosen, profiles[chosen]


def config_file(path: Path | None) -> Path | None:
    """The farm.yaml a command reads: `path` (`--config`), else `./farm.yaml` when it exists, else None (defaults)."""
    if path is not None:
        return path
    candidate = Path(DEFAULT_CONFIG_NAME)
    return candidate if os.path.lexists(candidate) else None


def load_config(path: Path | None) -> FarmConfig:
    """Read and validate farm.yaml (`./farm.yaml` when `path` is None and it exists, else defaults)."""
    path = config_file(path)
    if path is None:
        return FarmConfig()
    if path.is_dir():
        raise FarmError(f"{path}: is a directory, not a config file", hint="pass --config FILE, or remove it")
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise FarmError(f"{path}: cannot read config ({exc.strerror or exc})", hint="pass --config FILE") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise FarmError(f"{path}: config larger than {MAX_CONFIG_BYTES >> 20} MiB", hint="see farm.example.yaml")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FarmError(f"{path}: config is not UTF-8 text (byte {exc.start})", hint="save it as UTF-8") from None
    if "\0" in text:
        raise FarmError(f"{path}: config holds a NUL byte, it is not text", hint="see farm.example.yaml")
    try:
        data = strict_load(text, path)  # a key given twice is a FarmError naming file:line and the key
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise FarmError(f"{path}:{where} invalid YAML", hint="fix the syntax") from None
    except RecursionError:
        # PyYAML builds nested collections recursively; no real farm.yaml nests more than a few levels.
        raise FarmError(f"{path}: nested too deeply", hint="see farm.example.yaml") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FarmError(f"{path}: top level must be a mapping", hint="see farm.example.yaml")
    try:
        return FarmConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise FarmError(f"{path}: {field}: {msg}", hint="see farm.example.yaml") from None
