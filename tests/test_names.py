"""Names that become a path component (run ids, labels) and the commands that take them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.names import check_name, is_safe_name


@pytest.mark.parametrize("name", ["r1", "20261201-1408-tune-e4d995", "night1.v2", "A_b-C.9", "x" * 128])
def test_safe_names_are_accepted(name: str) -> None:
    assert is_safe_name(name) and check_name(name, "--run-id") == name


@pytest.mark.parametrize("name", [
    "", ".", "..", "../x", "/tmp/x", "a/b", "a\\b", ".hidden", "-x", "_x", "a..b", "x\n", "x y", "名字",
    "x" * 129, "run\x00id", "~", "%2e%2e",
])
def test_unsafe_names_are_refused_with_the_flag_and_the_rule(name: str) -> None:
    assert not is_safe_name(name)
    with pytest.raises(FarmError) as err:
        check_name(name, "--run-id")
    assert err.value.line().startswith("--run-id ") and "letters, digits" in err.value.line()


def _farm(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import sys; from farm.cli import main; main(sys.argv[1:])", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ANDROID_ADB_SERVER_PORT": "1"})


@pytest.mark.parametrize("argv", [
    ["run", "--run-id", "../escaped"],
    ["run", "--resume", "../escaped"],
    ["sweep", "--run-id", "../escaped"],
    ["sweep", "--retry-from", "../escaped", "--run-id", "ok"],
    ["sweep", "--label", "../escaped"],
    ["web", "run", "--run-id", "../escaped", "--policy", "scripted", "--dry-run"],
    ["pull", "--device", "S", "--run", "../escaped"],
], ids=lambda argv: " ".join(argv[:2]))
def test_a_path_as_a_run_id_is_refused_before_anything_is_written(argv: list[str], tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    proc = _farm(*argv, "--runs-dir", str(work / "runs"), cwd=work)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: --") and "'../escaped': not a safe name" in line
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["work"]
