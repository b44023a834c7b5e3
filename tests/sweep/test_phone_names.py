"""A sweep names each phone once, at discovery: the farm.yaml label or `<model> · <short serial>`, recorded in the
manifest, shown with the serial and adb server on the per-phone lines and bars, and the same in every run."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

from farm import manifest as mf
from farm.sweep.sweep import sweep
from tests.helpers.sweep import scripted_tasks, sweep_request


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
