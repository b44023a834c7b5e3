"""The `farm run` options as one typed model, shared by the CLI, the lane, the sweep and the executors.

`AgentOptions` is what the agent run is asked to do (the same on every phone, whichever executor
runs it); `RunOptions` is that plus what the lane resolved for one run (profile, watchdog,
deadline); `HostSettings` is the host executor's policy and model. Each field is declared here
once: the CLI builds these models from its flags, farm.yaml's price defaults are applied by
`AgentOptions.with_defaults`, and the `am instrument -e` mapping sits next to the fields.

Importing this module must stay cheap (no adbutils, uiautomator2 or model SDK): a sweep imports it
to plan runs before any phone is reached.
"""

from __future__ import annotations

import math
import re
import time
from pathlib import Path
from typing import Annotated, Literal, TypeVar, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from farm.config import DEFAULT_STALL_S, MAX_STALL_S, FarmConfig, InstrumentProfile, Pricing
from farm.errors import FarmError
from farm.taskset.loader import SplitChoice

TakeoverChoice = Literal["cancel", "wait"]
ChannelChoice = Literal["web", "app"]
PolicyName = Literal["model", "scripted"]

_Model = TypeVar("_Model", bound=BaseModel)

_FLAG = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}=(on|off)")
FLAGS_HINT = "use none, or key=on / key=off pairs joined by commas (e.g. fastScroll=on,cache=off)"
MAX_SECONDS = 7 * 24 * 3600.0
"""Longest watchdog or deadline accepted (a week): anything longer is a typo, not a plan."""


def _eval_flags(value: str | None) -> str | None:
    # The agent app splits `evalFlags` on ',' and '=': anything else would reach it half-parsed.
    if value is None or value == "none":
        return value
    pairs = value.split(",")
    bad = next((p for p in pairs if not _FLAG.fullmatch(p)), None)
    if bad is not None:
        raise ValueError(f"{bad!r} is not key=on or key=off")
    keys = [p.split("=", 1)[0] for p in pairs]
    twice = next((k for k in keys if keys.count(k) > 1), None)
    if twice is not None:
        raise ValueError(f"{twice!r} is given twice")
    return value


EvalFlags = Annotated[str | None, AfterValidator(_eval_flags)]
"""`evalFlags`: `none` or `key=on|off` pairs joined by commas."""
Price = Annotated[float | None, Field(ge=0, allow_inf_nan=False)]
"""USD per million tokens: a finite number, 0 or more; null = unknown."""


def check_seconds(value: float | None, flag: str) -> float | None:
    """`value` if it is None or a finite number of seconds in (0, a week]; else a one-line FarmError naming `flag`."""
    if value is None:
        return None
    if not math.isfinite(value) or value <= 0 or value > MAX_SECONDS:
        raise FarmError(f"{flag} {value:g}: not a positive number of seconds",
                        hint=f"pass seconds greater than 0 and at most {MAX_SECONDS:.0f} (a week)")
    return value


class AgentOptions(BaseModel):
    """What the agent run is asked to do: the same for every phone and both executors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    split: SplitChoice = "tune"
    """Task pool selected: `tune`, `holdout` or `all`."""
    set_prefix: str | None = None
    """`--set`: task directory or id prefix (e.g. `read/system`); null = every task of the split."""
    allow_irreversible: bool = False
    """Run `irreversible` tasks (they really send, delete or order)."""
    price_in: Price = None
    """USD per million new input tokens; null = farm.yaml `pricing.input_per_m`, else unknown."""
    price_out: Price = None
    """USD per million output tokens; null = farm.yaml `pricing.output_per_m`, else unknown."""
    price_cached: Price = None
    """USD per million cached input tokens; null = farm.yaml `pricing.cached_per_m`, else unknown."""
    on_takeover: TakeoverChoice | None = None
    """What the agent does when a person takes over the phone; null = the agent's default (cancel)."""
    channel: ChannelChoice | None = None
    """Force every task through the web or the app; null = the agent chooses."""
    flags: EvalFlags = None
    """`evalFlags` value passed through to the agent app (`none` or `key=on,…`; `key=off` turns one off)."""
    learn_skills: bool = False
    """Let the agent learn skills during the run."""
    memory: bool = False
    """Let the agent keep memories during the run."""

    def with_defaults(self, pricing: Pricing) -> AgentOptions:
        """These options with farm.yaml's prices filling the ones not given (a given price always wins)."""
        return self.model_copy(update={
            "price_in": self.price_in if self.price_in is not None else pricing.input_per_m,
            "price_out": self.price_out if self.price_out is not None else pricing.output_per_m,
            "price_cached": self.price_cached if self.price_cached is not None else pricing.cached_per_m,
        })

    def instrument_extras(self, run: str, bundle_path: str, profile: InstrumentProfile) -> list[tuple[str, str]]:
        """The `-e key value` pairs of `am instrument`, in the order the agent app's EvalRunTest reads them.

        Options left at their default are not sent, so the app keeps its own default; `all` is
        the absence of `evalSplit`.
        """
        extras: list[tuple[str, str]] = [("class", profile.eval_class), ("evalRun", run)]
        if self.set_prefix:
            extras.append(("evalSet", self.set_prefix))
        if self.split in ("tune", "holdout"):
            extras.append(("evalSplit", self.split))
        extras.append(("evalTasks", bundle_path))
        prices = (("evalPriceIn", self.price_in), ("evalPriceOut", self.price_out),
                  ("evalPriceCached", self.price_cached))
        for name, price in prices:
            if price is not None:
                extras.append((name, f"{price:g}"))
        if self.allow_irreversible:
            extras.append(("evalAllowIrreversible", "true"))
        if self.channel:
            extras.append(("evalChannel", self.channel))
        if self.on_takeover:
            extras.append(("evalOnTakeover", self.on_takeover))
        if self.flags:
            extras.append(("evalFlags", self.flags))
        if self.learn_skills:
            extras.append(("learnSkills", "on"))
        if self.memory:
            extras.append(("memory", "on"))
        return extras


class RunOptions(BaseModel):
    """The options one run resolved, handed to every phone's executor."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: AgentOptions
    """What the agent is asked to do, farm.yaml's prices already applied."""
    profile_name: str
    """Name of the instrument profile in farm.yaml (`sim` = the virtual phone's agent app)."""
    profile: InstrumentProfile
    """Agent app package, test package, runner, eval class, output dir template."""
    idle_timeout_s: float = Field(default=600.0, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    """Stop a phone whose executor produced no output for this long."""
    stall_s: float = Field(default=DEFAULT_STALL_S, gt=0, le=MAX_STALL_S, allow_inf_nan=False)
    """End a try whose link carried nothing for this long (a pull that receives no byte, a phone that does not answer
    a liveness check while its app is silent): an infrastructure error, tried again. From farm.yaml `stall_s`."""
    deadline_monotonic: float | None = None
    """`time.monotonic()` value after which every phone stops; null = no deadline."""

    def past_deadline(self) -> bool:
        """Whether the run's deadline (if any) has passed."""
        return self.deadline_monotonic is not None and time.monotonic() > self.deadline_monotonic

    @classmethod
    def resolve(
        cls, agent: AgentOptions, cfg: FarmConfig, profile: str | None = None, *,
        idle_timeout_s: float | None = None, deadline_s: float | None = None, started: float = 0.0,
    ) -> RunOptions:
        """Options of a run started at `started` (monotonic): farm.yaml fills the profile, prices and watchdog."""
        profile_name, prof = cfg.profile(profile)
        # 0 is a value, not "unset": a zero watchdog or deadline is refused, never replaced by the default.
        idle = check_seconds(idle_timeout_s, "--idle-timeout")
        deadline = check_seconds(deadline_s, "--deadline")
        return cls(
            agent=agent.with_defaults(cfg.pricing), profile_name=profile_name, profile=prof,
            idle_timeout_s=cfg.idle_timeout_s if idle is None else idle, stall_s=cfg.stall_s,
            deadline_monotonic=None if deadline is None else started + deadline,
        )


class HostSettings(BaseModel):
    """`farm run --executor host` options; model fields override farm.yaml's `llm:` and FARM_LLM_*."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: PolicyName | None = None
    """`model` or `scripted`; null = FARM_HOST_POLICY, else `model`."""
    # provider and reasoning_effort stay plain strings: LLMConfig checks them once the flags are
    # merged with farm.yaml and FARM_LLM_*, and a scripted run never looks at them.
    model: str | None = None
    """Model name."""
    provider: str | None = None
    """openai or anthropic."""
    base_url: str | None = None
    """Endpoint override."""
    api_key_env: str | None = None
    """Name of the variable holding the API key."""
    reasoning_effort: str | None = None
    """minimal / low / medium / high."""
    screenshots: bool = False
    """Send a JPEG with every screen (models that take images)."""
    scripts_dir: Path | None = None
    """Scripts of the scripted policy (default fixtures/scripts/)."""


def from_flags(kind: type[_Model], /, **values: object) -> _Model:
    """`kind` built from command-line values; a rejected value is a one-line FarmError naming its flag.

    The flag is the field name in kebab case (`on_takeover` → `--on-takeover`), which holds for
    every closed choice; typer has already parsed the other values to their types.
    """
    try:
        return kind.model_validate(values)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        name = str(err["loc"][0]) if err["loc"] else ""
        flag = "--" + name.replace("_", "-")
        if err["type"] == "literal_error":
            choices = [str(c) for c in _choices(kind, name)]
            hint = f"use {', '.join(choices[:-1])} or {choices[-1]}" if len(choices) > 1 else None
            raise FarmError(f"{flag} {values.get(name)}: invalid", hint=hint) from None
        msg = str(err["msg"]).removeprefix("Value error, ")
        hint = FLAGS_HINT if name == "flags" else None
        if name.startswith("price_"):
            hint = "pass USD per million tokens: a finite number, 0 or more"
        raise FarmError(f"{flag} {values.get(name)}: {msg[:1].lower()}{msg[1:]}", hint=hint) from None


def _choices(model: type[BaseModel], name: str) -> list[object]:
    """The values a `Literal[…]` (or `Literal[…] | None`) field accepts."""
    annotation = model.model_fields[name].annotation
    literal = next((a for a in get_args(annotation) if get_args(a)), annotation)
    return [c for c in get_args(literal) if c is not None]
