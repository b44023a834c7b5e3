"""probe_has: a catalogue probe run by the harness after the task shows a text (or the marker)."""

from __future__ import annotations

from collections.abc import Mapping

from farm.results.record import CheckResult
from farm.scoring.text import clip, contains


def probe_has(outputs: Mapping[str, str], probe: str, needle: str) -> CheckResult:
    """Pass when the output of `probe` (read after the task) contains `needle`."""
    if probe not in outputs:
        return CheckResult(type="probe_has", passed=False, detail=f"probe {probe!r} was not read after the task")
    output = outputs[probe]
    if needle and contains(output, needle):
        return CheckResult(type="probe_has", passed=True, detail=f"{probe} shows {needle!r}")
    return CheckResult(type="probe_has", passed=False, detail=f"{probe} lacks {needle!r}: {clip(output)!r}")
