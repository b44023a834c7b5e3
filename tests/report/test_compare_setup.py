"""What a run measured, from its manifest: the settings that make two runs like with like, and how their
differences read."""

from __future__ import annotations

from pathlib import Path

from farm import manifest
from farm.report.paired import LaneSetup, RunSetup, Setting, SettingDiff
from farm.report.run_setup import differences, differences_text, lane_setup, run_setup
from tests.helpers.compare_runs import android, set_lanes
from tests.helpers.records import write_run


def _settings(lane: manifest.LaneEntry) -> list[tuple[str, str]]:
    return [(s.name, s.value) for s in lane_setup(lane).settings]


def _setup(run: str, **settings: str) -> RunSetup:
    return RunSetup(run=run, holdout="none planned",
                    lanes=[LaneSetup(lane="android", settings=[Setting(name=k, value=v) for k, v in settings.items()])])


def test_the_android_lane_reads_the_host_policy_and_model_from_its_request() -> None:
    lane = android(executor="host", split="tune", allow_irreversible=False,
                   request={"host": {"policy": "model", "model": "m1", "api_key_env": "KEY"}, "selection": None})
    assert _settings(lane) == [("executor", "host"), ("policy", "model"), ("model", "m1"), ("split", "tune")]


def test_a_task_selection_beyond_one_set_is_a_setting() -> None:
    lane = android(split="all", request={"selection": {"sets": ["read", "write"], "keyword": "calc"}})
    assert ("selection", "--set read --set write -k 'calc'") in _settings(lane)


def test_the_web_lane_records_its_suite_version_and_policy() -> None:
    lane = manifest.LaneEntry(lane="web", detail={"suiteVersion": 2, "policy": "scripted", "runs": 10,
                                                  "backends": ["chromium", "android-chrome"]})
    assert _settings(lane) == [("policy", "scripted"), ("suiteVersion", "2"),
                               ("backends", '["chromium", "android-chrome"]')]


def test_a_run_without_lanes_records_none_and_plans_no_holdout(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r", [])
    s = run_setup(run_dir, manifest.load(run_dir), include_holdout=True)
    assert (s.lanes, s.holdout) == ([], "none planned")


def test_a_run_of_split_all_without_planned_units_plans_holdout(tmp_path: Path) -> None:
    run_dir = set_lanes(write_run(tmp_path, "r", []), android(split="all", pulled=True))
    assert run_setup(run_dir, manifest.load(run_dir), include_holdout=False).holdout == "hidden"


def test_a_setting_only_one_run_records_differs_as_unset() -> None:
    diffs = differences(_setup("a", executor="host"), _setup("b", executor="host", profile="fast"))
    assert diffs == [SettingDiff(lane="android", name="profile", a="unset", b="fast")]


def test_several_differences_are_named_together() -> None:
    diffs = differences(_setup("a", executor="instrument", split="tune"), _setup("b", executor="host", split="all"))
    assert differences_text(diffs) == ("A and B differ in executor (instrument vs host) and split (tune vs all): "
                                       "this is an A/B of those settings.")
