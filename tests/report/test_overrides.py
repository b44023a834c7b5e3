"""Human re-judgement: evidence must be in the run record; reports show initial and final verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm import manifest as mf
from farm.errors import FarmError
from farm.report.aggregate import aggregate
from farm.report.markdown import render_markdown
from farm.report.overrides_apply import NO_EVIDENCE, OUTSIDE_RUN
from farm.scoring.overrides import load_overrides_yaml, parse_summary_section
from tests.helpers.records import evidence_path, record, write_run

SUMMARY = "pulled/S1/summary.md"
"""Where `_run` says the lane pulled S1's summary (any path inside the run: results never guess it)."""


def _run(tmp_path: Path, sources: list[tuple[str, str]] | None = None) -> Path:
    recs = [
        record("t1", run="r", device="S1", passed=False, answer="结果是 56 088"),
        record("t2", run="r", device="S1", passed=False, answer="最高温度 21°C"),
        record("t3", run="r", device="S1", passed=True, answer="ok"),
    ]
    run_dir = write_run(tmp_path, "r", recs, [("S1", "Pixel 7")], override_sources=sources)
    steps = run_dir / evidence_path("android", "S1", "t1") / "steps.jsonl"
    steps.parent.mkdir(parents=True)
    steps.write_text(json.dumps({"observation": {"text": "计算结果 56,088"}}, ensure_ascii=True) + "\n")
    return run_dir


def _summary(run_dir: Path, path: str, body: str) -> None:
    summary = run_dir / path
    summary.parent.mkdir(parents=True, exist_ok=True)
    summary.write_text(f"# 汇总\n\n## 人工改判\n\n{body}\n", encoding="utf-8")


def test_override_with_evidence_from_a_screen_read_is_applied(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    (run_dir / "overrides.yaml").write_text(
        "- {id: t1, from: fail, to: pass, evidence: '「56,088」'}\n"
        "- {id: t3, from: fail, to: pass, evidence: ok}\n"
        "- {id: t2, from: fail, to: pass, evidence: 'not in the record'}\n",
        encoding="utf-8",
    )
    data = aggregate([run_dir]).data
    rows = {o.task_id: o for o in data.overrides}
    assert rows["t1"].applied and (rows["t1"].initial, rows["t1"].final) == ("fail", "pass")
    assert not rows["t3"].applied and "initial verdict is pass" in rows["t3"].note
    assert not rows["t2"].applied and rows["t2"].note.startswith("refused: evidence is not screen text")
    assert (data.overall.attempted, data.overall.passed) == (3, 2)
    md = render_markdown(data)
    assert "| r | t1 | Pixel 7 · S1 | fail | pass |  | yes |" in md
    assert "| r | t2 | Pixel 7 · S1 | fail | fail |  | no | refused: evidence is not screen text" in md


def test_override_from_the_summary_section_uses_the_answer_as_evidence(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, sources=[(SUMMARY, "S1")])
    _summary(run_dir, SUMMARY, "- t2: 没通过 → 通过,证据:「最高温度 21°C」")
    data = aggregate([run_dir]).data
    (row,) = data.overrides
    assert row.task_id == "t2" and row.applied and row.final == "pass"
    # The source is shown by the phone's name, not by the path it was pulled to.
    assert row.note == "applied (Pixel 7 · S1/summary.md:5)"


def test_a_summary_the_manifest_does_not_name_is_not_read(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    # Where the android lane keeps a phone's pulled tree: results do not look there on their own.
    _summary(run_dir, "android/S1/all/raw/summary.md", "- t2: 没通过 → 通过,证据:「最高温度 21°C」")
    assert aggregate([run_dir]).data.overrides == []


def test_a_named_summary_applies_to_its_own_phone_only(tmp_path: Path) -> None:
    recs = [record("t2", run="r", device=s, passed=False, answer="最高温度 21°C") for s in ("S1", "S2")]
    run_dir = write_run(tmp_path, "r", recs, [("S1", "Pixel 7"), ("S2", "Pixel 7")],
                        override_sources=[(SUMMARY, "S2"), ("gone/summary.md", "S1")])
    _summary(run_dir, SUMMARY, "- t2: 没通过 → 通过,证据:「最高温度 21°C」")
    d = aggregate([run_dir]).data
    assert [(o.device, o.applied) for o in d.overrides] == [("Pixel 7 · S2", True)]
    assert (d.overall.attempted, d.overall.passed) == (2, 1)


def test_an_override_on_a_record_without_evidence_may_quote_only_its_answer(tmp_path: Path) -> None:
    recs = [record("t2", run="r", device="S1", passed=False, answer="最高温度 21°C", evidence=None),
            record("t3", run="r", device="S1", passed=False, answer="不知道", evidence=None)]
    run_dir = write_run(tmp_path, "r", recs, [("S1", "Pixel 7")])
    (run_dir / "overrides.yaml").write_text("- {id: t2, from: fail, to: pass, evidence: '最高温度 21°C'}\n"
                                            "- {id: t3, from: fail, to: pass, evidence: '最高温度 21°C'}\n")
    d = aggregate([run_dir]).data
    rows = {o.task_id: o for o in d.overrides}
    assert rows["t2"].applied and rows["t2"].final == "pass"
    assert not rows["t3"].applied and rows["t3"].note == NO_EVIDENCE
    assert d.overall.passed == 1
    assert NO_EVIDENCE in render_markdown(d)


def test_an_override_on_evidence_outside_the_run_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "run"
    outside.mkdir(parents=True)
    (outside / "steps.jsonl").write_text(json.dumps({"observation": {"text": "最高温度 21°C"}}) + "\n")
    recs = [record("t2", run="r", device="S1", passed=False, evidence="../elsewhere/run")]
    run_dir = write_run(tmp_path, "r", recs, [("S1", "Pixel 7")])
    (run_dir / "overrides.yaml").write_text("- {id: t2, from: fail, to: pass, evidence: '最高温度 21°C'}\n")
    (row,) = aggregate([run_dir]).data.overrides
    assert not row.applied and row.note == OUTSIDE_RUN


def test_the_evidence_a_record_names_is_what_an_override_may_quote(tmp_path: Path) -> None:
    recs = [record("t1", run="r", device="S1", passed=False, evidence="somewhere/t1/run"),
            record("t1", run="r", device="S2", passed=False)]
    run_dir = write_run(tmp_path, "r", recs, [("S1", "Pixel 7"), ("S2", "Pixel 7")])
    steps = run_dir / "somewhere" / "t1" / "run" / "steps.jsonl"
    steps.parent.mkdir(parents=True)
    steps.write_text(json.dumps({"observation": {"text": "计算结果 56,088"}}) + "\n")
    (run_dir / "overrides.yaml").write_text("- {id: t1, from: fail, to: pass, evidence: '56,088'}\n")
    rows = {o.device: o for o in aggregate([run_dir]).data.overrides}
    assert rows["Pixel 7 · S1"].applied
    assert not rows["Pixel 7 · S2"].applied and rows["Pixel 7 · S2"].note.startswith("refused: evidence is not")


@pytest.mark.parametrize("path", ["/etc/summary.md", "../other/summary.md", "a/../../summary.md", "C:\\x.md", ""])
def test_an_override_source_outside_the_run_directory_is_invalid(path: str) -> None:
    with pytest.raises(ValueError, match="override_sources|path"):
        mf.LaneEntry(lane="android", override_sources=[mf.OverrideSource(path=path, device="S1")])


def test_adding_a_lane_again_merges_its_override_sources(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r", [])
    for paths in (["a/summary.md"], ["a/summary.md", "b/summary.md"]):
        mf.add_lane(run_dir, mf.LaneEntry(
            lane="android", override_sources=[mf.OverrideSource(path=p, device="S1") for p in paths],
        ))
    (lane,) = mf.load(run_dir).lanes
    assert [s.path for s in lane.override_sources] == ["a/summary.md", "b/summary.md"]


def test_parse_summary_section_ignores_other_sections() -> None:
    text = (
        "## 运行小结\n- t9: fail → pass, evidence: x\n"
        "## 人工改判\n| id | from | to | evidence |\n|---|---|---|---|\n| t1 | fail | pass | 56 |\n"
    )
    specs = parse_summary_section(text)
    assert [(s.id, s.from_, s.to, s.evidence) for s in specs] == [("t1", "fail", "pass", "56")]


def test_bad_overrides_file_is_a_farm_error(tmp_path: Path) -> None:
    path = tmp_path / "overrides.yaml"
    path.write_text("- {id: t1, from: maybe, to: pass, evidence: x}\n")
    with pytest.raises(FarmError, match="overrides\\[0\\]"):
        load_overrides_yaml(path)


def _categorised(tmp_path: Path, overrides: str) -> Path:
    recs = [
        record("w", run="r", device="S1", passed=False, failure_category="route", answer="最高温度 21°C"),
        record("p", run="r", device="S1", passed=True, answer="ok 42"),
        record("e", run="r", device="S1", passed=False, outcome="error", answer="ok 42"),
    ]
    run_dir = write_run(tmp_path, "r", recs, [("S1", "Pixel 7")])
    (run_dir / "overrides.yaml").write_text(overrides, encoding="utf-8")
    return run_dir


def test_a_category_only_override_changes_the_failure_category(tmp_path: Path) -> None:
    run_dir = _categorised(tmp_path, "- {id: w, category: perception, evidence: '最高温度 21°C'}\n")
    agg = aggregate([run_dir])
    d = agg.data
    (row,) = d.overrides
    assert row.applied and (row.initial, row.final) == ("fail", "fail")
    assert (row.category_from, row.category_to) == ("route", "perception")
    cats = {c.key: c.count for c in d.failure_categories}
    assert cats == {"perception": 1, "infrastructure": 1}
    assert (d.overall.attempted, d.overall.passed) == (3, 1)
    assert "| r | w | Pixel 7 · S1 | fail | fail | route → perception | yes |" in render_markdown(d)
    assert [f.failure_category for f in d.failures if f.task_id == "w"] == ["perception"]
    from farm.report.writers import render_csv

    assert ",perception," in next(ln for ln in render_csv(agg).splitlines() if ln.startswith("r,w,"))


def test_a_refused_category_override_keeps_the_category(tmp_path: Path) -> None:
    run_dir = _categorised(tmp_path, "- {id: w, category: perception, evidence: 'never shown'}\n")
    d = aggregate([run_dir]).data
    (row,) = d.overrides
    assert not row.applied and (row.category_from, row.category_to) == ("route", "route")
    assert {c.key: c.count for c in d.failure_categories} == {"route": 1, "infrastructure": 1}


def test_a_pass_to_fail_override_applies_its_category(tmp_path: Path) -> None:
    run_dir = _categorised(tmp_path, "- {id: p, from: pass, to: fail, category: barrier, evidence: ok 42}\n")
    d = aggregate([run_dir]).data
    assert d.overrides[0].applied and d.overall.passed == 0
    assert {c.key: c.count for c in d.failure_categories} == {"barrier": 1, "infrastructure": 1, "route": 1}


def test_an_override_of_an_infrastructure_error_is_refused(tmp_path: Path) -> None:
    run_dir = _categorised(tmp_path, "- {id: e, from: fail, to: pass, evidence: ok 42}\n")
    d = aggregate([run_dir]).data
    (row,) = d.overrides
    assert not row.applied and row.note == "refused: infrastructure error, no agent verdict"
    assert (d.overall.passed, d.overall.errors) == (1, 1)


def test_many_category_overrides_give_the_same_categories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from farm.report import overrides_apply

    run_dir = _categorised(tmp_path, "- {id: w, category: perception, evidence: '最高温度 21°C'}\n")
    few = aggregate([run_dir]).data.failure_categories
    monkeypatch.setattr(overrides_apply, "FEW_OVERRIDES", 0)
    assert aggregate([run_dir]).data.failure_categories == few


@pytest.mark.parametrize("quote", ["simulated", "btn_login_entry", "TextView", "56"])
def test_evidence_outside_screen_text_and_answer_is_refused(tmp_path: Path, quote: str) -> None:
    # A check detail, a resource id, a class name, a number inside a bigger one: none is evidence.
    run_dir = write_run(tmp_path, "r", [record("t1", run="r", device="S1", passed=False, answer="结果 56088")],
                        [("S1", "Pixel 7")])
    run_record = run_dir / evidence_path("android", "S1", "t1")
    run_record.mkdir(parents=True)
    (run_record / "steps.jsonl").write_text(
        json.dumps({"observation": {"text": '[1] TextView "计算器" (btn_login_entry) click'}}) + "\n")
    (run_record / "final.json").write_text(json.dumps({"answer": "结果 56088", "checks": [{"detail": "simulated"}]}))
    (run_dir / "overrides.yaml").write_text(f"- {{id: t1, from: fail, to: pass, evidence: '{quote}'}}\n")
    (row,) = aggregate([run_dir]).data.overrides
    assert not row.applied and "refused" in row.note


def test_a_summary_from_the_phone_past_its_cap_is_not_read_and_the_table_says_so(tmp_path: Path) -> None:
    from farm.report.overrides_apply import MAX_SUMMARY_BYTES

    run_dir = _run(tmp_path, sources=[(SUMMARY, "S1")])
    _summary(run_dir, SUMMARY, "- t2: 没通过 → 通过,证据:「最高温度 21°C」")
    with (run_dir / SUMMARY).open("r+b") as handle:  # sparse: the size a phone could claim, no memory spent
        handle.truncate(MAX_SUMMARY_BYTES + 1)
    data = aggregate([run_dir]).data
    (row,) = data.overrides
    assert not row.applied and row.note == "refused: summary.md larger than 4 MiB: not read"
    assert (data.overall.passed, row.device) == (1, "Pixel 7 · S1")
