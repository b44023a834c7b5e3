"""The setup catalogue: argv lists from a narrow allow-list of commands that only switch radios, modes and volumes;
a file outside it, or a parameter that would leave it, is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.taskset.setup_actions import load_setup, load_setup_catalogue, setup_command, setup_refusal


def write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def test_shipped_actions_are_argv_lists_on_the_allow_list() -> None:
    catalogue = load_setup_catalogue()
    assert setup_command("bluetooth_off", catalogue) == ["svc", "bluetooth", "disable"]
    assert setup_command("airplane_off", catalogue) == ["cmd", "connectivity", "airplane-mode", "disable"]
    assert setup_command("night_mode_off", catalogue) == ["cmd", "uimode", "night", "no"]
    # Each named group of the pattern fills its own argument: a parameter never becomes a shell string.
    assert setup_command("volume:4:3", catalogue) == ["cmd", "media_session", "volume", "--stream", "4", "--set", "3"]


@pytest.mark.parametrize("argv", [
    "[settings, put, global, wifi_on, '0']", "[pm, clear, com.android.deskclock]", "[rm, -rf, /sdcard/Download]",
    "[svc, power, reboot]", "[cmd, uimode, night, custom_schedule, extra]", "[sh, -c, 'svc wifi disable']",
    "[svc, wifi, 'disable; reboot']", "[cmd, media_session, volume, --stream, '{stream}', --set, '300']",
])
def test_commands_off_the_allow_list_are_refused(tmp_path: Path, argv: str) -> None:
    path = write(tmp_path, "bad", f"description: x\nargv: {argv}\nparam_pattern: '(?P<stream>[0-9])'\n")
    with pytest.raises(FarmError, match=r"bad.yaml: argv: a setup action may only run: svc wifi enable\|disable"):
        load_setup(path)


def test_pattern_groups_must_match_the_argv_tokens(tmp_path: Path) -> None:
    path = write(tmp_path, "vol", "description: x\nargv: [cmd, media_session, volume, --stream, '{stream}', --set, "
                 "'{index}']\nparam_pattern: '(?P<stream>[0-9])'\n")
    with pytest.raises(FarmError, match=r"named groups \['stream'\] differ from argv's tokens \['index', 'stream'\]"):
        load_setup(path)
    path = write(tmp_path, "off", "description: x\nargv: [svc, bluetooth, disable]\nparam_pattern: '(?P<x>1)'\n")
    with pytest.raises(FarmError, match="param_pattern` without a {group} token"):
        load_setup(path)


def test_name_must_match_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "bt", "name: bluetooth_off\ndescription: x\nargv: [svc, bluetooth, disable]\n")
    with pytest.raises(FarmError, match="differs from the file name"):
        load_setup(path)


def test_a_filled_parameter_is_checked_again() -> None:
    assert setup_refusal(["cmd", "media_session", "volume", "--stream", "{stream}", "--set", "{index}"],
                         template=True) is None
    # A template token is only accepted where the shape has a pattern, never in place of a literal word.
    assert setup_refusal(["svc", "{x}", "disable"], template=True) is not None
    assert setup_refusal(["cmd", "media_session", "volume", "--stream", "4", "--set", "{index}"]) is not None
    with pytest.raises(ValueError, match="does not match"):
        setup_command("volume:4:-1")
