"""Three nights of one label on two phones, as the unit, side-by-side and nights pages read them: a task set whose
files the manifests name by hash, each unit's run record with its steps and real PNG screenshots (a tap drawn on
them), the phones' app versions, and a unit tried twice.

calc-mult ("Multiply 123 by 456 …", answer_regex `56,?088` and answer_grounded) passes on both phones on nights
n1 and n2; on n3 it fails on G1 (a regression), where the agent taps another key at step 3 (the divergence) and
answers 56,086, after a first try that was an infrastructure error. notes-new passes everywhere but on n2's P1.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

from PIL import Image

from farm import manifest as mf
from farm.results.record import CheckResult, Record
from tests.helpers.nights import write_night
from tests.helpers.records import evidence_path, record
from tests.view.builders import host_step, write_lines

LABEL = "nightly"
NIGHTS = ("n1", "n2", "n3")
PHONES = (("P1", "Pixel 8"), ("G1", "Galaxy S24"))
SERVERS = {"P1": "10.0.0.5:5037", "G1": "10.0.0.9:5037"}
GOAL = "Multiply 123 by 456 on the calculator and tell me the product"
SHOT = (432, 960)
"""Screenshot size in pixels."""
TAP = (216, 700)
"""Where step 2 taps (the `=` key), in the screenshot's pixels."""
CALC_VERSION = mf.AppVersion(package="com.android.calculator2", version_name="8.4", version_code=84)
TASKS: dict[str, dict[str, Any]] = {
    "calc-mult": {"id": "calc-mult", "goal": GOAL, "apps": ["com.android.calculator2"], "category": "read",
                  "partition": "tune", "expect": "succeeded",
                  "checks": [{"type": "answer_regex", "pattern": "56,?088"}, {"type": "answer_grounded"}]},
    "notes-new": {"id": "notes-new", "goal": "Write a note that says hello", "apps": ["{app:notes}"],
                  "category": "write", "partition": "tune", "expect": "succeeded",
                  "checks": [{"type": "answer_contains", "text": "saved"}]},
}


def png(size: tuple[int, int] = SHOT) -> bytes:
    """A real PNG of `size` (Chromium decodes it; its header gives the size the tap mark is drawn in)."""
    out = io.BytesIO()
    Image.new("RGB", size, (200, 220, 240)).save(out, "PNG")
    return out.getvalue()


def calc_steps(wrong: bool) -> list[dict[str, Any]]:
    """The calculator's four steps: launch, tap `=`, tap a key (another one when `wrong`), answer."""
    screen = '[1] TextView "123×456"\n[2] Button "="\n[3] TextView "56,088"'
    return [
        host_step(1, screen, tool="launch", args={"app": "calculator"}, screenshot="shot-1.png",
                  message="Open the calculator"),
        host_step(2, screen, args={"x": TAP[0], "y": TAP[1]}, screenshot="shot-2.png", message="Press ="),
        host_step(3, screen, args={"ref": 4 if wrong else 3}, screenshot="shot-3.png", message="Read the result"),
        host_step(4, screen, tool="answer", args={"text": "56,086" if wrong else "56,088"}, screenshot="shot-4.png",
                  result="answered"),
    ]


def _unit(run_dir: Path, rec: Record, steps: list[dict[str, Any]]) -> None:
    assert rec.evidence is not None
    folder = run_dir / rec.evidence
    folder.mkdir(parents=True, exist_ok=True)
    write_lines(folder / "steps.jsonl", steps)  # type: ignore[arg-type]
    for n in range(1, len(steps) + 1):
        (folder / f"shot-{n}.png").write_bytes(png())


def _records(night: str) -> list[tuple[Record, list[dict[str, Any]]]]:
    out: list[tuple[Record, list[dict[str, Any]]]] = []
    for serial, _ in PHONES:
        wrong = night == "n3" and serial == "G1"
        answer = "The product is 56,086" if wrong else "The product is 56,088"
        checks = [CheckResult(type="answer_regex", passed=not wrong,
                              detail=f"looked for 56,?088; answer said {answer}"),
                  CheckResult(type="answer_grounded", passed=True, detail="1 item seen on screen: 56,088")]
        if wrong:
            out.append((record("calc-mult", run=night, device=serial, passed=False, outcome="error",
                               reasons=["adb went away"], attempt=1,
                               evidence=evidence_path("android", serial, "calc-mult") + "-try1"), calc_steps(True)[:1]))
        out.append((record("calc-mult", run=night, device=serial, passed=not wrong, answer=answer, checks=checks,
                           reasons=[] if not wrong else ["answer_regex: looked for 56,?088"], category="read",
                           attempt=2 if wrong else 1, end_reason="answer"), calc_steps(wrong)))
        fails = night == "n2" and serial == "P1"
        out.append((record("notes-new", run=night, device=serial, passed=not fails, category="write",
                           answer="not saved" if fails else "saved", reasons=["no note"] if fails else [],
                           checks=[CheckResult(type="answer_contains", passed=not fails, detail="looked for saved")]),
                    calc_steps(False)[:2]))
    return out


def make_nights(runs: Path, tasks: Path) -> list[Path]:
    """The three nights under `runs` and their task set under `tasks` (see the module docstring)."""
    entries = []
    for task_id, body in TASKS.items():
        data = json.dumps(body, ensure_ascii=False).encode()
        path = tasks / body["category"] / f"{task_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        entries.append(mf.TaskEntry(id=task_id, sha256=hashlib.sha256(data).hexdigest()))
    dirs = []
    for day, night in enumerate(NIGHTS, start=1):
        units = _records(night)
        run_dir = write_night(runs, night, [r for r, _ in units], day=day, label=LABEL, phones=PHONES)
        for rec, steps in units:
            _unit(run_dir, rec, steps)

        def change(m: mf.Manifest) -> None:
            m.tasks = entries
            for phone in m.phones:
                phone.adb_server, phone.android, phone.agent_version = SERVERS[phone.serial], "14", "0.9.1"
                phone.apps = [CALC_VERSION]

        mf.update(run_dir, change)
        dirs.append(run_dir)
    return dirs
