"""Human re-judgement: evidence must be in the run record; reports show initial and final verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.android.paths import raw_dir
from farm.errors import FarmError
from farm.report.markdown import render_markdown
from farm.results.aggregate import aggregate
from farm.scoring.overrides import load_overrides_yaml, parse_summary_section
from tests.helpers.records import record, write_run


def _run(tmp_path: Path) -> Path:
    recs = [
        record("t1", run="r", device="S1", passed=False, answer="结果是 56 088"),
        record("t2", run="r", device="S1", passed=False, answer="最高温度 21°C"),
        record("t3", run="r", device="S1", passed=True, answer="ok"),
    ]
    run_dir = write_run(tmp_path, "r", recs, [("S1", "Pixel 7")])
    steps = raw_dir(run_dir, "S1", "all") / "t1" / "run" / "steps.jsonl"
    steps.parent.mkdir(parents=True)
    steps.write_text(json.dumps({"observation": {"text": "计算结果 56,088"}}, ensure_ascii=True) + "\n")
    return run_dir


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
    assert "| r | t1 | Pixel 7 #1 | fail | pass |  | yes |" in md
    assert "| r | t2 | Pixel 7 #1 | fail | fail |  | no | refused: evidence is not screen text" in md


def test_override_from_the_summary_section_uses_the_answer_as_evidence(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    summary = raw_dir(run_dir, "S1", "all") / "summary.md"
    summary.write_text("# 汇总\n\n## 人工改判\n\n- t2: 没通过 → 通过,证据:「最高温度 21°C」\n", encoding="utf-8")
    data = aggregate([run_dir]).data
    (row,) = data.overrides
    assert row.task_id == "t2" and row.applied and row.final == "pass"


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
    assert "| r | w | Pixel 7 #1 | fail | fail | route → perception | yes |" in render_markdown(d)
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
    from farm.results import overrides_apply

    run_dir = _categorised(tmp_path, "- {id: w, category: perception, evidence: '最高温度 21°C'}\n")
    few = aggregate([run_dir]).data.failure_categories
    monkeypatch.setattr(overrides_apply, "FEW_OVERRIDES", 0)
    assert aggregate([run_dir]).data.failure_categories == few
