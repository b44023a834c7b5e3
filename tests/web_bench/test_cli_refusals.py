"""Bad input to `farm web …` through the real entry point: exit 2, one `error: ` line on stderr naming the
file or flag, no traceback, and nothing under the working directory created or changed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from farm.sim.launcher import SimPhone
from tests.helpers.web import web_run

FILE_TIMEOUT_S = 120


def farm(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # A short timeout: an input that blocks the reader (a FIFO) must fail the test, not hang it.
    return subprocess.run(
        [sys.executable, "-c", "from farm.cli import main; main()", *args],
        cwd=cwd, capture_output=True, text=True, timeout=FILE_TIMEOUT_S, check=False, env=dict(os.environ),
    )


def _tree(root: Path) -> dict[str, tuple[int, int, bytes | None]]:
    """Every path under `root`: its type bits, mtime and (regular files only; a FIFO is never opened) bytes."""
    found: dict[str, tuple[int, int, bytes | None]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        content = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
        found[str(path.relative_to(root))] = (stat.S_IFMT(info.st_mode), info.st_mtime_ns, content)
    return found


def _refused_untouched(tmp_path: Path, args: list[str], words: str) -> str:
    before = _tree(tmp_path)
    result = farm(*args, cwd=tmp_path)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], result.stderr
    assert _tree(tmp_path) == before
    return lines[0]


def _good_line() -> str:
    return web_run().model_dump_json(by_alias=True)


REPORT_INPUTS: dict[str, tuple[Callable[[Path], object], str]] = {
    "binary": (lambda p: p.write_bytes(bytes(range(256)) * 4), "no valid runs; 5 line(s) rejected"),
    "directory": (lambda p: p.mkdir(), "is a directory"),
    "empty": (lambda p: p.write_bytes(b""), "no runs in the file"),
    "blank-lines": (lambda p: p.write_bytes(b"\n  \n\t\n\n"), "no runs in the file"),
    "deep-nesting": (lambda p: p.write_bytes(b"[" * 100_000 + b"\n"), "recursion limit"),
    "invalid-utf8": (lambda p: p.write_bytes(b'{"task": "\xc3\x28"}\n'), "not UTF-8"),
    "bool-as-string": (lambda p: p.write_text(_good_line().replace('"success":true', '"success":"yes"') + "\n"),
                       "success: Input should be a valid boolean"),
    "fifo": (lambda p: os.mkfifo(p), "not a regular file"),
    "missing": (lambda p: None, "no such results file"),
}


@pytest.mark.parametrize("kind", list(REPORT_INPUTS))
def test_report_refuses_unreadable_input_in_one_line(tmp_path: Path, kind: str) -> None:
    make, words = REPORT_INPUTS[kind]
    make(tmp_path / "results.jsonl")
    for extra in ([], ["--json"]):
        line = _refused_untouched(tmp_path, ["web", "report", "results.jsonl", *extra], words)
        assert line.startswith("error: results.jsonl: "), line


# Each would otherwise start a real one-run benchmark in the working directory: refusal must come first.
RUN = ["web", "run", "--policy", "scripted", "--backends", "playwright", "--tasks", "order_lookup", "--seeds", "1"]
RUN_FLAGS: list[tuple[list[str], str]] = [
    (["--trials", "0"], "--trials: must be at least 1, got 0"),
    (["--trials", "-2"], "--trials: must be at least 1, got -2"),
    (["--smoke", "--trials", "0"], "--trials: must be at least 1"),
    (["--trials", "1000000000"], "--trials/--seeds: 1000000000 runs planned"),
    (["--timeout-ms", "0"], "--timeout-ms: must be 1…86400000"),
    (["--timeout-ms", "-5"], "--timeout-ms: must be 1…86400000"),
    (["--timeout-ms", "86400001"], "--timeout-ms: must be 1…86400000"),
    (["--seeds", "garbage"], "--seeds: bad seed range"),
    (["--seeds", ""], "--seeds: bad seed range"),
    (["--seeds", "1-1000000"], "--seeds: '1-1000000' is more than 100000 seeds"),
    (["--seeds", "1-" + "9" * 5000], "--seeds: bad seed range"),
    (["--seeds", "\u0663"], "--seeds: bad seed range"),
    (["--policy", "clever"], "--policy: unknown policy"),
    (["--run-id", "../escape"], "--run-id"),
    (["--output", "a-file/results.jsonl"], "--output a-file: is a file, not a directory"),
    (["--runs-dir", "a-file"], "--runs-dir a-file: is a file, not a directory"),
    (["--runs-dir", "a-file/runs"], "--runs-dir a-file/runs: is under"),
    (["--trials", "x"], "--trials"),
    (["--output", "a-file"], "a-file: output already exists"),
]


@pytest.mark.parametrize(("flags", "words"), RUN_FLAGS, ids=[" ".join(f)[:40] for f, _ in RUN_FLAGS])
def test_run_refuses_bad_values_before_starting(tmp_path: Path, flags: list[str], words: str) -> None:
    (tmp_path / "a-file").write_text("not a directory\n")
    _refused_untouched(tmp_path, [*RUN, *flags], words)


@pytest.mark.parametrize("flags", [["--trials", "0"], ["--timeout-ms", "0"]])
def test_dry_run_refuses_what_a_run_would(tmp_path: Path, flags: list[str]) -> None:
    _refused_untouched(tmp_path, ["web", "run", "--dry-run", *flags], flags[0])


@pytest.mark.parametrize("port", ["-1", "65536"])
def test_serve_refuses_a_port_out_of_range(tmp_path: Path, port: str) -> None:
    _refused_untouched(tmp_path, ["web", "serve", "--port", port], f"--port: {port} is not a TCP port")


def test_phone_without_chrome_points_at_the_virtual_phone(
    tmp_path: Path, virtual_farm: Callable[..., list[SimPhone]]
) -> None:
    # The virtual farm's default phone has no Chrome DevTools socket: as a phone with Chrome closed.
    (phone,) = virtual_farm(1)
    _refused_untouched(
        tmp_path, ["web", "run", "--smoke", "--tasks", "order_lookup", "--policy", "scripted", "--backends",
                   "android-chrome", "--serial", phone.serial, "--run-id", "nochrome"],
        "open Chrome on the phone",
    )
    result = farm("web", "run", "--smoke", "--tasks", "order_lookup", "--policy", "scripted", "--backends",
                  "android-chrome", "--serial", phone.serial, cwd=tmp_path)
    assert "--virtual-phone" in result.stderr and phone.serial in result.stderr


def test_unknown_serial_points_at_the_virtual_phone(
    tmp_path: Path, virtual_farm: Callable[..., list[SimPhone]]
) -> None:
    virtual_farm(1)
    _refused_untouched(tmp_path, ["web", "run", "--smoke", "--backends", "android-chrome", "--policy", "scripted",
                                  "--serial", "no-such-phone"], "--virtual-phone")


def test_report_keeps_good_lines_and_warns_of_rejected_ones(tmp_path: Path) -> None:
    good = _good_line()
    (tmp_path / "results.jsonl").write_text(
        "\n".join([good, good.replace('"completionMs":100.0', '"completionMs":NaN'), good]) + "\n"
    )
    result = farm("web", "report", "results.jsonl", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    numbers = json.loads(result.stdout)
    assert numbers["backends"]["playwright"]["runs"] == 1
    assert numbers["rejectedLines"] == ["results.jsonl:2: timings.completionMs: Input should be a finite number "
                                        "(got nan)"]
    assert numbers["duplicateRuns"] == ["results.jsonl: lines 1, 3 are one run (fixture, playwright, "
                                        "order_lookup:1:1); line 3 counts"]
    assert result.stderr.splitlines() == [
        "warning: results.jsonl: 1 line(s) rejected, first: results.jsonl:2: timings.completionMs: Input should be "
        "a finite number (got nan)",
        "warning: results.jsonl: 1 run(s) written more than once, each counted once",
    ]
