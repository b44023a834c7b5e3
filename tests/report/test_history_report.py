"""history.md and history.html, and the `farm history` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.report.history import default_out_dir, render_history_html, render_history_markdown, write_history
from farm.report.history_data import History, load_history
from tests.helpers.history_nights import SIX, passes
from tests.helpers.nights import night_records, write_night

FARM = Path(sys.executable).with_name("farm")


def _history(runs: Path, *, reason: str = "failed") -> History:
    """Three nights; t-reg regresses on the Galaxy on night 3, whose run was interrupted."""
    for day in (1, 2, 3):
        verdicts = {("t-ok", "P1"): True, ("t-reg", "G1"): day < 3}
        recs = night_records(f"n{day}", verdicts)
        for r in recs:
            if not r.passed:
                r.reasons = [reason]
        write_night(runs, f"n{day}", recs, day=day, status="interrupted" if day == 3 else "finished",
                    left_out={"P2": "screen stays locked"} if day == 2 else None)
    return load_history(runs, label="nightly")


def _farm(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(FARM), "history", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_markdown_has_a_row_per_night_and_marks_the_interrupted_one(tmp_path: Path) -> None:
    md = render_history_markdown(_history(tmp_path))
    assert "| n1 | 2026-12-01T03:00:00.000000Z | finished | 2 | 2 | 0 | 100.0% | 34.2% – 100.0% | 2 | 0 | 3 | 0 |" in md
    assert "| n3 ⚠ interrupted | 2026-12-03T03:00:00.000000Z | interrupted | 2 | 1 | 0 | 50.0% |" in md


def test_markdown_lists_the_regression_and_the_mcnemar_p(tmp_path: Path) -> None:
    md = render_history_markdown(_history(tmp_path))
    assert "### Regressions (1)" in md
    assert "| t-reg | android | Galaxy S24 · G1 | 1/1 passed | 0/1 passed | failed |" in md
    assert "regressions 1 · fixes 0 · exact McNemar p = 1 " in md
    assert "### Fixes (0)" in md


def test_markdown_says_pairs_are_task_by_phone(tmp_path: Path) -> None:
    md = render_history_markdown(_history(tmp_path))
    assert "Pairs are task × phone (task × device off the android lane)" in md
    assert "phone model" not in md


def test_markdown_lists_a_persistently_flaky_task_and_a_new_one(tmp_path: Path) -> None:
    for day in (1, 2):
        verdicts = {**passes("read/system", 3), **passes("t-new", 6 if day == 1 else 4)}
        write_night(tmp_path, f"n{day}", night_records(f"n{day}", verdicts), day=day, phones=SIX)
    md = render_history_markdown(load_history(tmp_path))
    assert "## Flaky (2)" in md
    assert "| t-new | android | read/system | new | 1 | 1 | 0 | 6/6 · 4/6 | Pixel 8 · S5, Pixel 8 · S6 |" in md
    assert "| read/system | android | read/system |  | 2 | 0 | 0 | 3/6 · 3/6 |  |" in md


def test_markdown_has_a_task_row_with_a_cell_per_night(tmp_path: Path) -> None:
    md = render_history_markdown(_history(tmp_path))
    assert "## Tasks night by night (2)" in md
    assert "| task | lane | category | flags | n1 | n2 | n3 ⚠ interrupted |" in md
    # Every cell opens a unit of its night (a pass here: none failed).
    assert ('| t-ok | android | read/system |  | [1/1](n1/android/P1/t-ok/run "n1: a unit of the task")'
            ' | [1/1](n2/android/P1/t-ok/run "n2: a unit of the task")'
            ' | [1/1](n3/android/P1/t-ok/run "n3: a unit of the task") |') in md


def test_a_cell_marks_infrastructure_errors(tmp_path: Path) -> None:
    write_night(tmp_path, "n1", night_records("n1", {("t", "P1"): True, ("t", "P2"): "error"}), day=1)
    md = render_history_markdown(load_history(tmp_path))
    # The count opens the error (the cell's first unit that did not pass), as its ⚠ does.
    assert ('| t | android | read/system |  | [1/1 e1](n1/android/P2/t/run "n1: its first unit that did not pass")'
            ' [⚠](n1/android/P2/t/run "Pixel 8 · P2 · repeat 1: error on P2") |') in md


def test_the_task_rows_beyond_the_cap_are_counted(tmp_path: Path) -> None:
    h = _history(tmp_path)
    md = render_history_markdown(h.model_copy(update={"tasks_more": 7}))
    assert "## Tasks night by night (9)" in md
    assert "2 shown, 7 more tasks not shown." in md


def test_both_outputs_say_re_judgement_is_not_applied(tmp_path: Path) -> None:
    h = _history(tmp_path)
    for text in (render_history_markdown(h), render_history_html(h)):
        assert "overrides are not applied in history" in text


def test_markdown_lists_the_health_change_with_its_reason(tmp_path: Path) -> None:
    md = render_history_markdown(_history(tmp_path))
    assert "| n1 → n2 | Pixel 8 · P2 | left out | screen stays locked |" in md
    assert "| n2 → n3 | Pixel 8 · P2 | back | screen stays locked |" in md


def test_html_is_self_contained_with_a_chart_per_night_and_per_category(tmp_path: Path) -> None:
    html = render_history_html(_history(tmp_path))
    assert html.count("<svg") == 2  # overall, and the one category
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "<td>n3 ⚠ interrupted</td>" in html
    assert ">⚠ n3</text>" in html  # the chart's bar label carries the mark first, where truncation cannot cut it
    assert "<td>t-reg</td>" in html


def test_html_escapes_what_the_records_say(tmp_path: Path) -> None:
    html = render_history_html(_history(tmp_path, reason="<script>alert(1)</script>"))
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_pipe_in_a_reason_does_not_break_the_markdown_table(tmp_path: Path) -> None:
    md = render_history_markdown(_history(tmp_path, reason="a | b\nc"))
    assert "| a \\| b c |" in md


def test_default_out_dir_is_under_runs_history_and_safe(tmp_path: Path) -> None:
    assert default_out_dir(tmp_path, "nightly", "n3") == tmp_path / "history" / "nightly-n3"
    assert default_out_dir(tmp_path, None, "n3") == tmp_path / "history" / "all-n3"
    # A label is free text: it becomes one directory name, never a path out of history/.
    odd = default_out_dir(tmp_path, "../x y/z", "n3")
    assert odd.parent == tmp_path / "history" and odd.name == ".._x_y_z-n3"


def test_writing_twice_is_refused_naming_the_path_and_leaves_the_first_intact(tmp_path: Path) -> None:
    h = _history(tmp_path / "runs")
    out = tmp_path / "out"
    md, _html = write_history(h, out)
    first = md.read_text(encoding="utf-8")
    with pytest.raises(FarmError) as exc:
        write_history(h, out)
    assert exc.value.line() == f"{md}: already exists — pass --out with a new directory; history is never overwritten"
    assert md.read_text(encoding="utf-8") == first


def test_an_existing_html_alone_blocks_both_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "history.html").write_text("mine", encoding="utf-8")
    with pytest.raises(FarmError, match="history.html: already exists"):
        write_history(_history(tmp_path / "runs"), out)
    assert not (out / "history.md").exists()


def test_cli_writes_both_files_into_the_default_directory_and_prints_them(tmp_path: Path) -> None:
    _history(tmp_path)
    proc = _farm("--label", "nightly", "--runs-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "history" / "nightly-n3"
    assert proc.stdout.splitlines() == [str(out / "history.md"), str(out / "history.html")]
    md = (out / "history.md").read_text(encoding="utf-8")
    # Done when: right after a sweep, a persistent flaky task and a regression are listed.
    assert "### Regressions (1)" in md and "## Flaky (1)" in md


def test_cli_rewrites_the_labels_own_history_right_after_a_sweep_wrote_it(tmp_path: Path) -> None:
    _history(tmp_path)
    assert _farm("--label", "nightly", "--runs-dir", str(tmp_path)).returncode == 0
    first = (tmp_path / "history" / "nightly-n3" / "history.md").read_text(encoding="utf-8")
    proc = _farm("--label", "nightly", "--runs-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "history" / "nightly-n3" / "history.md").read_text(encoding="utf-8").split("\n", 3)[3] \
        == first.split("\n", 3)[3]


def test_cli_refuses_to_overwrite_an_out_directory_with_exit_2(tmp_path: Path) -> None:
    _history(tmp_path)
    out = tmp_path / "mine"
    assert _farm("--label", "nightly", "--runs-dir", str(tmp_path), "--out", str(out)).returncode == 0
    proc = _farm("--label", "nightly", "--runs-dir", str(tmp_path), "--out", str(out))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"error: {out / 'history.md'}: already exists —"
                                   " pass --out with a new directory; history is never overwritten")


def test_cli_json_prints_the_history_and_writes_nothing(tmp_path: Path) -> None:
    _history(tmp_path)
    proc = _farm("--label", "nightly", "--runs-dir", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["newest"] == "n3" and len(data["regressions"]) == 1
    assert not (tmp_path / "history").exists()


def test_cli_json_has_the_grid_and_the_links(tmp_path: Path) -> None:
    _history(tmp_path)
    (tmp_path / "n3" / "report.html").write_text("<html></html>", encoding="utf-8")
    data = json.loads(_farm("--label", "nightly", "--runs-dir", str(tmp_path), "--json").stdout)
    assert [n["report"] for n in data["nights"]] == [None, None, "n3/report.html"]
    assert data["task_nights"] == ["n1", "n2", "n3"] and data["flaky_nights"] == 3
    reg = next(t for t in data["tasks"] if t["task_id"] == "t-reg")
    assert reg["regressed"] and reg["cells"][2]["units"][0]["evidence"] == "n3/android/G1/t-reg/run"


def test_cli_flaky_nights_narrows_the_window(tmp_path: Path) -> None:
    _history(tmp_path)
    data = json.loads(_farm("--label", "nightly", "--runs-dir", str(tmp_path), "--json", "--flaky-nights", "2").stdout)
    assert data["flaky_nights"] == 2
    assert [(f["task_id"], len(f["cells"])) for f in data["flaky"]] == [("t-reg", 2)]


def test_cli_refuses_flaky_nights_below_2_with_exit_2(tmp_path: Path) -> None:
    _history(tmp_path)
    proc = _farm("--label", "nightly", "--runs-dir", str(tmp_path), "--flaky-nights", "1")
    assert proc.returncode == 2
    assert "--flaky-nights" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_default_flaky_nights_matches_the_library() -> None:
    from farm.cli.history import DEFAULT_FLAKY_NIGHTS as CLI_DEFAULT
    from farm.report.history_grid import DEFAULT_FLAKY_NIGHTS

    assert CLI_DEFAULT == DEFAULT_FLAKY_NIGHTS


def test_cli_without_matching_runs_exits_2_naming_the_label_and_the_place(tmp_path: Path) -> None:
    write_night(tmp_path, "a", night_records("a", {("t", "G1"): True}), day=1, label="weekly")
    proc = _farm("--label", "nightly", "--runs-dir", str(tmp_path))
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith(f"error: {tmp_path}: no runs labelled 'nightly'")
    assert "Traceback" not in proc.stderr


def test_cli_reads_the_runs_directory_from_farm_yaml_by_default(tmp_path: Path) -> None:
    _history(tmp_path / "nightly-runs")
    (tmp_path / "farm.yaml").write_text("runs_dir: nightly-runs\n", encoding="utf-8")
    proc = _farm("--label", "nightly", "--last", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "nightly-runs" / "history" / "nightly-n3" / "history.md").read_text(encoding="utf-8")
    assert "label 'nightly', 2 nights" in md
