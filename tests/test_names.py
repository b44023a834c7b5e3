"""Names that become a path component (run ids, labels) and the commands that take them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.names import MAX_NAME, SAFE_NAME_HINT, check_name, is_safe_name, name_problem


@pytest.mark.parametrize("name", [
    "r1", "20261201-1408-tune-e4d995", "night1.v2", "A_b-C.9", "x" * MAX_NAME,
    # A device name inside a longer name, or after the first dot, is no device: Windows keeps these.
    "console", "con-1", "con_x", "nullable", "auxiliary", "com10", "lpt10", "comx", "com", "lpt", "x.con",
    "run.nul.txt", "prn1.txt", "a.b.c",
])
def test_safe_names_are_accepted(name: str) -> None:
    assert is_safe_name(name) and check_name(name, "--run-id") == name


@pytest.mark.parametrize("name", [
    "", ".", "..", "../x", "/tmp/x", "a/b", "a\\b", ".hidden", "-x", "_x", "a..b", "x\n", "x y", "名字",
    "x" * (MAX_NAME + 1), "x" * 129, "run\x00id", "~", "%2e%2e",
    # Windows device names, any case, bare or with any extension (`nul.tar.gz` is NUL there).
    "CON", "con", "Con", "PRN", "AUX", "aux", "NUL", "nul", "con.txt", "NUL.tar.gz", "aux.", "Com1", "COM9", "lpt1",
    "LPT9.log", "COM0", "lpt0",
    # Windows drops a trailing dot: `run.` and `run` would be one directory there.
    "run.", "r1.v2.", "x" * (MAX_NAME - 1) + ".",
])
def test_unsafe_names_are_refused_with_the_flag_and_the_rule(name: str) -> None:
    assert not is_safe_name(name)
    with pytest.raises(FarmError) as err:
        check_name(name, "--run-id")
    assert err.value.line().startswith("--run-id ") and "letters, digits" in err.value.line()


@pytest.mark.parametrize(("name", "reason"), [
    ("con.txt", "CON is a Windows device name"),
    ("lpt1", "LPT1 is a Windows device name"),
    ("run.", "ends with '.'"),
    ("x" * (MAX_NAME + 1), f"{MAX_NAME + 1} characters, more than {MAX_NAME}"),
])
def test_the_refusal_says_why(name: str, reason: str) -> None:
    assert name_problem(name) == reason
    with pytest.raises(FarmError) as err:
        check_name(name, "--label")
    (line,) = err.value.line().splitlines()
    assert f"not a safe name ({reason}) — {SAFE_NAME_HINT}" in line


def test_a_huge_name_is_cut_in_the_message() -> None:
    with pytest.raises(FarmError) as err:
        check_name("x" * 1_000_000, "--run-id")
    assert len(err.value.line()) < 600 and "1000000 characters" in err.value.line()


def _farm(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import sys; from farm.cli import main; main(sys.argv[1:])", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ANDROID_ADB_SERVER_PORT": "1"})


COMMANDS = [
    ["run", "--run-id", "{}"],
    ["run", "--resume", "{}"],
    ["sweep", "--run-id", "{}"],
    ["sweep", "--retry-from", "{}", "--run-id", "ok"],
    ["sweep", "--label", "{}"],
    ["web", "run", "--run-id", "{}", "--policy", "scripted", "--dry-run"],
    ["pull", "--device", "S", "--run", "{}"],
]
"""Every command that takes a run id or a label, `{}` where the name goes."""


def _refused_before_anything_is_written(template: list[str], name: str, tmp_path: Path) -> str:
    work = tmp_path / "work"
    work.mkdir()
    proc = _farm(*(a.format(name) for a in template), "--runs-dir", str(work / "runs"), cwd=work)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: --")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["work"]
    return line


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv[:2]))
def test_a_path_as_a_run_id_is_refused_before_anything_is_written(argv: list[str], tmp_path: Path) -> None:
    assert "'../escaped': not a safe name" in _refused_before_anything_is_written(argv, "../escaped", tmp_path)


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv[:2]))
@pytest.mark.parametrize("name", ["con.txt", "Nul", "run.", "x" * (MAX_NAME + 1)],
                         ids=["con.txt", "Nul", "run.", "101-chars"])
def test_a_name_windows_or_an_artifact_store_cannot_hold_is_refused_by_every_command(
    argv: list[str], name: str, tmp_path: Path
) -> None:
    line = _refused_before_anything_is_written(argv, name, tmp_path)
    assert f"{name!r}: not a safe name ({name_problem(name)})" in line
