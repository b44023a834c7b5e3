"""The host executor's loop keeps a screenshot of every step for the viewer, whatever the policy takes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from host_agent.actions import ActionEnv
from host_agent.loop import run_attempt
from host_agent.phone import Phone, PhoneError
from host_agent.policy import TaskContext
from host_agent.scripted import ScriptedPolicy
from host_agent.transcript import CAP_NOTE, TranscriptWriter
from tests.helpers.host import SIM_APPS, host_phone, task_spec


def _attempt(sim: Any, run_dir: Path, **writer: Any) -> list[dict[str, Any]]:
    phone = host_phone(sim)
    try:
        spec = task_spec("calculator-multiply", phone)
        phone.press("home")
        out = TranscriptWriter(run_dir, **writer)
        attempt = run_attempt(TaskContext(task=spec.task, apps=SIM_APPS), phone, ScriptedPolicy(), out,
                              ActionEnv(answers=spec.task.answers, apps=SIM_APPS))
        out.close()
    finally:
        phone.close()
    assert attempt.evidence.end == "answer", attempt.evidence.end_reason
    return [json.loads(line) for line in (run_dir / "steps.jsonl").read_text(encoding="utf-8").splitlines()]


def test_every_step_has_a_stored_screenshot_though_the_scripted_policy_takes_none(
    virtual_phone: Any, tmp_path: Path
) -> None:
    steps = _attempt(virtual_phone, tmp_path)
    names = [s["observation"]["screenshot"] for s in steps]
    assert len(names) == 10 and all(n and n.startswith("shot-") for n in names)
    stored = sorted(p.name for p in tmp_path.glob("*.jpg"))
    assert stored == sorted(set(names)) and all((tmp_path / n).read_bytes()[:2] == b"\xff\xd8" for n in stored)
    # Screens differ from step to step here (the display shows each key pressed): every one is its own file.
    assert len(stored) == len({s["observation"]["digest"] for s in steps})


def test_over_the_cap_the_later_steps_say_so(virtual_phone: Any, tmp_path: Path) -> None:
    steps = _attempt(virtual_phone, tmp_path, screenshot_cap=1)
    assert [s["observation"]["screenshot"] for s in steps] == [CAP_NOTE] * len(steps)
    assert list(tmp_path.glob("*.jpg")) == []


def test_a_phone_that_gives_no_screenshot_still_runs_the_task(
    virtual_phone: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: Phone, quality: int = 80) -> bytes:
        raise PhoneError("takeScreenshot returned nothing")

    monkeypatch.setattr(Phone, "screenshot_jpeg", refuse)
    steps = _attempt(virtual_phone, tmp_path)
    assert len(steps) == 10 and all(s["observation"]["screenshot"] is None for s in steps)
