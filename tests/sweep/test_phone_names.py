"""A sweep names each phone once, at discovery: the farm.yaml label or `<model> · <short serial>`, recorded in the
manifest, shown with the serial and adb server on the per-phone lines and bars, and on the lines that say a
phone was left out, and the same in every run."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from farm import manifest as mf
from farm.android.health import PhoneHealth
from farm.cli.android import print_summary
from farm.errors import FarmError
from farm.sweep.sweep import SweepResult, sweep
from tests.helpers.sweep import low_battery, scripted_tasks, sweep_request


def _classnames(run_dir: Path, serial: str) -> set[str]:
    root = ET.parse(run_dir / "junit.xml").getroot()
    suites = [s for s in root.iter("testsuite")
              if any(p.get("name") == "serial" and p.get("value") == serial for p in s.iter("property"))]
    return {c.get("classname") or "" for s in suites for c in s.iter("testcase")}


def test_a_phone_keeps_its_name_when_the_other_phones_change_and_a_label_wins(virtual_farm, tmp_path: Path) -> None:
    labelled, other = virtual_farm(2)
    server = f"127.0.0.1:{os.environ['ANDROID_ADB_SERVER_PORT']}"
    cfg = tmp_path / "farm.yaml"
    cfg.write_text(f'phone_labels:\n  "{labelled.serial}": "Bench A"\n', encoding="utf-8")
    tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    both = sweep(sweep_request(tmp_path, tasks, config=cfg, run_id="both"))
    alone = sweep(sweep_request(tmp_path, tasks, config=cfg, run_id="alone", serials=[other.serial],
                                all_phones=False))
    name = f"Pixel 7 · {other.serial.rpartition(':')[2]}"
    for result in (both, alone):
        recorded = {p.serial: p.name for p in mf.load(result.run_dir).phones}
        assert recorded[other.serial] == name
        assert f"{name} ({other.serial} on {server})" in [p.label for p in result.phones]
    assert {p.serial: p.name for p in mf.load(both.run_dir).phones}[labelled.serial] == "Bench A"
    assert f"Bench A ({labelled.serial} on {server})" in [p.label for p in both.phones]
    # JUnit class names come from the name alone: equal in both runs.
    assert _classnames(both.run_dir, other.serial) == _classnames(alone.run_dir, other.serial) == {
        f"android.{name}.read/system"}


def test_farm_run_and_sweep_say_which_phone_was_left_out_by_name_serial_and_adb_server(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    refused = PhoneHealth("127.0.0.1:45949", "127.0.0.1:5037", "device", reason="battery 5% < 20% and not charging",
                          model="Pixel 7", name="Pixel 7 · 45949")
    result = SweepResult("r1", tmp_path / "runs" / "r1", {}, interrupted=False, exit_code=0, left_out=[refused])
    print_summary(result)  # `farm run` and `farm sweep` both end with it
    assert capsys.readouterr().err.splitlines()[0] == (
        "left out Pixel 7 · 45949 (127.0.0.1:45949 on 127.0.0.1:5037): battery 5% < 20% and not charging")


def test_no_healthy_phone_names_the_refused_phone_as_the_left_out_line_does(virtual_farm, tmp_path: Path) -> None:
    weak = virtual_farm(1, profile=low_battery())[0]
    server = f"127.0.0.1:{os.environ['ANDROID_ADB_SERVER_PORT']}"
    tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    with pytest.raises(FarmError) as refused:
        sweep(sweep_request(tmp_path, tasks, run_id="weak", serials=[weak.serial]))
    name = f"Pixel 7 · {weak.serial.rpartition(':')[2]}"
    assert (f"left out {name} ({weak.serial} on {server}): battery 5% < 20% and not charging"
            in refused.value.line())

