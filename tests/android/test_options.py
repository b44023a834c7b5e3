"""The shared `farm run` options: farm.yaml defaults, resolution per run, flag errors, a cheap import."""

from __future__ import annotations

import subprocess
import sys

import pytest

from farm.android.options import AgentOptions, HostSettings, RunOptions, from_flags
from farm.config import SIM_PROFILE, FarmConfig, InstrumentProfile, Pricing
from farm.errors import FarmError


def test_farm_yaml_prices_fill_only_the_prices_not_given() -> None:
    pricing = Pricing(input_per_m=3.0, output_per_m=15.0, cached_per_m=0.3)
    given = AgentOptions(price_in=0.0, price_cached=0.1, memory=True)
    resolved = given.with_defaults(pricing)
    # A given price wins even when it is zero; the rest of the options are untouched.
    assert (resolved.price_in, resolved.price_out, resolved.price_cached) == (0.0, 15.0, 0.1)
    assert resolved.memory and given.price_out is None
    assert AgentOptions().with_defaults(Pricing()) == AgentOptions()


def test_run_options_take_the_profile_prices_and_watchdog_from_farm_yaml() -> None:
    mine = InstrumentProfile(package="a.b", test_package="a.b.test", eval_class="a.b.Eval")
    cfg = FarmConfig(profiles={"mine": mine}, pricing=Pricing(input_per_m=2.0), idle_timeout_s=42)
    opts = RunOptions.resolve(AgentOptions(split="all"), cfg, "mine", started=100.0)
    assert (opts.profile_name, opts.profile, opts.idle_timeout_s, opts.deadline_monotonic) == ("mine", mine, 42, None)
    assert opts.agent == AgentOptions(split="all", price_in=2.0)
    flagged = RunOptions.resolve(AgentOptions(), cfg, None, idle_timeout_s=5, deadline_s=30, started=100.0)
    assert (flagged.profile_name, flagged.profile, flagged.idle_timeout_s) == ("sim", SIM_PROFILE, 5)
    assert flagged.deadline_monotonic == 130.0


@pytest.mark.parametrize(
    ("model", "field", "value", "line"),
    [
        (AgentOptions, "split", "bogus", "--split bogus: invalid — use tune, holdout or all"),
        (AgentOptions, "on_takeover", "later", "--on-takeover later: invalid — use cancel or wait"),
        (AgentOptions, "channel", "sms", "--channel sms: invalid — use web or app"),
        (HostSettings, "policy", "magic", "--policy magic: invalid — use model or scripted"),
    ],
)
def test_an_invalid_choice_is_one_line_naming_the_flag(
    model: type[AgentOptions | HostSettings], field: str, value: str, line: str
) -> None:
    with pytest.raises(FarmError) as info:
        from_flags(model, **{field: value})
    assert info.value.line() == line


def test_valid_flags_build_the_model() -> None:
    assert from_flags(AgentOptions, split="holdout", channel=None) == AgentOptions(split="holdout")
    # `model` is a HostSettings field, so it must reach the model rather than the builder.
    host = from_flags(HostSettings, policy="model", model="m", provider="openai")
    assert (host.policy, host.model, host.provider) == ("model", "m", "openai")


def test_importing_the_options_pulls_in_no_device_or_model_library() -> None:
    heavy = ("adbutils", "uiautomator2", "openai", "anthropic", "host_agent", "farm.sweep.dev_run")
    code = f"import sys, farm.android.options; print([m for m in {heavy!r} if m in sys.modules])"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]"
