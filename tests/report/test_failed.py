"""`--only-failed-from RUN`: which tasks a run left failed or errored, read like its report."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.report.failed import failed_tasks, find_run
from tests.helpers.records import record, write_run


def test_failed_and_errored_units_count_skips_and_passes_do_not(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r1", [
        record("a", run="r1"),
        record("b", run="r1", passed=False),
        record("c", run="r1", outcome="error", passed=False),
        record("d", run="r1", outcome="skipped", passed=False),
        # The same task failing on a second phone is one task to run again.
        record("b", run="r1", device="SER2", passed=False),
        # A web-lane result is not an android task to run again.
        record("w", run="r1", lane="web", device="playwright", passed=False),
    ])
    got = failed_tasks(run_dir)
    assert (got.run, got.task_ids, got.failed_units, got.units) == ("r1", ["b", "c"], 3, 5)


def test_the_latest_attempt_decides(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r1", [
        record("a", run="r1", outcome="error", passed=False, attempt=1),
        record("a", run="r1", passed=True, attempt=2),
        record("b", run="r1", passed=True, attempt=1),
        record("b", run="r1", outcome="error", passed=False, attempt=2),
    ])
    assert failed_tasks(run_dir).task_ids == ["b"]


def test_a_human_re_judgement_decides_over_the_initial_verdict(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r1", [record("a", run="r1", passed=False, answer="结果是 56088"),
                                        record("b", run="r1", passed=False)])
    (run_dir / "overrides.yaml").write_text("- {id: a, from: fail, to: pass, evidence: '56088'}\n", encoding="utf-8")
    assert failed_tasks(run_dir).task_ids == ["b"]


def test_holdout_failures_are_included(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "r1", [record("h", run="r1", partition="holdout", passed=False)])
    assert failed_tasks(run_dir).task_ids == ["h"]


def test_a_run_that_is_missing_unsafe_or_without_records_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(FarmError, match=r"^--only-failed-from nope: no such run under "):
        find_run("nope", tmp_path)
    with pytest.raises(FarmError, match=r"^--only-failed-from '\.\./x': not a safe name"):
        find_run("../x", tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FarmError, match=r"^--only-failed-from empty: the run has no records"):
        find_run("empty", tmp_path)
    web_only = write_run(tmp_path, "webby", [record("w", run="webby", lane="web", device="playwright")])
    assert find_run("webby", tmp_path) == web_only
    with pytest.raises(FarmError, match=r"^--only-failed-from webby: the run has no android records"):
        failed_tasks(web_only)
