"""--set (repeated), -k, --exclude and --only-failed-from through the real entry point."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.cli import error_line, farm
from tests.helpers.records import record, write_run, write_tasks


def listed(proc_stdout: str) -> list[str]:
    """The ids of a piped `farm tasks list` (first column after the header)."""
    return [line.split("\t")[0] for line in proc_stdout.splitlines()[1:]]


def test_repeated_set_is_the_union_not_the_last_one(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    proc = farm(tmp_path, "tasks", "list", "--tasks-dir", "t", "--set", "write", "--set", "impossible")
    assert proc.returncode == 0, proc.stderr
    assert listed(proc.stdout) == ["imp-time-machine", "notes-new"]


def test_keyword_and_exclude_narrow_the_list(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    proc = farm(tmp_path, "tasks", "list", "--tasks-dir", "t", "-k", "sys or read and not holdout",
                "--exclude", "read/content/*")
    assert proc.returncode == 0, proc.stderr
    # sys-holdout is matched by `sys` (the id), not by the pool: -k looks at ids, directories and categories.
    assert listed(proc.stdout) == ["sys-holdout", "sys-version"]
    only = farm(tmp_path, "tasks", "list", "--tasks-dir", "t", "-k", "read", "--exclude", "sys-*", "--split", "tune")
    assert listed(only.stdout) == ["calc-add"]


def test_a_bad_keyword_is_one_line_and_exit_2(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    line = error_line(farm(tmp_path, "tasks", "list", "--tasks-dir", "t", "-k", "read and (write"))
    assert line.startswith("error: -k 'read and (write': '(' at column 10 is never closed — ")


def test_a_set_that_matches_nothing_is_refused_beside_good_ones(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    line = error_line(farm(tmp_path, "tasks", "list", "--tasks-dir", "t", "--set", "write", "--set", "wirte"))
    assert line.startswith("error: --set wirte: no task matches it")


def _failed_run(tmp_path: Path) -> None:
    write_run(tmp_path / "runs", "r1", [
        record("sys-version", run="r1"),
        record("calc-add", run="r1", passed=False),
        record("notes-new", run="r1", outcome="error", passed=False),
        record("imp-time-machine", run="r1", outcome="skipped", passed=False),
        record("removed-since", run="r1", passed=False),
    ])


def test_only_failed_from_lists_what_failed_or_errored_in_a_real_run(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    _failed_run(tmp_path)
    proc = farm(tmp_path, "tasks", "list", "--tasks-dir", "t", "--only-failed-from", "r1")
    assert proc.returncode == 0, proc.stderr
    assert listed(proc.stdout) == ["calc-add", "notes-new"]
    assert proc.stderr == "warning: --only-failed-from: 1 task(s) no longer in t (--tasks-dir): removed-since\n"


def test_only_failed_from_a_run_that_does_not_exist_is_exit_2_naming_it(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    (tmp_path / "runs" / "empty").mkdir(parents=True)
    for command in (("tasks", "list", "--tasks-dir", "t"), ("run", "--tasks-dir", "t"), ("sweep", "--tasks-dir", "t")):
        line = error_line(farm(tmp_path, *command, "--only-failed-from", "nope"))
        assert line.startswith("error: --only-failed-from nope: no such run under runs"), line
        line = error_line(farm(tmp_path, *command, "--only-failed-from", "empty"))
        assert line.startswith("error: --only-failed-from empty: the run has no records"), line


def test_only_failed_from_a_run_where_nothing_failed_runs_nothing(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    write_run(tmp_path / "runs", "good", [record("sys-version", run="good"), record("calc-add", run="good")])
    before = sorted(p.name for p in (tmp_path / "runs").iterdir())
    proc = farm(tmp_path, "run", "--tasks-dir", "t", "--only-failed-from", "good")
    assert proc.returncode == 0 and proc.stdout == ""
    assert proc.stderr == "warning: --only-failed-from good: no unit failed or errored there; nothing to run\n"
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == before


def test_a_selection_matching_nothing_is_named_before_any_phone(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    line = error_line(farm(tmp_path, "run", "--tasks-dir", "t", "--set", "write", "--set", "impossible",
                           "-k", "nothing-like-this"))
    assert "t: no task matches --split tune --set write --set impossible -k 'nothing-like-this'" in line
    assert not (tmp_path / "runs").exists()


def test_resume_keeps_its_own_selection(tmp_path: Path) -> None:
    for command in ("run", "sweep"):
        line = error_line(farm(tmp_path, command, "--resume", "r1", "--exclude", "x"))
        assert "--resume RUN continues that run with its own selection" in line
