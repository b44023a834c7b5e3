"""The probe catalogue: loading, refusals, commands and parsers."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.taskset.probes import load_catalogue, load_probe

REQUIRED = ["android_version", "sdk_int", "device_model", "manufacturer", "locale", "timezone", "date",
            "storage_root", "battery_level", "package_version"]


def write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def test_shipped_catalogue_has_the_required_probes() -> None:
    catalogue = load_catalogue()
    assert set(REQUIRED) <= set(catalogue)
    assert catalogue["package_version"].parameterised
    assert not catalogue["android_version"].parameterised


def test_unknown_key_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "p", "description: d\nargv: [getprop, ro.x]\nshell: true\n")
    with pytest.raises(FarmError, match=r"p\.yaml: shell: Extra inputs are not permitted"):
        load_probe(path)


def test_bad_regex_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "p", "description: d\nargv: [getprop, ro.x]\nparser: {kind: regex, regex: '(?P<value>'}\n")
    with pytest.raises(FarmError, match="parser: regex does not compile"):
        load_probe(path)


def test_regex_without_value_group_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "p", "description: d\nargv: [getprop, ro.x]\nparser: {kind: regex, regex: '(\\d+)'}\n")
    with pytest.raises(FarmError, match=r"named group \(\?P<value>"):
        load_probe(path)


def test_program_not_on_allow_list_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "p", "description: d\nargv: [rm, -rf, /sdcard]\n")
    with pytest.raises(FarmError, match="argv: program 'rm' is not allowed"):
        load_probe(path)


@pytest.mark.parametrize("argv", ["[settings, put, global, x, '1']", "[pm, uninstall, com.x]", "[date, -s, '0101']",
                                  "[cmd, package, install, x]", "[wm, size, 100x100]"])
def test_writing_subcommands_are_refused(tmp_path: Path, argv: str) -> None:
    path = write(tmp_path, "p", f"description: d\nargv: {argv}\n")
    with pytest.raises(FarmError, match="argv: "):
        load_probe(path)


def test_name_must_match_file(tmp_path: Path) -> None:
    path = write(tmp_path, "p", "name: q\ndescription: d\nargv: [getprop, ro.x]\n")
    with pytest.raises(FarmError, match="differs from the file name"):
        load_probe(path)


def test_command_is_an_argv_list_with_the_parameter_as_one_argument() -> None:
    spec = load_catalogue()["package_version"]
    assert spec.command("com.tencent.mm") == ["dumpsys", "package", "com.tencent.mm"]
    with pytest.raises(ValueError, match="does not match"):
        spec.command("com.x; reboot")
    with pytest.raises(ValueError, match="needs a parameter"):
        spec.command(None)


def test_unparameterised_probe_refuses_a_parameter() -> None:
    with pytest.raises(ValueError, match="takes no parameter"):
        load_catalogue()["android_version"].command("x")


def test_parsers() -> None:
    catalogue = load_catalogue()
    battery = "Current Battery Service state:\n  AC powered: false\n  level: 80\n"
    assert catalogue["battery_level"].parse(battery) == "80"
    package = "Packages:\n    versionCode=231 minSdk=24\n    versionName=2.3.1\n"
    assert catalogue["package_version"].parse(package) == "2.3.1"
    assert catalogue["sdk_int"].parse("34\r\n") == "34"
    assert catalogue["storage_root"].parse("Alarms\nDCIM\n\nDownload\n") == "Alarms\nDCIM\nDownload"
    assert catalogue["date"].parse("2026-12-01\n") == "2026-12-01"
    with pytest.raises(ValueError, match="does not match"):
        catalogue["battery_level"].parse("no battery here")
    with pytest.raises(ValueError, match="expected an integer"):
        catalogue["sdk_int"].parse("abc")
