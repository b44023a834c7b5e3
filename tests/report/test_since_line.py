"""The line under a run report's headline: what changed since the previous comparable run."""

from pathlib import Path

from farm.report.build import build
from tests.helpers.compare_runs import android, set_lanes
from tests.helpers.nights import night_records, write_night


def _reports(run_dir: Path) -> tuple[str, str]:
    paths = {p.name: p for p in build([run_dir]).paths}
    return paths["report.md"].read_text(encoding="utf-8"), paths["report.html"].read_text(encoding="utf-8")


def test_the_report_says_what_changed_since_the_previous_run(tmp_path: Path) -> None:
    write_night(tmp_path, "n1", night_records("n1", {("a", "P1"): True, ("b", "P1"): False, ("c", "P1"): True}), day=1)
    now = write_night(tmp_path, "n2", night_records("n2", {("a", "P1"): False, ("b", "P1"): True, ("c", "P1"): False}),
                      day=2)
    md, html = _reports(now)
    line = ("Since n1 (2026-12-01): rate 66.7% → 33.3%; 2 regressed (a on Pixel 8 · P1, c on Pixel 8 · P1), 1 fixed "
            "(b on Pixel 8 · P1), over 3 task × phone pairs judged in both runs")
    assert line in md and line in html
    # Under the headline, before the failures.
    assert md.index(line) < md.index("## Not passed")


def test_the_first_run_has_no_such_line(tmp_path: Path) -> None:
    now = write_night(tmp_path, "n1", night_records("n1", {("a", "P1"): True}), day=1)
    md, html = _reports(now)
    assert "Since " not in md and "Since " not in html


def test_a_hostile_phone_model_is_escaped_in_the_line(tmp_path: Path) -> None:
    phones = [("P1", "<img src=x onerror=alert(1)>|x")]
    write_night(tmp_path, "n1", night_records("n1", {("a", "P1"): True}), day=1, phones=phones)
    now = write_night(tmp_path, "n2", night_records("n2", {("a", "P1"): False}), day=2, phones=phones)
    md, html = _reports(now)
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    since = next(ln for ln in md.splitlines() if ln.startswith("Since n1"))
    assert "<img" not in since and "1 regressed" in since


def test_the_line_says_what_it_compared(tmp_path: Path) -> None:
    old = write_night(tmp_path, "n1", night_records("n1", {("a", "P1"): True}), day=1)
    now = write_night(tmp_path, "n2", night_records("n2", {("a", "P1"): False}), day=2)
    for run in (old, now):
        set_lanes(run, android(executor="instrument", split="tune", set="read"))
    md, html = _reports(now)
    said = ("Like with like: same label nightly; lane android: executor instrument, split tune, set read;"
            " no holdout planned.")
    assert said in md and said in html


def test_a_previous_run_of_another_executor_gives_no_line(tmp_path: Path) -> None:
    old = write_night(tmp_path, "n1", night_records("n1", {("a", "P1"): True}), day=1)
    now = write_night(tmp_path, "n2", night_records("n2", {("a", "P1"): False}), day=2)
    set_lanes(old, android(executor="host", split="tune"))
    set_lanes(now, android(executor="instrument", split="tune"))
    md, html = _reports(now)
    assert "Since " not in md and "Since " not in html


def test_a_previous_run_under_another_holdout_policy_gives_no_line(tmp_path: Path) -> None:
    old = write_night(tmp_path, "n1", night_records("n1", {("a", "P1"): True}), day=1)
    now = write_night(tmp_path, "n2", night_records("n2", {("a", "P1"): False}), day=2)
    for run in (old, now):
        set_lanes(run, android(split="all", planned_units={"tune": 1, "holdout": 1}))
    md = build([now], include_holdout=False).paths[0].read_text(encoding="utf-8")
    assert "Since " not in md


def test_a_hostile_label_is_escaped_in_the_line(tmp_path: Path) -> None:
    label = "<script>alert(1)</script>|*x*"
    write_night(tmp_path, "n1", night_records("n1", {("a", "P1"): True}), day=1, label=label)
    now = write_night(tmp_path, "n2", night_records("n2", {("a", "P1"): False}), day=2, label=label)
    md, html = _reports(now)
    assert "<script>" not in html and "same label &lt;script&gt;alert(1)&lt;/script&gt;|*x*;" in html
    since = next(ln for ln in md.splitlines() if ln.startswith("Since n1"))
    assert "<script>" not in since and "same label &lt;script&gt;alert(1)&lt;/script&gt;\\|\\*x\\*;" in since
