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

import time
from pathlib import Path
from typing import Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, ValidationError

from farm.config import FarmConfig, InstrumentProfile, Pricing
from farm.errors import FarmError
from farm.taskset.loader import SplitChoice

TakeoverChoice = Literal["cancel", "wait"]
ChannelChoice = Literal["web", "app"]
PolicyName = Literal["model", "scripted"]

_Model = TypeVar("_Model", bound=BaseModel)


class AgentOptions(BaseModel):
    """What the agent run is asked to do: the same for every phone and both executors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    split: SplitChoice = "tune"
    """Task pool selected: `tune`, `holdout` or `all`."""
    set_prefix: str | None = None
    """`--set`: task directory or id prefix (e.g. `read/system`); null = every task of the split."""
    allow_irreversible: bool = False
    """Run `irreversible` tasks (they really send, delete or order)."""
    price_in: float | None = None
    """USD per million new input tokens; null = farm.yaml `pricing.input_per_m`, else unknown."""
    price_out: float | None = None
    """USD per million output tokens; null = farm.yaml `pricing.output_per_m`, else unknown."""
    price_cached: float | None = None
    """USD per million cached input tokens; null = farm.yaml `pricing.cached_per_m`, else unknown."""
    on_takeover: TakeoverChoice | None = None
    """What the agent does when a person takes over the phone; null = the agent's default (cancel)."""
    channel: ChannelChoice | None = None
    """Force every task through the web or the app; null = the agent chooses."""
    flags: str | None = None
    """`evalFlags` value passed through to the agent app (`none` or `key=on,…`)."""
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
    idle_timeout_s: float = 600.0
    """Stop a phone whose executor produced no output for this long."""
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
        return cls(
            agent=agent.with_defaults(cfg.pricing), profile_name=profile_name, profile=prof,
            idle_timeout_s=idle_timeout_s or cfg.idle_timeout_s,
            deadline_monotonic=started + deadline_s if deadline_s else None,
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
        raise FarmError(f"{flag}: {err['msg']}") from None


def _choices(model: type[BaseModel], name: str) -> list[object]:
    """The values a `Literal[…]` (or `Literal[…] | None`) field accepts."""
    annotation = model.model_fields[name].annotation
    literal = next((a for a in get_args(annotation) if get_args(a)), annotation)
    return [c for c in get_args(literal) if c is not None]
