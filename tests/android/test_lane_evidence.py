"""The android lane hands results its records' evidence paths and the summary files it pulled."""

from __future__ import annotations

import json
from pathlib import Path

from farm import manifest as mf
from farm.android.options import AgentOptions
from farm.android.pull_run import pull_run
from farm.config import FarmConfig
from farm.report.aggregate import aggregate
from farm.results.store import read_records, try_dir
from farm.sweep.dev_run import run, run_request
from tests.helpers.records import score_line, scores_text, write_tasks

EVAL = "/sdcard/Android/data/dev.agentfarm.simagent/files/eval"


def test_a_run_names_each_records_run_record_and_each_phones_summary(virtual_farm, tmp_path: Path) -> None:
    phone = virtual_farm(1)[0]
    result = run(run_request(agent=AgentOptions(split="tune"), all_phones=True, tasks_dir=write_tasks(tmp_path / "t"),
                            runs_dir=tmp_path / "runs", show_progress=False, run_id="r1", idle_timeout_s=60))
    run_dir = result.run_dir
    records = read_records(run_dir / "records.jsonl")
    ran = [r for r in records if r.outcome != "skipped"]
    # Each unit's try has its own tree: `android/<serial>/units/<unit>.try1/<id>/run`.
    tries = {r.task_id: try_dir(run_dir, phone.serial, str(r.extra["unit"]), r.attempt) for r in ran}
    assert ran and all(r.evidence == f"{tries[r.task_id].relative_to(run_dir)}/{r.task_id}/run" for r in ran)
    assert all((run_dir / str(r.evidence)).is_dir() for r in ran)
    assert all(r.evidence is None for r in records if r.outcome == "skipped")
    (lane,) = mf.load(run_dir).lanes
    assert sorted(s.path for s in lane.override_sources) == sorted(
        str((t / "summary.md").relative_to(run_dir)) for t in tries.values())
    assert {s.device for s in lane.override_sources} == {phone.serial}
    # A re-judgement written into that summary reaches the report (the answer is the quoted evidence).
    answered = next(r for r in ran if r.answer and r.outcome != "error")
    verdict, other = ("pass", "fail") if answered.passed else ("fail", "pass")
    with (tries[answered.task_id] / "summary.md").open("a", encoding="utf-8") as fh:
        fh.write(f"\n- {answered.task_id}: {verdict} → {other}, 证据:「{answered.answer}」\n")
    (row,) = aggregate([run_dir]).data.overrides
    assert row.applied and (row.task_id, row.initial, row.final) == (answered.task_id, verdict, other)
    assert phone.serial not in row.note


def test_a_pull_names_the_run_records_and_the_summary(virtual_farm, tmp_path: Path) -> None:
    phone = virtual_farm(1)[0]
    (tmp_path / "tasks" / "read").mkdir(parents=True)
    task = {"id": "t1", "goal": "只看:告诉我答案", "category": "read", "partition": "tune", "expect": "succeeded",
            "checks": [{"type": "answer_contains", "text": "42"}]}
    (tmp_path / "tasks" / "read" / "t1.json").write_text(json.dumps(task, ensure_ascii=False), encoding="utf-8")
    tree = phone.state.host_path(f"{EVAL}/nightly")
    (tree / "t1" / "run").mkdir(parents=True)
    (tree / "scores.jsonl").write_text(scores_text(score_line("t1"), score_line("t2")))
    (tree / "t1" / "run" / "final.json").write_text(json.dumps({"answer": "答案是 41"}))
    (tree / "summary.md").write_text("## 人工改判\n- t1: fail → pass, 证据:「答案是 41」\n", encoding="utf-8")
    cfg = FarmConfig(tasks_dir=str(tmp_path / "tasks"))
    for _ in range(2):
        summary = pull_run(cfg, serial=phone.serial, run="nightly", split="tune", runs_dir=tmp_path / "runs",
                           profile=None)
    run_dir = summary.run_dir
    evidence = {r.task_id: r.evidence for r in read_records(run_dir / "records.jsonl")}
    # t2 has a scores line but no run record was pulled: its record names none.
    assert evidence == {"t1": f"{summary.raw.relative_to(run_dir)}/t1/run", "t2": None}
    (lane,) = mf.load(run_dir).lanes
    assert [s.model_dump() for s in lane.override_sources] == [
        {"path": f"{summary.raw.relative_to(run_dir)}/summary.md", "device": phone.serial}
    ]
    rows = {o.task_id: o for o in aggregate([run_dir]).data.overrides}
    assert rows["t1"].applied and rows["t1"].final == "pass"


def test_a_sweep_names_each_tries_run_record(virtual_farm, tmp_path: Path) -> None:
    from farm.sweep.sweep import sweep
    from tests.helpers.sweep import scripted_tasks, sweep_request

    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    result = sweep(sweep_request(tmp_path, tasks, run_id="s1"))
    (rec,) = read_records(result.run_dir / "records.jsonl")
    assert rec.evidence is not None and rec.evidence.endswith(f".try1/{rec.task_id}/run")
    assert (result.run_dir / rec.evidence).is_dir()
