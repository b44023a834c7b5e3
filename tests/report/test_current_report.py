"""A run's current report is always `runs/<id>/report.*`; its headline (`headline.json`) is what every surface
shows: holdout counted as the run planned it, every planned unit in `planned`."""

from __future__ import annotations

import json
import re
from pathlib import Path

from farm import manifest as mf
from farm.report.build import build
from farm.report.headline import headline_text, read_headline
from farm.view.runs import list_runs
from tests.helpers.records import record, write_run


def _run(runs: Path, *, split: str = "all", planned: dict[str, int] | None = None) -> Path:
    records = [
        record("t1", run="r", partition="tune", passed=True),
        record("t2", run="r", partition="tune", passed=False),
        record("h1", run="r", partition="holdout", passed=False),
    ]
    run_dir = write_run(runs, "r", records, phones=[("SER1", "Pixel 7")])
    detail: dict[str, object] = {"split": split}
    if planned is not None:
        detail["planned_units"] = planned
    mf.add_lane(run_dir, mf.LaneEntry(lane="android", detail=detail))  # type: ignore[arg-type]
    return run_dir


def _md_headline(run_dir: Path) -> str:
    text = (run_dir / "report.md").read_text(encoding="utf-8")
    found = re.search(r"planned \d+ .*?\)", text)
    assert found, text[:2000]
    return found.group(0)


def test_a_rebuilt_report_replaces_the_current_one_and_keeps_the_old(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    first = build([run_dir]).paths
    assert first[0] == run_dir / "report.md"
    old = (run_dir / "report.md").read_bytes()
    build([run_dir], include_holdout=False)
    (archived,) = (run_dir / "reports").iterdir()
    assert (archived / "report.md").read_bytes() == old
    assert sorted(p.name for p in archived.iterdir()) == ["headline.json", "junit.xml", "report.html", "report.md",
                                                          "scores.csv"]
    assert f"reports/{archived.name}/report.md" in (run_dir / "report.md").read_text(encoding="utf-8")
    assert not [p for p in run_dir.iterdir() if p.name.startswith(".report-")]


def test_holdout_counts_where_the_run_planned_it(tmp_path: Path) -> None:
    built = build([_run(tmp_path / "all", split="all")])
    assert (built.data.include_holdout, built.data.overall.planned) == (True, 3)
    tune = build([_run(tmp_path / "tune", split="tune")])
    assert (tune.data.include_holdout, tune.data.overall.planned, tune.data.hidden_holdout_attempts) == (False, 2, 1)
    assert "holdout hidden (1 units)" in (read_headline(tmp_path / "tune" / "r") or tune).text  # type: ignore[union-attr]


def test_planned_counts_units_a_stop_left_without_a_record(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, planned={"tune": 5, "holdout": 2})
    head = build([run_dir]).data.overall
    assert (head.planned, head.unfinished, head.skipped, head.attempted, head.passed) == (7, 4, 0, 3, 1)
    assert "planned 7 · unfinished 4 · skipped 0 · attempted 3" in _md_headline(run_dir)


def test_every_surface_shows_the_headline_the_report_wrote(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, planned={"tune": 4, "holdout": 1})
    built = build([run_dir])
    written = read_headline(run_dir)
    assert written is not None and written.overall == built.data.overall
    assert written.text == headline_text(built.data.overall) == _md_headline(run_dir)
    (listed,) = list_runs(tmp_path)
    assert listed.headline == built.data.overall and listed.headline_text == written.text
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert f"planned {written.overall.planned}" in html
    junit = (run_dir / "junit.xml").read_text(encoding="utf-8")
    assert f'tests="{written.overall.planned - written.overall.unfinished}"' in junit
    saved = json.loads((run_dir / "headline.json").read_text(encoding="utf-8"))
    assert saved["overall"]["rate"] == built.data.overall.rate
