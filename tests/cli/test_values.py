"""Values that used to be accepted although wrong: each refused in one line naming its flag or field."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from farm.android.devices import local_port, local_server
from farm.android.options import AgentOptions, RunOptions, check_seconds, from_flags
from farm.cli.agent_flags import check_fraction, check_runs_dir, host_settings
from farm.cli.paths import check_input_dir, check_output_dir
from farm.config import FarmConfig, load_config
from farm.errors import FarmError


def test_a_zero_idle_timeout_is_refused_not_replaced_by_the_default() -> None:
    cfg = FarmConfig(idle_timeout_s=42)
    assert RunOptions.resolve(AgentOptions(), cfg).idle_timeout_s == 42
    assert RunOptions.resolve(AgentOptions(), cfg, idle_timeout_s=5).idle_timeout_s == 5
    for bad in (0.0, -1.0, math.nan, math.inf, 10 * 24 * 3600.0):
        with pytest.raises(FarmError, match="--idle-timeout"):
            RunOptions.resolve(AgentOptions(), cfg, idle_timeout_s=bad)


def test_a_deadline_must_be_a_positive_finite_number_of_seconds() -> None:
    opts = RunOptions.resolve(AgentOptions(), FarmConfig(), deadline_s=30, started=100.0)
    assert opts.deadline_monotonic == 130.0
    assert RunOptions.resolve(AgentOptions(), FarmConfig(), started=100.0).deadline_monotonic is None
    for bad in (0.0, -5.0, math.nan, math.inf):
        with pytest.raises(FarmError, match=r"^--deadline .*: not a positive number of seconds"):
            check_seconds(bad, "--deadline")
        with pytest.raises(FarmError, match="--deadline"):
            RunOptions.resolve(AgentOptions(), FarmConfig(), deadline_s=bad)
    assert check_seconds(0.5, "--deadline") == 0.5 and check_seconds(None, "--deadline") is None


def test_prices_are_finite_and_not_negative() -> None:
    assert AgentOptions(price_in=0.0, price_out=2.5, price_cached=0.1).price_out == 2.5
    for name in ("price_in", "price_out", "price_cached"):
        for bad in (-3.0, -0.01, math.nan, math.inf, -math.inf):
            with pytest.raises(FarmError, match=f"^--{name.replace('_', '-')} "):
                from_flags(AgentOptions, **{name: bad})


@pytest.mark.parametrize("flags", ["none", "fast=on", "fast=on,cache=off", "a.b-c_d=on"])
def test_well_formed_eval_flags_pass_through(flags: str) -> None:
    opts = AgentOptions(flags=flags)
    assert opts.flags == flags


@pytest.mark.parametrize("flags", ["====", "", "fast", "fast=maybe", "=on", "a=on,,b=on", "a=on,", ",a=on",
                                   "a=on,a=off", "a b=on", "a=on;b=on", "NONE", "a==on", "1a=on"])
def test_malformed_eval_flags_are_refused_naming_the_flag(flags: str) -> None:
    with pytest.raises(FarmError, match="^--flags ") as caught:
        from_flags(AgentOptions, flags=flags)
    assert "key=on" in caught.value.line()


def test_a_fail_under_rate_is_between_0_and_1() -> None:
    assert check_fraction(0.0, "--fail-under") == 0.0 and check_fraction(1.0, "--fail-under") == 1.0
    for bad in (math.nan, -0.1, 1.01, math.inf):
        with pytest.raises(FarmError, match="--fail-under"):
            check_fraction(bad, "--fail-under")


def test_scripts_dir_must_be_a_directory(tmp_path: Path) -> None:
    kwargs: dict[str, object] = {"policy": "scripted", "model": None, "provider": None, "base_url": None,
                                 "api_key_env": None, "reasoning_effort": None, "screenshots": False}
    assert host_settings("host", scripts_dir=tmp_path, **kwargs) is not None  # type: ignore[arg-type]
    with pytest.raises(FarmError, match="--scripts-dir .*no such directory"):
        host_settings("host", scripts_dir=tmp_path / "nope", **kwargs)  # type: ignore[arg-type]
    (tmp_path / "f").write_text("x")
    with pytest.raises(FarmError, match="--scripts-dir .*not a directory"):
        host_settings("instrument", scripts_dir=tmp_path / "f", **kwargs)  # type: ignore[arg-type]


def test_output_dirs_are_directories_or_creatable(tmp_path: Path) -> None:
    assert check_output_dir(tmp_path, "--runs-dir") == tmp_path
    assert check_output_dir(tmp_path / "new" / "deeper", "--runs-dir") == tmp_path / "new" / "deeper"
    assert not (tmp_path / "new").exists()  # nothing is created by the check
    (tmp_path / "f").write_text("x")
    with pytest.raises(FarmError, match=r"^--runs-dir .*/f: is a file, not a directory"):
        check_output_dir(tmp_path / "f", "--runs-dir")
    with pytest.raises(FarmError, match=r"is under .*/f, which is a file"):
        check_output_dir(tmp_path / "f" / "runs", "--runs-dir")
    for kernel in ("/proc", "/proc/self", "/proc/nope/x", "/sys/x", "/dev/null"):
        with pytest.raises(FarmError, match="a kernel file system"):
            check_output_dir(Path(kernel), "--out")
    (tmp_path / "to-proc").symlink_to("/proc/self")
    with pytest.raises(FarmError, match="under /proc"):
        check_output_dir(tmp_path / "to-proc" / "runs", "--runs-dir")


def test_input_dirs_must_exist(tmp_path: Path) -> None:
    assert check_input_dir(tmp_path, "--runs-dir") == tmp_path
    with pytest.raises(FarmError, match="no such directory"):
        check_input_dir(tmp_path / "nope", "--runs-dir")
    (tmp_path / "f").write_text("x")
    with pytest.raises(FarmError, match="not a directory"):
        check_input_dir(tmp_path / "f", "--runs-dir")


def test_the_runs_dir_of_farm_yaml_is_checked_and_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    check_runs_dir(None, None)  # ./runs can be created
    (tmp_path / "farm.yaml").write_text("runs_dir: /proc/farm-runs\n")
    with pytest.raises(FarmError, match=r"^farm.yaml: runs_dir /proc/farm-runs: under /proc"):
        check_runs_dir(None, None)
    check_runs_dir(tmp_path / "elsewhere", None)  # the flag wins over farm.yaml


@pytest.mark.parametrize("value", ["abc", "0", "70000", "-1", "5037x", " ", "٥٠٣٧", "99999999999999999999"])
def test_a_bad_adb_port_variable_is_named(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", value)
    with pytest.raises(FarmError, match="^ANDROID_ADB_SERVER_PORT=.*: not a port number"):
        local_port()


def test_a_good_or_absent_adb_port_variable_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", "15037")
    assert local_server().address() == "127.0.0.1:15037"
    monkeypatch.delenv("ANDROID_ADB_SERVER_PORT")
    assert local_port() == 5037


@pytest.mark.parametrize(("text", "field"), [
    ("idle_timeout_s: .inf\n", "idle_timeout_s"),
    ("idle_timeout_s: .nan\n", "idle_timeout_s"),
    ("idle_timeout_s: -1\n", "idle_timeout_s"),
    ("idle_timeout_s: 0\n", "idle_timeout_s"),
    ("pricing: {input_per_m: .inf}\n", "pricing.input_per_m"),
    ("pricing: {output_per_m: -1}\n", "pricing.output_per_m"),
    ("pull: {max_file_mb: .nan}\n", "pull.max_file_mb"),
    ("pull: {max_total_mb: 1e12}\n", "pull.max_total_mb"),
    ("health: {min_free_storage_mb: 1e12}\n", "health.min_free_storage_mb"),
    ("adb_servers: [{host: 'a b', port: 5037}]\n", "adb_servers.0.host"),
    ("runs_dir: ''\n", "runs_dir"),
    ("tasks_dir: \"a\\0b\"\n", "tasks_dir"),
    ("profiles: {p: {package: a, test_package: b, eval_class: c, files_dir: '/x/{run}'}}\n", "profiles.p.files_dir"),
    ("profiles: {p: {package: a, test_package: b, eval_class: c, output_dir: '{files_dir'}}\n",
     "profiles.p.output_dir"),
    ("llm: {provider: openai, model: m, backoff_max_s: .inf}\n", "llm"),
])
def test_farm_yaml_numbers_and_names_out_of_range_are_refused(text: str, field: str, tmp_path: Path) -> None:
    path = tmp_path / "farm.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FarmError, match=f"^{path}: {field}"):
        load_config(path)


def test_farm_yaml_that_is_no_config_file_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "farm.yaml").mkdir()
    with pytest.raises(FarmError, match="farm.yaml: is a directory"):
        load_config(None)
    deep = tmp_path / "deep.yaml"
    deep.write_bytes(b"a: " + b"[" * 100_000)
    with pytest.raises(FarmError, match="deep.yaml: nested too deeply"):
        load_config(deep)
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (2 << 20))
    with pytest.raises(FarmError, match="larger than 1 MiB"):
        load_config(big)


def test_farm_yaml_templates_that_the_code_fills_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "farm.yaml"
    path.write_text("profiles: {p: {package: a, test_package: b, eval_class: c, files_dir: '/d/{package}/f',"
                    " output_dir: '{files_dir}/eval/{run}-{package}'}}\npull: {max_file_mb: 0.5}\n")
    profile = load_config(path).profiles["p"]
    assert profile.eval_dir("r1") == "/d/a/f/eval/r1-a"
    assert os.fspath(path).endswith("farm.yaml")
