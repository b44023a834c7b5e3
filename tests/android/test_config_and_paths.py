"""farm.yaml model, serial sanitising, pull name checks, instrument argv."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.android.executor import RunOptions
from farm.android.instrument_executor import instrument_argv
from farm.android.paths import raw_dir, sanitise_serial
from farm.android.pull import refuse_reason
from farm.config import SIM_PROFILE, load_config
from farm.errors import FarmError

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
    assert raw_dir(tmp_path, "127.0.0.1:5555", "tune") == tmp_path / "android" / "127.0.0.1_5555" / "tune" / "raw"
    assert raw_dir(tmp_path, "../x", "tune").resolve().is_relative_to(tmp_path.resolve())


@pytest.mark.parametrize(
    "name", ["..", "../x", "/etc/passwd", "a/b", "..\\..\\outside.txt", "bad\nname", "", "x\x00y"]
)
def test_hostile_entry_names_are_refused(name: str) -> None:
    assert refuse_reason(name) is not None


@pytest.mark.parametrize("name", ["scores.jsonl", "calc-add", "..hidden-but-fine"[2:], "报告.md"])
def test_plain_names_are_accepted(name: str) -> None:
    assert refuse_reason(name) is None


def test_instrument_argv_carries_every_seed_argument() -> None:
    opts = RunOptions(
        split="tune", profile_name="sim", profile=SIM_PROFILE, set_prefix="read/system", allow_irreversible=True,
        price_in=2.5, price_out=10, price_cached=0.25, on_takeover="wait", channel="web", flags="fast=on",
        learn_skills=True, memory=True,
    )
    argv = instrument_argv(opts, "r1", "/sdcard/b.json")
    extras = {argv[i + 1]: argv[i + 2] for i, a in enumerate(argv) if a == "-e"}
    assert argv[:4] == ["am", "instrument", "-w", "-r"]
    assert argv[-1] == "dev.agentfarm.simagent.test/androidx.test.runner.AndroidJUnitRunner"
    assert extras == {
        "class": SIM_PROFILE.eval_class, "evalRun": "r1", "evalSet": "read/system", "evalSplit": "tune",
        "evalTasks": "/sdcard/b.json", "evalPriceIn": "2.5", "evalPriceOut": "10", "evalPriceCached": "0.25",
        "evalAllowIrreversible": "true", "evalChannel": "web", "evalOnTakeover": "wait", "evalFlags": "fast=on",
        "learnSkills": "on", "memory": "on",
    }
