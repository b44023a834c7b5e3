"""--allow-irreversible names the tasks that will really act before any phone is reached, and asks at a terminal.

No adb server runs on the child's port, so a run that gets past the warning (and the question) stops where it looks
for phones: that error coming after the warning proves the warning came first.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.cli import error_line, farm, farm_on_terminal
from tests.helpers.records import write_tasks

WARNING = ("warning: --allow-irreversible: 1 irreversible task(s) will really send, delete or order on the phones: "
           "irrev-send")


def test_the_irreversible_tasks_are_named_on_stderr_before_any_phone(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    proc = farm(tmp_path, "run", "--tasks-dir", "t", "--allow-irreversible")
    line = error_line(proc)
    assert proc.stderr.splitlines()[0] == WARNING and "no adb server" in line
    assert proc.stdout == ""


def test_no_warning_without_the_flag_or_without_irreversible_tasks(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    for argv in (("run", "--tasks-dir", "t"), ("run", "--tasks-dir", "t", "--allow-irreversible", "--set", "write"),
                 ("sweep", "--tasks-dir", "t", "--allow-irreversible", "--exclude", "irrev-*")):
        proc = farm(tmp_path, *argv)
        assert "adb server" in error_line(proc) and "warning" not in proc.stderr, argv


def test_sweep_warns_too(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    proc = farm(tmp_path, "sweep", "--tasks-dir", "t", "--allow-irreversible")
    assert proc.stderr.splitlines()[0] == WARNING and "no healthy phone on any adb server" in error_line(proc)


def test_at_a_terminal_no_answer_stops_before_anything_is_written(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    code, shown, out, err = farm_on_terminal(tmp_path, "run", "--tasks-dir", "t", "--allow-irreversible",
                                             streams=("stdin",), answer="n\n")
    assert code == 2, err
    assert err.splitlines()[0] == WARNING
    assert err.rstrip().endswith("Run them for real? [y/N] error: --allow-irreversible: not confirmed, nothing was "
                                 "run — answer y, or pass --yes")
    assert out == "" and not (tmp_path / "runs").exists() and "no adb server" not in err


def test_at_a_terminal_yes_goes_on(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    code, _shown, _out, err = farm_on_terminal(tmp_path, "run", "--tasks-dir", "t", "--allow-irreversible",
                                               streams=("stdin",), answer="y\n")
    assert code == 2 and "Run them for real? [y/N] " in err and "no adb server" in err


def test_at_a_terminal_yes_flag_does_not_ask(tmp_path: Path) -> None:
    write_tasks(tmp_path / "t")
    code, _shown, _out, err = farm_on_terminal(tmp_path, "run", "--tasks-dir", "t", "--allow-irreversible", "--yes",
                                               streams=("stdin",))
    assert code == 2 and err.splitlines()[0] == WARNING and "[y/N]" not in err and "no adb server" in err
