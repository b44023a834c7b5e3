"""`farm desktop report`: JSON key names and values, interim labelling, one batch of one kind only."""

from __future__ import annotations

import json
from pathlib import Path

from farm.desktop.batch import init_batch, record_result
from farm.desktop.tasks import task_ids
from tests.helpers.desktop import farm, planned_batch, results_dir, write_config, write_result

STAT_KEYS = {
    "planned", "recorded", "pending", "complete", "success", "failed", "blocked", "cancelled",
    "finalSuccessRate", "autonomousSuccessRate", "successfulFractionOfPlan",
    "durationMedianMs", "durationP95Ms", "successDurationMedianMs", "successDurationP95Ms",
    "humanInterventions", "plannerHandoffs", "actions", "wrongActions", "wrongActionRatio", "runsWithWrongActions",
}  # fmt: skip


def _record_all(b0: Path, results: list[tuple[str, dict[str, object]]]) -> Path:
    current = b0
    for i, (slot, kwargs) in enumerate(results, start=1):
        result = write_result(b0.parent / f"result-{i}.json", **kwargs)  # type: ignore[arg-type]
        out = b0.parent / f"batch-{i:03d}.json"
        record_result(current, slot, result, out)
        current = out
    return current


def test_report_json_has_exactly_the_documented_keys(tmp_path: Path) -> None:
    _, b0 = planned_batch(tmp_path)
    outcome = farm("desktop", "report", b0, "--json")
    assert outcome.code == 0, outcome.stderr
    report = json.loads(outcome.stdout)
    assert set(report["overall"]) == STAT_KEYS
    assert list(report["tasks"]) == task_ids()
    assert all(set(stats) == STAT_KEYS for stats in report["tasks"].values())


def test_report_of_an_empty_batch_is_null_not_zero(tmp_path: Path) -> None:
    _, b0 = planned_batch(tmp_path)
    overall = json.loads(farm("desktop", "report", b0, "--json").stdout)["overall"]
    assert overall["finalSuccessRate"] is None and overall["autonomousSuccessRate"] is None
    assert overall["durationMedianMs"] is None and overall["durationP95Ms"] is None
    assert overall["wrongActionRatio"] is None
    assert (overall["planned"], overall["recorded"], overall["pending"]) == (12, 0, 12)


def test_report_values_match_hand_computed_ones(tmp_path: Path) -> None:
    _, b0 = planned_batch(tmp_path)
    latest = _record_all(
        b0,
        [
            ("calculator-add/1", {"duration_ms": 20_000, "actions": 10}),
            ("calculator-add/2", {"duration_ms": 30_000, "actions": 12, "wrongActions": 2, "humanInterventions": 1}),
            ("browser-form/1", {"status": "failed", "duration_ms": 180_000, "actions": 30, "wrongActions": 3,
                                "reason": "timeout"}),
            ("browser-delayed/1", {"status": "cancelled", "duration_ms": 5_000, "actions": 0,
                                   "reason": "operator stopped"}),
        ],
    )  # fmt: skip
    outcome = farm("desktop", "report", latest, "--json")
    report = json.loads(outcome.stdout)
    overall = report["overall"]
    assert report["status"] == "interim" and report["label"].startswith("阶段性结果")
    assert report["chain"] == {"verified": True, "versions": 5, "problem": None}
    assert (overall["success"], overall["failed"], overall["blocked"], overall["cancelled"]) == (2, 1, 0, 1)
    assert overall["finalSuccessRate"] == 0.5
    assert overall["autonomousSuccessRate"] == 0.25
    assert overall["successfulFractionOfPlan"] == 2 / 12
    assert (overall["durationMedianMs"], overall["durationP95Ms"]) == (20_000, 180_000)
    assert (overall["successDurationMedianMs"], overall["successDurationP95Ms"]) == (20_000, 30_000)
    assert (overall["actions"], overall["wrongActions"], overall["runsWithWrongActions"]) == (52, 5, 2)
    assert overall["wrongActionRatio"] == 5 / 52
    add = report["tasks"]["calculator-add"]
    assert (add["complete"], add["finalSuccessRate"], add["autonomousSuccessRate"]) == (True, 1.0, 0.5)
    assert report["tasks"]["calculator-chain"]["finalSuccessRate"] is None
    assert [n["slot"] for n in report["notSucceeded"]] == ["browser-form/1", "browser-delayed/1"]


def test_markdown_labels_an_incomplete_batch_interim(tmp_path: Path) -> None:
    _, b0 = planned_batch(tmp_path)
    latest = _record_all(b0, [("calculator-add/1", {})])
    outcome = farm("desktop", "report", latest)
    assert outcome.code == 0
    assert "**阶段性结果 (interim)**: 1 of 12 slots recorded, 11 pending." in outcome.stdout
    assert "| calculator-chain | 2 | 0 | 2 | 0 | 0 | 0 | 0 | — |" in outcome.stdout


def test_complete_batch_is_not_labelled_interim(tmp_path: Path) -> None:
    _, b0 = planned_batch(tmp_path, repetitions=1)
    latest = _record_all(b0, [(f"{task}/1", {"duration_ms": 1000 * (i + 1)}) for i, task in enumerate(task_ids())])
    report = json.loads(farm("desktop", "report", latest, "--json").stdout)
    assert report["status"] == "complete" and report["overall"]["complete"] is True
    assert report["overall"]["finalSuccessRate"] == 1.0
    # six durations 1000..6000: P50 rank 3, P95 rank ⌈5.7⌉ = 6
    assert (report["overall"]["durationMedianMs"], report["overall"]["durationP95Ms"]) == (3000, 6000)
    markdown = farm("desktop", "report", latest).stdout
    assert "阶段性结果" not in markdown and "all 6 slots recorded" in markdown


def test_report_refuses_more_than_one_batch(tmp_path: Path) -> None:
    _, b0 = planned_batch(tmp_path)
    latest = _record_all(b0, [("calculator-add/1", {})])
    outcome = farm("desktop", "report", b0, latest)
    assert outcome.code == 2
    assert "summarises exactly one batch, got 2" in outcome.stderr


def test_report_refuses_mixed_kinds(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    native = directory / "native-000.json"
    jev = directory / "jev-000.json"
    init_batch(write_config(directory, "native.json"), native)
    init_batch(write_config(directory, "jev.json", mode="jev", jevModel="jev-latest"), jev)
    outcome = farm("desktop", "report", native, jev)
    assert outcome.code == 2
    assert "mixed kinds (jev/live, native/live)" in outcome.stderr


def test_markdown_says_a_controlled_batch_is_not_live(tmp_path: Path) -> None:
    directory = results_dir(tmp_path)
    batch = directory / "b.json"
    init_batch(write_config(directory, execution="controlled"), batch)
    assert "NOT a live result" in farm("desktop", "report", batch).stdout


def test_markdown_lists_reasons_of_runs_that_did_not_succeed(tmp_path: Path) -> None:
    _, b0 = planned_batch(tmp_path)
    latest = _record_all(b0, [("browser-form/1", {"status": "blocked", "reason": "no Chrome\nprofile | locked"})])
    markdown = farm("desktop", "report", latest).stdout
    assert "| browser-form/1 | blocked | no Chrome profile / locked |" in markdown
