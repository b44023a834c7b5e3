"""`farm agent check` reads steps.jsonl in bounded pieces, and warns of the lines the host's re-scoring skips."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from farm.android.agent_run_check import MAX_LINE_BYTES, TreeReport, check_steps
from farm.android.pull_limits import MAX_LINE_BYTES as SCORED_LINE_BYTES

_MiB = 1024 * 1024
LONG_LINE_BYTES = 8 * MAX_LINE_BYTES
"""A step line eight times the check's bound (a pull takes files up to 64 MB)."""
PEAK = 12 * _MiB
"""Most bytes held checking the file: bounded reads of at most the 4 MB bound (and their copies), and the 2 MiB line
parsed — never the 32 MiB one (reading it whole took over 64 MiB)."""


def _step(n: int, text: str) -> str:
    return json.dumps({"step": n, "atMs": 0, "observation": {"digest": "d", "text": text}, "result": {"ok": True}})


def test_a_line_over_the_check_bound_is_skipped_unheld_and_one_over_the_scoring_cap_warned(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    between = SCORED_LINE_BYTES + _MiB  # within what the check (and the viewer) read, past what scoring reads
    with (run / "steps.jsonl").open("w", encoding="utf-8") as out:
        out.write(_step(1, "ok") + "\n")
        out.write(_step(2, "x" * LONG_LINE_BYTES) + "\n")
        out.write(_step(3, "y" * between) + "\n")
        out.write(_step(4, "ok") + "\n")
    report = TreeReport(root=str(tmp_path))
    tracemalloc.start()
    try:
        check_steps(report, run, "t/run")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(p.line, p.problem) for p in report.problems] == [(2, "line over 4 MB: the viewer does not show it")]
    assert [(w.line, w.problem) for w in report.warnings if w.line == 3] == [
        (3, "line over 1 MiB: the host's re-scoring skips it (its screen is no evidence)")]
    assert peak < PEAK, peak
