"""Builders for desktop-lane tests: configs, results, batches and a `farm` runner."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from farm.desktop.batch import Batch, BatchLink, Slot, init_batch, plan_slot_ids, record_result
from farm.desktop.batch_config import DesktopConfig
from farm.desktop.result import RunResult
from farm.desktop.tasks import tasks_digest

REPO = Path(__file__).resolve().parents[2]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
T0 = dt.datetime(2026, 2, 3, 9, 0, 0, tzinfo=dt.UTC)


def config_data(**overrides: object) -> dict[str, object]:
    """A filled-in native/live config (as JSON data), with overrides."""
    data: dict[str, object] = {
        "mode": "native",
        "execution": "live",
        "commit": COMMIT,
        "mainModel": "model-a (thinking: high)",
        "jevModel": "none",
        "macOS": "macOS 15.3, English",
        "appVersions": "Calculator=11.0; TextEdit=1.20; Chrome=132.0.6834.110",
        "runtime": "runtime build 4711",
        "display": "1 display, 2560x1440, scaling 2x, browser zoom 100%",
        "repetitions": 2,
    }
    data.update(overrides)
    return data


def results_dir(tmp_path: Path) -> Path:
    """A private results directory (0700) outside any git work tree."""
    path = tmp_path / "results"
    path.mkdir(mode=0o700)
    os.chmod(path, 0o700)
    return path


def write_config(directory: Path, name: str = "config.json", **overrides: object) -> Path:
    """Write a config file with mode 0600."""
    path = directory / name
    path.write_text(json.dumps(config_data(**overrides), ensure_ascii=False), encoding="utf-8")
    os.chmod(path, 0o600)
    return path


def result_data(
    status: str = "success", duration_ms: int = 20_000, start_offset_s: int = 0, **overrides: object
) -> dict[str, object]:
    """A valid result (as JSON data) lasting `duration_ms`, with overrides."""
    start = T0 + dt.timedelta(seconds=start_offset_s)
    end = start + dt.timedelta(milliseconds=duration_ms)
    data: dict[str, object] = {
        "status": status,
        "startedAt": start.strftime("%Y-%m-%dT%H:%M:%S.") + f"{start.microsecond // 1000:03d}Z",
        "endedAt": end.strftime("%Y-%m-%dT%H:%M:%S.") + f"{end.microsecond // 1000:03d}Z",
        "humanInterventions": 0,
        "plannerHandoffs": 0,
        "actions": 8,
        "wrongActions": 0,
        "evidence": ["session s-17, trace traces/s-17.jsonl 09:00:00-09:00:20"],
        "verification": "display shows the expected value" if status == "success" else "",
        "reason": "" if status == "success" else "permission dialog refused",
    }
    data.update(overrides)
    return data


def write_result(
    path: Path, status: str = "success", duration_ms: int = 20_000, start_offset_s: int = 0, **overrides: object
) -> Path:
    """Write a result file built by `result_data`."""
    data = result_data(status, duration_ms, start_offset_s)
    data.update(overrides)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def run(status: str = "success", duration_ms: int = 20_000, **overrides: object) -> RunResult:
    """A validated in-memory result."""
    data = result_data(status, duration_ms)
    data.update(overrides)
    return RunResult.model_validate(data)


def batch_with(results: dict[str, RunResult], repetitions: int = 2) -> Batch:
    """An in-memory batch whose listed slots are recorded."""
    slots = []
    for slot_id in plan_slot_ids(repetitions):
        task, rep = slot_id.rsplit("/", 1)
        result = results.get(slot_id)
        slots.append(
            Slot(
                id=slot_id,
                task=task,
                repetition=int(rep),
                status=result.status if result else "pending",
                result=result,
                recordedAt="2026-02-03T10:00:00.000000Z" if result else None,
            )
        )
    return Batch(
        tasksSha256=tasks_digest(),
        sequence=len(results),
        createdAt="2026-02-03T10:00:00.000000Z",
        config=DesktopConfig.model_validate(config_data(repetitions=repetitions)),
        previous=BatchLink(file="prev.json", sha256="0" * 64) if results else None,
        recordedSlot=next(iter(results), None),
        slots=slots,
    )


@dataclass
class FarmRun:
    """Outcome of one `farm` invocation."""

    code: int
    stdout: str
    stderr: str


def farm(*args: str | Path, cwd: Path | None = None) -> FarmRun:
    """Run the real `farm` entry point in a subprocess."""
    proc = subprocess.run(
        [sys.executable, "-c", "from farm.cli import main; main()", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        timeout=120,
        check=False,
    )
    return FarmRun(proc.returncode, proc.stdout, proc.stderr)


def planned_batch(tmp_path: Path, repetitions: int = 2) -> tuple[Path, Path]:
    """(results dir, batch-000.json) planned through the library (the CLI is tested on its own)."""
    directory = results_dir(tmp_path)
    config = write_config(directory, repetitions=repetitions)
    out = directory / "batch-000.json"
    init_batch(config, out)
    return directory, out


HOSTILE_REASON = '<img src=x onerror="alert(1)"> | <script>alert(2)</script>'
"""A recorded reason a person could paste from a web page: HTML that must stay text in every report."""


def recorded_batch(tmp_path: Path, *, reason: str = HOSTILE_REASON, **config: object) -> Path:
    """batch-002.json: one success (calculator-add/1) and one blocked slot with `reason` (calculator-add/2),
    recorded through the ledger with its version chain; `config` overrides the batch config."""
    directory = results_dir(tmp_path)
    b0 = directory / "batch-000.json"
    init_batch(write_config(directory, **config), b0)
    b1, b2 = directory / "batch-001.json", directory / "batch-002.json"
    record_result(b0, "calculator-add/1", write_result(directory / "r1.json"), b1)
    blocked = write_result(directory / "r2.json", "blocked", start_offset_s=60, reason=reason)
    record_result(b1, "calculator-add/2", blocked, b2)
    return b2
