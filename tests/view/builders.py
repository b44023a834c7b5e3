"""Builders of the viewer tests: a run whose one record names a host-executor run record, and its steps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from farm.results.record import CheckResult, Record
from farm.scoring.transcript import ActionLine, ObservationLine, ResultLine, StepLine, StepTimings
from tests.helpers.records import record, write_run

RUN = "r-view"
EVIDENCE = "android/SER1/units/calc.SER1.try1/calc/run"
"""Where the built run keeps the run record (a try directory's layout)."""
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 64 + b"\xff\xd9"
"""Bytes that stand for a screenshot (served as image/jpeg by name)."""


def host_step(n: int, text: str, *, tool: str = "tap", args: dict[str, Any] | None = None,
              screenshot: str | None = None, message: str | None = None, ok: bool = True,
              result: str = "tapped") -> dict[str, Any]:
    """One steps.jsonl object as the host executor writes it."""
    line = StepLine(
        step=n, at_ms=100.0 * n,
        observation=ObservationLine(digest=f"d{n}", text=text, package="com.android.calculator2",
                                    screenshot=screenshot),
        action=ActionLine(tool=tool, args=args if args is not None else {"ref": n}, message=message),
        result=ResultLine(ok=ok, text=result, error=None if ok else "no such ref"),
        timings=StepTimings(screen_read_ms=12.0, model_ms=850.0, action_ms=30.0),
    )
    return line.model_dump(mode="json", by_alias=True)


def write_lines(path: Path, lines: list[dict[str, Any] | str], *, end_newline: bool = True) -> None:
    """A JSONL file of `lines` (strings are written as they are)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(line if isinstance(line, str) else json.dumps(line, ensure_ascii=False) for line in lines)
    path.write_text(text + ("\n" if end_newline else ""), encoding="utf-8")


def make_run(runs: Path, *, run: str = RUN, records: list[Record] | None = None, phone_name: str | None = None,
             adb_server: str = "", **fields: Any) -> Path:
    """A run under `runs` with one failed unit on phone SER1 (a Pixel 7; `phone_name` and `adb_server` as discovery
    recorded them, none by default) whose run record is at EVIDENCE (steps are up to the test)."""
    rec = record("calc", run=run, passed=False, evidence=EVIDENCE, reasons=["answer did not match"],
                 checks=[CheckResult(type="answer_regex", passed=False, detail="looked for 56088; answer said 56086")],
                 answer="56086", **fields)
    run_dir = write_run(runs, run, records if records is not None else [rec], phones=[("SER1", "Pixel 7")],
                        names={"SER1": phone_name} if phone_name is not None else None,
                        servers={"SER1": adb_server} if adb_server else None)
    (run_dir / EVIDENCE).mkdir(parents=True)
    return Path(run_dir)
