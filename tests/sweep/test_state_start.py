"""Tasks verified by the phone's state, on the virtual phone: a goal that already holds before the agent starts is
an invalid start (never a pass, never the agent's failure), and the harness reads the state itself, before and after."""

from __future__ import annotations

import json
from pathlib import Path

import adbutils
import pytest

from farm.results.store import ReadProblems, read_records
from farm.sim.launcher import SimPhone
from farm.sweep.sweep import sweep
from tests.helpers.sweep import sweep_request

WIFI_ON = {
    "id": "settings-wifi-on", "goal": "帮我把 Wi-Fi 打开", "apps": ["{app:settings}"], "category": "write",
    "partition": "tune", "requires": ["app:settings"], "expect": "succeeded", "maxSteps": 10, "timeoutSec": 60,
    "checks": [{"type": "state", "probe": "setting_global:wifi_on", "op": "changed", "before": "0", "value": "1"}],
    "goalState": [{"probe": "setting_global:wifi_on", "op": "equals", "value": "1"}],
}


def _device(phone: SimPhone) -> adbutils.AdbDevice:
    return adbutils.AdbClient(port=phone.adb_port).device(phone.serial)


def _tasks(root: Path, *tasks: dict[str, object]) -> Path:
    for task in tasks:
        path = root / "write" / f"{task['id']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(task, ensure_ascii=False), encoding="utf-8")
    return root


def test_a_wifi_task_on_a_phone_where_wifi_is_already_on_is_an_invalid_start(
    virtual_phone: SimPhone, tmp_path: Path
) -> None:
    _device(virtual_phone).shell("settings put global wifi_on 1")
    tasks = _tasks(tmp_path / "tasks", WIFI_ON)
    result = sweep(sweep_request(tmp_path, tasks, run_id="w1"))
    (rec,) = read_records(result.run_dir / "records.jsonl", ReadProblems())
    assert (rec.outcome, rec.passed, rec.failure_category) == ("skipped", False, "invalid_start")
    assert rec.reasons == ["invalid start: the goal already held before the agent started "
                           "(setting_global:wifi_on is '1')"]
    # Counted apart: not attempted, so neither a pass nor a failure of the agent.
    assert "attempted 0" in result.headline


def test_the_same_task_runs_when_the_phone_starts_away_from_the_goal(virtual_phone: SimPhone, tmp_path: Path) -> None:
    _device(virtual_phone).shell("settings put global wifi_on 0")
    tasks = _tasks(tmp_path / "tasks", WIFI_ON)
    result = sweep(sweep_request(tmp_path, tasks, run_id="w2"))
    (rec,) = read_records(result.run_dir / "records.jsonl", ReadProblems())
    assert rec.failure_category != "invalid_start"
    # The scripted policy has no script for it: the task is left unrun, but it did start from a valid state.
    assert not rec.passed


REPO_TASKS = Path(__file__).resolve().parents[2] / "tasks"


def test_a_task_with_setup_on_a_phone_already_in_the_goal_reaches_its_start_and_is_judged(
    virtual_phone: SimPhone, tmp_path: Path
) -> None:
    shell = _device(virtual_phone)
    shell.shell("svc bluetooth enable")
    task = json.loads((REPO_TASKS / "write" / "settings-bluetooth-on.json").read_text(encoding="utf-8"))
    assert task["setup"] == ["bluetooth_off"]
    tasks = _tasks(tmp_path / "tasks", task)
    result = sweep(sweep_request(tmp_path, tasks, run_id="bt1"))
    (rec,) = read_records(result.run_dir / "records.jsonl", ReadProblems())
    # The setup switched Bluetooth off, the agent switched it on again: the change is the agent's, so it passes.
    assert (rec.outcome, rec.passed, rec.failure_category) == ("succeeded", True, None)
    assert rec.extra["setup"] == ("setup reached a start state (svc bluetooth disable); before it the goal already "
                                  "held before the agent started (setting_global:bluetooth_on is '1')")
    assert shell.shell("settings get global bluetooth_on") == "1"


def test_a_setup_that_leaves_the_goal_holding_is_still_an_invalid_start(
    virtual_phone: SimPhone, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("farm.sweep.start_state.SETTLE_S", 0.5)
    _device(virtual_phone).shell("svc bluetooth enable")
    task = json.loads((REPO_TASKS / "write" / "settings-bluetooth-on.json").read_text(encoding="utf-8"))
    task["setup"] = ["night_mode_off"]  # a whitelisted action that does not touch Bluetooth
    tasks = _tasks(tmp_path / "tasks", task)
    result = sweep(sweep_request(tmp_path, tasks, run_id="bt2"))
    (rec,) = read_records(result.run_dir / "records.jsonl", ReadProblems())
    assert (rec.outcome, rec.passed, rec.failure_category) == ("skipped", False, "invalid_start")
    assert rec.reasons == ["invalid start: the goal already held before the agent started "
                           "(setting_global:bluetooth_on is '1'); setup (cmd uimode night no → Night mode: no) did "
                           "not reach a start state"]
    assert "setup" not in rec.extra


def _shipped(task_id: str, directory: str = "write") -> dict[str, object]:
    task: dict[str, object] = json.loads((REPO_TASKS / directory / f"{task_id}.json").read_text(encoding="utf-8"))
    return task


def test_an_alarm_task_passes_on_its_label_in_the_clocks_upcoming_notification(
    virtual_phone: SimPhone, tmp_path: Path
) -> None:
    tasks = _tasks(tmp_path / "tasks", _shipped("clock-alarm-in-an-hour"))
    result = sweep(sweep_request(tmp_path, tasks, run_id="nap1"))
    (rec,) = read_records(result.run_dir / "records.jsonl", ReadProblems())
    assert (rec.outcome, rec.passed) == ("succeeded", True), rec.reasons
    # A second run adds another alarm, but its own marker's notification is what passes it: the first run's
    # notification (still posted) would not.
    result = sweep(sweep_request(tmp_path, tasks, run_id="nap2"))
    (rec,) = read_records(result.run_dir / "records.jsonl", ReadProblems())
    assert rec.passed
    shown = _device(virtual_phone).shell("dumpsys notification --noredact")
    assert "AF-nap1-nap" in shown and "AF-nap2-nap" in shown
