"""The shipped tasks that only the phone's state can verify, end to end on a virtual phone: the scripted policy does
each one and the harness's own readings (before and after the attempt) pass it; an agent that does nothing, does it
wrong, or starts where the goal already holds does not pass."""

from __future__ import annotations

import re
from pathlib import Path

import adbutils
import yaml

from farm.android.options import HostSettings
from farm.results.record import Record
from farm.results.store import read_records
from farm.sim.launcher import SimPhone
from farm.sweep.sweep import sweep
from farm.taskset.loader import load_taskset
from farm.taskset.model import StateCheck
from tests.helpers.sweep import REPO, scripted_tasks, sweep_request

SCRIPTS = REPO / "fixtures" / "scripts"


def _state_only() -> tuple[str, ...]:
    """`write/<id>` of every shipped write task whose checks are all state checks."""
    names = [f"{lt.directory}/{lt.task.id}" for lt in load_taskset(REPO / "tasks") if lt.directory == "write"
             and lt.task.checks and all(isinstance(c, StateCheck) for c in lt.task.checks)]
    return tuple(sorted(names))


def _device(phone: SimPhone) -> adbutils.AdbDevice:
    return adbutils.AdbClient(port=phone.adb_port).device(phone.serial)


def _by_task(records: list[Record]) -> dict[str, Record]:
    return {r.task_id: r for r in records}


def _state_details(rec: Record) -> list[str]:
    return [c.detail for c in rec.checks if c.type == "state"]


def test_the_scripted_policy_passes_every_state_only_task_on_a_virtual_phone(
    virtual_phone: SimPhone, tmp_path: Path
) -> None:
    names = _state_only()
    assert len(names) >= 12, names
    # Each task starts away from its goal: Wi-Fi off (a fresh phone has it on); the rest are off or mid-range there.
    _device(virtual_phone).shell("settings put global wifi_on 0")
    tasks = scripted_tasks(tmp_path / "tasks", names)
    result = sweep(sweep_request(tmp_path, tasks, run_id="st1"))
    records = _by_task(read_records(result.run_dir / "records.jsonl"))
    assert set(records) == {n.split("/")[1] for n in names}
    failed = {tid: (r.outcome, r.reasons, _state_details(r)) for tid, r in records.items() if not r.passed}
    assert not failed, failed
    for tid, rec in records.items():
        # Passed on the harness's own readings: every check is a state check that held.
        assert rec.checks and all(c.type == "state" and c.passed for c in rec.checks), (tid, rec.checks)


WRONG = {
    # Says it is done and does nothing.
    "settings-media-volume-up": [{"launch": {"capability": "settings"}}, {"answer": "媒体音量已调大"}],
    # Turns the volume the wrong way.
    "settings-media-volume-down": [{"launch": {"capability": "settings"}}, {"tap": "声音和振动"},
                                   {"tap": {"at": {"desc": "调高媒体音量"}}}, {"answer": "媒体音量已调小"}],
    # Saves the contact with another number (the list shows the name either way).
    "contacts-save-hotline": [{"launch": {"capability": "contacts"}}, {"tap": {"at": {"desc": "新建联系人"}}},
                              {"type": {"text": "{marker}", "into": {"resource_id": "name"}}},
                              {"type": {"text": "12345", "into": {"resource_id": "phone"}}}, {"tap": "保存"},
                              {"answer": "已保存 {marker}"}],
    # Makes the folder in the storage root, not in Download.
    "files-download-folder": [{"launch": {"capability": "files"}}, {"tap": "新建文件夹"},
                              {"type": {"text": "{marker}", "into": {"resource_id": "text1"}}}, {"tap": "确定"},
                              {"answer": "已新建文件夹 {marker}"}],
    # Makes the right file in the right folder, with another time in it (the listing alone would pass it).
    "files-download-memo": [{"launch": {"capability": "files"}}, {"tap": "Download"}, {"tap": "新建文本文件"},
                            {"type": {"text": "{marker}.txt", "into": {"resource_id": "file_name"}}},
                            {"type": {"text": "周五下午四点开会", "into": {"resource_id": "file_content"}}},
                            {"tap": "确定"}, {"answer": "已新建文本文件 {marker}.txt"}],
}
ALREADY = ("settings-wlan-on",)
"""Run with their own (right) scripts on a phone where their goal already holds, and no setup to leave it."""


def test_nothing_done_done_wrong_or_already_done_never_passes(virtual_phone: SimPhone, tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for tid, steps in WRONG.items():
        (scripts / f"{tid}.yaml").write_text(yaml.safe_dump({"steps": steps}, allow_unicode=True), encoding="utf-8")
    for tid in ALREADY:
        (scripts / f"{tid}.yaml").write_text((SCRIPTS / f"{tid}.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    # A fresh phone has Wi-Fi on.
    tasks = scripted_tasks(tmp_path / "tasks", tuple(f"write/{tid}" for tid in (*WRONG, *ALREADY)))
    result = sweep(sweep_request(tmp_path, tasks, run_id="st2",
                                 host=HostSettings(policy="scripted", scripts_dir=scripts)))
    records = _by_task(read_records(result.run_dir / "records.jsonl"))
    assert set(records) == {*WRONG, *ALREADY}
    assert not any(r.passed for r in records.values())
    for tid in ALREADY:
        rec = records[tid]
        assert (rec.outcome, rec.failure_category) == ("skipped", "invalid_start"), (tid, rec.reasons)
    assert "setting_global:wifi_on is '1'" in records["settings-wlan-on"].reasons[0]
    details = {tid: " ".join(_state_details(records[tid])) for tid in WRONG}
    assert all(records[tid].failure_category != "invalid_start" for tid in WRONG)
    # Both volume tasks ran on one phone in either order: each compares its own before with its own after.
    same = re.fullmatch(r"volumes: '(\d+)' before, '(\d+)' after: not increased", details["settings-media-volume-up"])
    assert same is not None and same[1] == same[2], details
    up = re.fullmatch(r"volumes: '(\d+)' before, '(\d+)' after: not decreased", details["settings-media-volume-down"])
    assert up is not None and int(up[2]) == int(up[1]) + 1, details
    assert "no row of contacts with display_name ∋ 'AF-st2-hotline', data1 ∋ '12315'" in details[
        "contacts-save-hotline"]
    assert "no row of files:Download with name ∋ 'AF-st2-dl'" in details["files-download-folder"]
    memo = [c for c in records["files-download-memo"].checks if c.type == "state"]
    assert [c.passed for c in memo] == [True, False], memo
    assert memo[1].detail == ("file_head:Download/AF-st2-memo.txt lacks '周五下午三点开会' after the attempt: "
                              "'周五下午四点开会'")


def test_a_volume_already_at_its_maximum_is_set_back_by_setup_and_the_raise_is_the_agents(
    virtual_phone: SimPhone, tmp_path: Path
) -> None:
    _device(virtual_phone).shell("settings put system volume_alarm_speaker 7")
    tasks = scripted_tasks(tmp_path / "tasks", ("write/settings-alarm-volume-up",))
    result = sweep(sweep_request(tmp_path, tasks, run_id="st3"))
    (rec,) = read_records(result.run_dir / "records.jsonl")
    assert rec.passed, rec.reasons
    assert str(rec.extra["setup"]).startswith("setup reached a start state (cmd media_session volume --stream 4 "
                                              "--set 3)")
    assert _state_details(rec) == ["volumes: '3' before, '4' after: increased"]
