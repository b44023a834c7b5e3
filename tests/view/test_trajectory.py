"""Loading a unit's steps: both executors' transcripts, and every way a run record can be damaged."""

from __future__ import annotations

import json
import os
from pathlib import Path

from farm.view import trajectory as tr
from farm.view.trajectory import load_trajectory, read_steps
from farm.view.units import load_units
from host_agent.transcript import CAP_NOTE
from tests.view.builders import EVIDENCE, JPEG, RUN, host_step, make_run, write_lines


def _load(run_dir: Path) -> tr.Trajectory:
    unit = load_units(run_dir).units[0]
    return load_trajectory(run_dir, RUN, unit)


def test_host_steps_show_screen_call_message_result_timings_and_screenshot(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    (run_dir / EVIDENCE / "shot-aa.jpg").write_bytes(JPEG)
    write_lines(run_dir / EVIDENCE / "steps.jsonl", [
        host_step(1, '[1] Button "7"', screenshot="shot-aa.jpg", message="tap seven", args={"ref": 1}),
        host_step(2, '[1] TextView "56086"', tool="answer", args={"text": "56086"}, result="answer recorded"),
    ])
    t = _load(run_dir)
    first, second = t.steps
    assert (first.number, first.tool, first.args, first.message) == (1, "tap", '{"ref": 1}', "tap seven")
    assert (first.screenshot, first.observation, first.ok, first.result) == (
        "shot-aa.jpg", '[1] Button "7"', True, "tapped")
    assert [(x.name, x.ms) for x in first.timings][:2] == [("screen read", 12.0), ("model", 850.0)]
    assert first.at == "+0.1 s" and first.package == "com.android.calculator2"
    assert (second.tool, second.result, second.screenshot, second.screenshot_note) == (
        "answer", "answer recorded", None, "no screenshot kept")
    assert t.problems == [f"{EVIDENCE}: no final.json (the attempt did not finish)"]


def test_a_torn_last_line_is_named_and_the_steps_before_it_are_kept(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    path = run_dir / EVIDENCE / "steps.jsonl"
    write_lines(path, [host_step(1, "screen one"), json.dumps(host_step(2, "screen two"))[:40]], end_newline=False)
    steps, problems = read_steps(run_dir, EVIDENCE)
    assert [s.observation for s in steps] == ["screen one"]
    assert problems == ["steps.jsonl:2: torn last line (the attempt was cut short), skipped"]


def test_a_bad_line_in_the_middle_is_a_step_with_its_problem_and_reading_goes_on(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    write_lines(run_dir / EVIDENCE / "steps.jsonl",
                [host_step(1, "one"), "{not json", "[1, 2]", "[" * 5000 + "]" * 5000, host_step(5, "five")])
    steps, problems = read_steps(run_dir, EVIDENCE)
    assert [s.observation for s in steps] == ["one", None, None, None, "five"]
    assert [s.problem is not None for s in steps] == [False, True, True, True, False]
    assert problems[:2] == ["steps.jsonl:2: not JSON, skipped", "steps.jsonl:3: not a step (a JSON list), skipped"]


def test_a_missing_screenshot_file_is_named_not_linked(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    write_lines(run_dir / EVIDENCE / "steps.jsonl", [host_step(1, "one", screenshot="shot-gone.jpg")])
    step = read_steps(run_dir, EVIDENCE)[0][0]
    assert (step.screenshot, step.screenshot_note) == (None, "screenshot file missing: shot-gone.jpg")


def test_a_screenshot_name_that_is_a_path_or_a_link_out_is_never_shown(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    outside = tmp_path / "secret.jpg"
    outside.write_bytes(JPEG)
    os.symlink(outside, run_dir / EVIDENCE / "shot-link.jpg")
    write_lines(run_dir / EVIDENCE / "steps.jsonl", [
        host_step(1, "one", screenshot="../../../../../../../secret.jpg"),
        host_step(2, "two", screenshot="shot-link.jpg"),
        host_step(3, "three", screenshot=CAP_NOTE),
    ])
    steps = read_steps(run_dir, EVIDENCE)[0]
    assert [s.screenshot for s in steps] == [None, None, None]
    assert steps[1].screenshot_note == "screenshot shot-link.jpg: leaves the run directory, not shown"
    assert steps[2].screenshot_note == CAP_NOTE


def test_a_huge_step_is_named_with_its_size_and_the_next_steps_still_load(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    huge = host_step(2, "x" * (tr.MAX_LINE_BYTES + 1000))
    write_lines(run_dir / EVIDENCE / "steps.jsonl", [host_step(1, "one"), huge, host_step(3, "three")])
    steps, problems = read_steps(run_dir, EVIDENCE)
    assert [s.observation for s in steps] == ["one", None, "three"]
    assert steps[1].problem is not None and "MB, too large to show here" in steps[1].problem
    assert problems == [steps[1].problem]


def test_a_long_screen_is_cut_and_says_how_much_was_left_out(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    write_lines(run_dir / EVIDENCE / "steps.jsonl", [host_step(1, "y" * (tr.MAX_TEXT_CHARS + 7))])
    step = read_steps(run_dir, EVIDENCE)[0][0]
    assert step.observation == "y" * tr.MAX_TEXT_CHARS
    assert step.observation_note == "screen: 7 more characters not shown"


def test_an_on_device_transcript_shows_what_it_has(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    # As the on-device agent writes it (see farm/sim/apps/simagent.py): no screen text but on the last step.
    write_lines(run_dir / EVIDENCE / "steps.jsonl", [
        {"step": 1, "at": "2026-12-01T15:06:36.779Z", "observation": {"digest": "c3", "chars": 3867},
         "action": {"type": "launch"}, "result": "ok", "timings": {"modelMs": 6214, "screenReadMs": 956}},
        {"step": 2, "observation": {"digest": "e5", "text": '[1] TextView "56088"'}, "action": {"type": "answer"},
         "result": "ok", "tokens": {"input": 10, "output": 2}},
    ])
    (run_dir / EVIDENCE / "final.json").write_text(json.dumps(
        {"id": "calc", "outcome": "succeeded", "passed": True, "answer": "56088", "reason": ""}), encoding="utf-8")
    t = _load(run_dir)
    first, second = t.steps
    assert (first.tool, first.result, first.at, first.observation) == ("launch", "ok", "2026-12-01T15:06:36.779Z", None)
    assert first.observation_note == "screen text not recorded by the agent (3,867 characters)"
    assert [(x.name, x.ms) for x in first.timings] == [("model", 6214.0), ("screen read", 956.0)]
    assert (second.observation, second.tokens) == ('[1] TextView "56088"', {"input": 10, "output": 2})
    assert t.evidence is None and t.phone_final == {"outcome": "succeeded", "passed": "true", "answer": "56088"}


def test_a_host_final_json_gives_the_evidence_the_checks_used(tmp_path: Path) -> None:
    from farm.scoring.transcript import FinalFile
    from tests.helpers.host import make_evidence

    run_dir = make_run(tmp_path)
    final = FinalFile(task_id="calc", run=RUN, evidence=make_evidence("s", answer="56086", end_reason="answered"),
                      outcome="failed", passed=False)
    (run_dir / EVIDENCE / "final.json").write_text(final.model_dump_json(by_alias=True), encoding="utf-8")
    write_lines(run_dir / EVIDENCE / "steps.jsonl", [host_step(1, "one")])
    t = _load(run_dir)
    assert t.evidence is not None and (t.evidence.answer, t.evidence.end) == ("56086", "answer")
    assert t.problems == []


def test_a_record_naming_a_run_record_outside_the_run_opens_nothing(tmp_path: Path) -> None:
    from tests.helpers.records import record

    (tmp_path / "elsewhere").mkdir()
    write_lines(tmp_path / "elsewhere" / "steps.jsonl", [host_step(1, "not this run's")])
    run_dir = make_run(tmp_path / "runs", records=[record("calc", run=RUN, evidence="../../elsewhere")])
    unit = load_units(run_dir).units[0]
    assert unit.evidence is None and unit.evidence_note == "../../elsewhere: outside the run directory, not opened"
    t = load_trajectory(run_dir, RUN, unit)
    assert t.steps == [] and t.problems == [unit.evidence_note]
