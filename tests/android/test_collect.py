"""`farm pull` of a run started elsewhere, from two phones into one run."""

from __future__ import annotations

import json
from pathlib import Path

from farm.android.pull_run import pull_run
from farm.config import FarmConfig
from farm.report.build import build
from tests.helpers.records import score_line, scores_text

EVAL = "/sdcard/Android/data/dev.agentfarm.simagent/files/eval"


def _task_set(root: Path) -> FarmConfig:
    """A one-task set (`t1`: the answer must say 42) and a config pointing at it."""
    (root / "read").mkdir(parents=True)
    task = {"id": "t1", "goal": "只看:告诉我答案", "category": "read", "partition": "tune", "expect": "succeeded",
            "checks": [{"type": "answer_contains", "text": "42"}]}
    (root / "read" / "t1.json").write_text(json.dumps(task, ensure_ascii=False), encoding="utf-8")
    return FarmConfig(tasks_dir=str(root))


def test_two_phones_pulled_into_one_run_are_both_in_the_manifest_and_report(virtual_farm, tmp_path: Path) -> None:
    phones = virtual_farm(2)
    cfg = _task_set(tmp_path / "tasks")
    for n, phone in enumerate(phones):
        tree = phone.state.host_path(f"{EVAL}/nightly")
        (tree / "t1" / "run").mkdir(parents=True)
        # Both phones say they failed; the host reads the transcripts: the first answered right.
        (tree / "scores.jsonl").write_text(scores_text(score_line("t1", passed=False, outcome="failed")))
        (tree / "t1" / "run" / "final.json").write_text(json.dumps({"answer": "答案是 42" if n == 0 else "不知道"}))
    for phone in phones:
        summary = pull_run(
            cfg, serial=phone.serial, run="nightly", split="tune", runs_dir=tmp_path / "runs", profile=None
        )
        assert summary.records == 1 and not summary.refused
        assert (summary.raw / "t1" / "run" / "final.json").is_file()
        assert "resolved at pull time" in summary.tasks_from
    tmp_path = tmp_path / "runs"
    manifest = json.loads((tmp_path / "nightly" / "manifest.json").read_text())
    assert sorted(p["serial"] for p in manifest["phones"]) == sorted(p.serial for p in phones)
    assert {p["agent_version"] for p in manifest["phones"]} == {"0.9.0"}
    assert manifest["status"] == "finished"  # a pulled run ran elsewhere: never left "running"
    names = {p.serial: f"Pixel 7 · {p.serial.rpartition(':')[2]}" for p in phones}
    assert {p["serial"]: p["name"] for p in manifest["phones"]} == names
    md = build([tmp_path / "nightly"]).paths[0].read_text(encoding="utf-8")
    assert all(f"| {name} | 1 |" in md for name in names.values())
    assert "| all | 2 | 1 | 0 | 50.0% |" in md


def test_pulling_a_phone_run_twice_adds_no_unit_twice(virtual_farm, tmp_path: Path) -> None:
    from farm.android.options import AgentOptions
    from farm.results.store import read_records
    from farm.sweep.dev_run import run, run_request
    from tests.helpers.records import write_tasks

    phone = virtual_farm(1)[0]
    tasks = write_tasks(tmp_path / "tasks")
    # A farm run leaves each try's tree and bundle on the phone (`eval/<run>.<unit>.<try>/`): pull one of them.
    run(run_request(agent=AgentOptions(split="tune"), all_phones=True, tasks_dir=tasks, runs_dir=tmp_path / "runs",
                    show_progress=False, run_id="r1", idle_timeout_s=60))
    device_run = sorted(p.name for p in phone.state.host_path(EVAL).iterdir() if p.name.startswith("r1."))[0]
    first = pull_run(FarmConfig(tasks_dir=str(tasks)), serial=phone.serial, run=device_run, split="all",
                     runs_dir=tmp_path / "runs", profile="sim")
    assert first.records == 1 and first.already == 0
    before = read_records(first.run_dir / "records.jsonl")
    for _ in range(2):
        summary = pull_run(FarmConfig(tasks_dir=str(tasks)), serial=phone.serial, run=device_run, split="all",
                           runs_dir=tmp_path / "runs", profile="sim")
        assert summary.records == 0 and summary.already == 1
        assert summary.tasks_from.startswith("the phone's bundle")
    after = read_records(first.run_dir / "records.jsonl")
    assert [r.attempt_key() for r in after] == [r.attempt_key() for r in before]


def test_a_pulled_task_with_a_marker_is_scored_against_the_phones_bundle(virtual_farm, tmp_path: Path) -> None:
    from farm.android.options import AgentOptions
    from farm.results.store import read_records
    from farm.sweep.dev_run import run, run_request
    from tests.helpers.records import SMALL_TASKS, write_tasks

    phone = virtual_farm(1)[0]
    tasks = write_tasks(tmp_path / "tasks", [t for t in SMALL_TASKS if t[1]["id"] == "notes-new"])
    run(run_request(agent=AgentOptions(split="tune"), serials=[phone.serial], tasks_dir=tasks,
                    runs_dir=tmp_path / "runs", show_progress=False, run_id="r1", idle_timeout_s=60))
    device_run = sorted(p.name for p in phone.state.host_path(EVAL).iterdir() if p.name.startswith("r1."))[0]
    # The bundle's marker is filled (`AF-r1-n1`): it is the task the phone ran, not a task file to refuse.
    summary = pull_run(FarmConfig(tasks_dir=str(tmp_path / "elsewhere")), serial=phone.serial, run=device_run,
                       split="all", runs_dir=tmp_path / "pulled", profile="sim")
    assert summary.tasks_from.startswith("the phone's bundle")
    (record,) = read_records(summary.run_dir / "records.jsonl")
    assert record.task_id == "notes-new"
    assert not any("not in the phone's bundle" in reason for reason in record.reasons), record.reasons
