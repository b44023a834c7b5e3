"""farm.yaml model, serial sanitising, pull name checks, instrument argv."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.android.instrument_executor import instrument_argv
from farm.android.options import AgentOptions, RunOptions
from farm.android.pull import refuse_reason
from farm.config import SIM_PROFILE, load_config
from farm.errors import FarmError
from farm.results.store import pulled_dir, sanitise_serial

REPO = Path(__file__).resolve().parents[2]


def test_example_config_is_valid_and_keeps_the_sim_profile() -> None:
    cfg = load_config(REPO / "farm.example.yaml")
    assert cfg.profile("mika")[1].eval_class == "com.wangzan101.mika.eval.EvalRunTest"
    assert cfg.profile(None) == ("sim", SIM_PROFILE)
    with pytest.raises(FarmError, match="profiles.nope"):
        cfg.profile("nope")


def test_unknown_config_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "farm.yaml"
    path.write_text("adb_server: []\n")
    with pytest.raises(FarmError, match="adb_server: Extra inputs"):
        load_config(path)


def test_serial_becomes_one_safe_path_component(tmp_path: Path) -> None:
    assert sanitise_serial("127.0.0.1:5555") == "127.0.0.1_5555"
    assert sanitise_serial("../../etc") == "_.._etc"
    assert pulled_dir(tmp_path, "127.0.0.1:5555", "tune") == tmp_path / "android" / "127.0.0.1_5555" / "tune" / "raw"
    assert pulled_dir(tmp_path, "../x", "tune").resolve().is_relative_to(tmp_path.resolve())


@pytest.mark.parametrize(
    "name", ["..", "../x", "/etc/passwd", "a/b", "..\\..\\outside.txt", "bad\nname", "", "x\x00y"]
)
def test_hostile_entry_names_are_refused(name: str) -> None:
    assert refuse_reason(name) is not None


@pytest.mark.parametrize("name", ["scores.jsonl", "calc-add", "..hidden-but-fine"[2:], "报告.md"])
def test_plain_names_are_accepted(name: str) -> None:
    assert refuse_reason(name) is None


def _options(**agent: object) -> RunOptions:
    return RunOptions(agent=AgentOptions.model_validate(agent), profile_name="sim", profile=SIM_PROFILE)


def test_instrument_argv_carries_every_seed_argument_in_its_pinned_order() -> None:
    opts = _options(
        split="tune", set_prefix="read/system", allow_irreversible=True, price_in=2.5, price_out=10,
        price_cached=0.25, on_takeover="wait", channel="web", flags="fast=on", learn_skills=True, memory=True,
    )
    # The exact argv the agent app's EvalRunTest has always received for this set of flags.
    assert instrument_argv(opts, "r1", "/sdcard/b.json") == [
        "am", "instrument", "-w", "-r",
        "-e", "class", "dev.agentfarm.simagent.eval.EvalRunTest",
        "-e", "evalRun", "r1",
        "-e", "evalSet", "read/system",
        "-e", "evalSplit", "tune",
        "-e", "evalTasks", "/sdcard/b.json",
        "-e", "evalPriceIn", "2.5",
        "-e", "evalPriceOut", "10",
        "-e", "evalPriceCached", "0.25",
        "-e", "evalAllowIrreversible", "true",
        "-e", "evalChannel", "web",
        "-e", "evalOnTakeover", "wait",
        "-e", "evalFlags", "fast=on",
        "-e", "learnSkills", "on",
        "-e", "memory", "on",
        "dev.agentfarm.simagent.test/androidx.test.runner.AndroidJUnitRunner",
    ]


def test_instrument_argv_leaves_out_what_was_not_asked() -> None:
    tail = ["-e", "evalTasks", "/b", "dev.agentfarm.simagent.test/androidx.test.runner.AndroidJUnitRunner"]
    head = ["am", "instrument", "-w", "-r", "-e", "class", SIM_PROFILE.eval_class, "-e", "evalRun", "r1"]
    assert instrument_argv(_options(split="holdout"), "r1", "/b") == [*head, "-e", "evalSplit", "holdout", *tail]
    # `all` is the absence of evalSplit; a zero price is a price, not a missing one.
    argv = instrument_argv(_options(split="all", price_in=1e-7, price_out=123456789.0, price_cached=0.0), "r1", "/b")
    assert argv == [*head, *tail[:3], "-e", "evalPriceIn", "1e-07", "-e", "evalPriceOut", "1.23457e+08",
                    "-e", "evalPriceCached", "0", tail[3]]
