"""`--on-takeover wait` on the virtual phone: the shop's login wall, a person who clears it, or nobody."""

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from farm.llm.loop import Feedback, Step
from host_agent.evalout import EvalTree
from host_agent.runner import TaskReport, run_task
from host_agent.scripted import Script, ScriptedPolicy
from host_agent.session import said
from tests.helpers.host import host_phone, installed, task_spec

_AFTER_LOGIN = Script(steps=[
    {"launch": {"package": "dev.agentfarm.shop"}},
    {"tap": {"at": {"desc": "我的订单"}}},
    {"hand_over": {"reason": "login", "detail": "我的订单需要登录"}},
    {"answer": {"text": "回到了首页"}},
])


class _Signalling(ScriptedPolicy):
    """Plays a script and sets `handed` when it hands the phone over."""

    def __init__(self, scripts: dict[str, Script]) -> None:
        super().__init__(scripts)
        self.handed = threading.Event()
        self.feedback: list[str | None] = []

    def step(self, step: int, feedback: Sequence[Feedback]) -> Step:
        self.feedback.append(said(feedback[0]) if feedback else None)
        move = super().step(step, feedback)
        if any(call.name == "hand_over" for call in move.calls):
            self.handed.set()
        return move


def _run(sim: Any, tmp_path: Path, policy: _Signalling, timeout_sec: int) -> TaskReport:
    phone = host_phone(sim)
    spec = task_spec("shop-my-orders", phone)
    spec = type(spec)(task=spec.task.model_copy(update={"timeout_sec": timeout_sec}), directory=spec.directory,
                      apps=spec.apps, probes=spec.probes, markers=spec.markers)
    tree = EvalTree(tmp_path / "eval" / "r1", "r1")
    return run_task(spec, phone, policy, tree, execution="simulated", installed=installed(sim), on_takeover="wait")


def test_wait_resumes_when_the_person_clears_the_login_wall(virtual_phone: Any, tmp_path: Path) -> None:
    import adbutils

    policy = _Signalling({"shop-my-orders": _AFTER_LOGIN})

    def person() -> None:
        assert policy.handed.wait(60)
        device = adbutils.AdbClient(port=virtual_phone.adb_port).device(virtual_phone.serial)
        device.keyevent("BACK")  # leaves the login wall, as a user giving up on 我的订单 would

    helper = threading.Thread(target=person)
    helper.start()
    report = _run(virtual_phone, tmp_path, policy, timeout_sec=120)
    helper.join(5)
    assert report.evidence.hand_over is not None and report.evidence.hand_over.reason == "login"
    assert (report.evidence.end, report.evidence.answer, report.result.outcome) == ("answer", "回到了首页", "succeeded")
    assert policy.feedback[-1] is not None and "user completed the hand-over" in policy.feedback[-1]
    assert report.attempt.takeover_wait is not None and report.attempt.takeover_wait.startswith("login cleared")


def test_wait_times_out_as_takeover_when_nobody_comes(virtual_phone: Any, tmp_path: Path) -> None:
    policy = _Signalling({"shop-my-orders": _AFTER_LOGIN})
    report = _run(virtual_phone, tmp_path, policy, timeout_sec=10)
    assert (report.result.outcome, report.result.takeover_kind) == ("takeover", "login")
    assert report.line.reason is not None and "the wait timed out" in report.line.reason
    assert report.evidence.answer is None and "waited for the user" in report.evidence.end_reason
