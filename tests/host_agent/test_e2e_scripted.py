"""Scripted policy on the virtual phone: one task per category behaves as expected."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from farm.llm.loop import Feedback, Step
from host_agent.evalout import EvalTree
from host_agent.runner import TaskReport, run_task
from host_agent.scripted import Script, ScriptedPolicy
from tests.helpers.host import host_phone, installed, task_spec


def _run(sim: Any, tmp_path: Path, task_id: str, scripts: dict[str, Script] | None = None) -> TaskReport:
    from host_agent.state_probes import keys_before, read_state

    phone = host_phone(sim)
    tree = EvalTree(tmp_path / "eval" / "r1", "r1")
    spec = task_spec(task_id, phone)
    # As a run does: the task's state probes are read just before the agent starts.
    before = read_state(phone.shell, keys_before(spec.task))
    return run_task(spec, phone, ScriptedPolicy(scripts), tree, execution="simulated", installed=installed(sim),
                    state_before=before)


def test_calculator_read_passes_by_answer_regex(virtual_phone: Any, tmp_path: Path) -> None:
    report = _run(virtual_phone, tmp_path, "calculator-multiply")
    assert (report.result.outcome, report.result.passed) == ("succeeded", True), report.result.reasons
    assert [c.type for c in report.result.checks if c.passed] == ["answer_regex", "answer_grounded"]


def test_android_version_read_passes_against_the_probe(virtual_phone: Any, tmp_path: Path) -> None:
    report = _run(virtual_phone, tmp_path, "settings-android-version")
    assert report.result.passed, report.result.reasons
    assert virtual_phone.profile.android_release in (report.evidence.answer or "")


def test_note_with_marker_is_found_by_a_fresh_look(virtual_phone: Any, tmp_path: Path) -> None:
    report = _run(virtual_phone, tmp_path, "notes-shopping-list")
    assert report.result.passed, report.result.reasons
    looks = report.evidence.fresh_looks
    assert looks and looks[0].package == "dev.agentfarm.notes" and "AF-r1-note" in looks[0].text
    assert report.line.markers == ["AF-r1-note"]


def test_messenger_send_ends_at_a_checked_confirmation_card(virtual_phone: Any, tmp_path: Path) -> None:
    report = _run(virtual_phone, tmp_path, "messenger-send-self")
    assert (report.result.outcome, report.result.passed) == ("confirmation", True), report.result.reasons
    assert report.result.checks[0].type == "confirmation_shows" and report.result.checks[0].passed
    # The harness never sends: no stored message carries the marker.
    from farm.sim.apps.messenger import MessengerApp

    messages = MessengerApp(virtual_phone.state.ui).messages()
    assert not any("AF-r1-msg" in m["text"] for conv in messages.values() for m in conv)


def test_shop_login_wall_ends_as_takeover_login(virtual_phone: Any, tmp_path: Path) -> None:
    report = _run(virtual_phone, tmp_path, "shop-my-orders")
    assert (report.result.outcome, report.result.takeover_kind, report.result.passed) == ("takeover", "login", True)


def test_impossible_task_ends_failed_and_passes(virtual_phone: Any, tmp_path: Path) -> None:
    report = _run(virtual_phone, tmp_path, "settings-upgrade-android-99")
    assert (report.result.outcome, report.result.passed) == ("failed", True)


def test_wrong_answer_fails(virtual_phone: Any, tmp_path: Path) -> None:
    wrong = Script(steps=[{"launch": {"capability": "calculator"}}, {"answer": "123×456 = 56,086"}])
    report = _run(virtual_phone, tmp_path, "calculator-multiply", {"calculator-multiply": wrong})
    assert (report.result.outcome, report.result.passed, report.result.failure_category) == (
        "failed", False, "perception")


class _UnplugAfter(ScriptedPolicy):
    """Plays a script, and pulls the phone off the adb server after `n` steps (a USB unplug)."""

    def __init__(self, scripts: dict[str, Script], sim: Any, n: int) -> None:
        super().__init__(scripts)
        self.sim, self.n, self.calls = sim, n, 0

    def step(self, step: int, feedback: Sequence[Feedback]) -> Step:
        self.calls += 1
        if self.calls == self.n:
            import adbutils

            adbutils.AdbClient(port=self.sim.adb_port).disconnect(self.sim.serial)
        return super().step(step, feedback)


def test_phone_that_disconnects_mid_task_is_an_infrastructure_error(virtual_phone: Any, tmp_path: Path) -> None:
    script = Script(steps=[{"launch": {"capability": "calculator"}}, *[{"tap": key} for key in "123×456="],
                           {"answer": "never"}])
    phone = host_phone(virtual_phone)
    policy = _UnplugAfter({"calculator-multiply": script}, virtual_phone, n=4)
    report = run_task(task_spec("calculator-multiply", phone), phone, policy, EvalTree(tmp_path / "r1", "r1"),
                      execution="simulated", installed=installed(virtual_phone))
    assert (report.result.outcome, report.result.failure_category) == ("error", "infrastructure")
    assert report.result.reasons[0].startswith("phone")
    assert report.line.outcome == "error" and report.evidence.steps == 4


def test_task_without_a_script_is_an_error_not_an_agent_result(virtual_phone: Any, tmp_path: Path) -> None:
    report = _run(virtual_phone, tmp_path, "settings-upgrade-android-99", {})
    assert (report.result.outcome, report.result.failure_category) == ("error", "infrastructure")
    assert report.result.reasons == ["policy: no script for task settings-upgrade-android-99"]


def test_question_is_answered_from_the_task_and_recorded(virtual_phone: Any, tmp_path: Path) -> None:
    report = _run(virtual_phone, tmp_path, "clock-alarm-ask-time")
    assert report.result.passed, report.result.reasons
    ask = report.evidence.asks[0]
    assert (ask.reply, ask.matched) == ("早上 8 点半", "几点")


def test_unanswerable_question_gets_i_dont_know(virtual_phone: Any, tmp_path: Path) -> None:
    script = Script(steps=[{"ask_user": "你喜欢什么颜色?"}, {"give_up": "不知道"}])
    report = _run(virtual_phone, tmp_path, "clock-alarm-ask-time", {"clock-alarm-ask-time": script})
    assert (report.evidence.asks[0].reply, report.evidence.asks[0].matched) == ("I don't know", None)


def test_same_action_on_the_same_screen_five_times_stops_the_task(virtual_phone: Any, tmp_path: Path) -> None:
    script = Script(steps=[{"launch": {"capability": "calculator"}}, *[{"tap": "C"}] * 8, {"answer": "0"}])
    report = _run(virtual_phone, tmp_path, "calculator-multiply", {"calculator-multiply": script})
    assert (report.evidence.end, report.result.failure_category) == ("repeat", "route")
    assert report.evidence.steps == 6


def test_step_budget_ends_the_task(virtual_phone: Any, tmp_path: Path) -> None:
    phone = host_phone(virtual_phone)
    spec = task_spec("calculator-multiply", phone)
    short = spec.__class__(**{**spec.__dict__, "task": spec.task.model_copy(update={"max_steps": 3})})
    report = run_task(short, phone, ScriptedPolicy(), EvalTree(tmp_path / "r1", "r1"), execution="simulated",
                      installed=installed(virtual_phone))
    assert (report.evidence.end, report.evidence.steps, report.result.outcome) == ("max_steps", 3, "failed")


def test_the_harness_never_presses_send(virtual_phone: Any, tmp_path: Path) -> None:
    from farm.sim.apps.messenger import MessengerApp

    script = Script(steps=[
        {"launch": {"package": "dev.agentfarm.messenger"}}, {"tap": "文件传输助手"},
        {"type": {"text": "{marker}", "into": {"resource_id": "input"}}}, {"tap": "发送"},
        {"confirm": {"action": "发送消息", "target": "文件传输助手", "content": "{marker}"}},
    ])
    report = _run(virtual_phone, tmp_path, "messenger-send-self", {"messenger-send-self": script})
    assert (report.result.outcome, report.result.passed, report.evidence.step_errors) == ("confirmation", True, 1)
    messages = MessengerApp(virtual_phone.state.ui).messages()
    assert not any("AF-r1-msg" in m["text"] for conv in messages.values() for m in conv)


def test_a_stalled_link_mid_task_is_an_infrastructure_error(virtual_farm: Any, tmp_path: Path) -> None:
    import adbutils

    from farm.sim.profile import FaultSpec
    from host_agent.phone import Phone

    sim = virtual_farm(1, faults=FaultSpec(stall_after_bytes=60_000))[0]
    phone = Phone.connect(adbutils.AdbClient(port=sim.adb_port).device(sim.serial), call_timeout_s=3)
    script = Script(steps=[{"launch": {"capability": "calculator"}}, *[{"tap": k} for k in "123×456=" * 3],
                           {"answer": "never"}])
    spec = task_spec("calculator-multiply", phone)
    report = run_task(spec, phone, ScriptedPolicy({"calculator-multiply": script}), EvalTree(tmp_path / "r1", "r1"),
                      execution="simulated", installed=installed(sim))
    assert (report.result.outcome, report.result.failure_category) == ("error", "infrastructure")
    assert "no answer in 3 s" in report.result.reasons[0]


def _steps(tmp_path: Path, task_id: str) -> list[dict[str, Any]]:
    import json

    lines = (tmp_path / "eval/r1" / task_id / "run/steps.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_bad_json_from_a_raw_step_is_a_step_error_and_the_attempt_goes_on(virtual_phone: Any, tmp_path: Path) -> None:
    script = Script(steps=[{"raw": {"tool": "tap", "arguments": '{"ref": 3'}},
                           {"launch": {"capability": "calculator"}}, {"answer": "nothing yet"}])
    report = _run(virtual_phone, tmp_path, "calculator-multiply", {"calculator-multiply": script})
    assert (report.evidence.end, report.evidence.steps, report.evidence.step_errors) == ("answer", 3, 1)
    steps = _steps(tmp_path, "calculator-multiply")
    assert [s["step"] for s in steps] == [1, 2, 3]
    assert steps[0]["result"]["ok"] is False and steps[0]["result"]["error"].startswith(
        "tap: arguments are not valid JSON")
    assert (steps[0]["action"]["tool"], steps[0]["action"]["raw"], steps[0]["action"]["args"]) == (
        "tap", '{"ref": 3', {})
    # The bad call was not performed: the next step was decided on the same screen, which was not read again.
    assert steps[1]["observation"]["digest"] == steps[0]["observation"]["digest"]
    assert steps[1]["timings"]["screenReadMs"] == 0.0
    assert [r.step for r in report.evidence.screen_reads] == [0, 2]  # no read after the terminal answer


def test_unknown_tool_in_a_raw_step_is_named_as_the_phone_names_it(virtual_phone: Any, tmp_path: Path) -> None:
    script = Script(steps=[{"raw": {"tool": "fly", "arguments": "not json"}}, {"give_up": "no wings"}])
    report = _run(virtual_phone, tmp_path, "calculator-multiply", {"calculator-multiply": script})
    assert (report.evidence.end, report.evidence.step_errors) == ("give_up", 1)
    assert _steps(tmp_path, "calculator-multiply")[0]["result"]["error"].startswith("unknown tool 'fly'")


def test_the_step_limit_counts_error_steps(virtual_phone: Any, tmp_path: Path) -> None:
    phone = host_phone(virtual_phone)
    spec = task_spec("calculator-multiply", phone)
    short = spec.__class__(**{**spec.__dict__, "task": spec.task.model_copy(update={"max_steps": 3})})
    script = Script(steps=[*[{"raw": {"tool": "tap", "arguments": "{"}}] * 5, {"answer": "never"}])
    policy = ScriptedPolicy({"calculator-multiply": script})
    report = run_task(short, phone, policy, EvalTree(tmp_path / "eval/r1", "r1"), execution="simulated",
                      installed=installed(virtual_phone))
    assert (report.evidence.end, report.evidence.end_reason) == ("max_steps", "3 steps")
    assert (report.evidence.steps, report.evidence.step_errors) == (3, 3)
    assert len(_steps(tmp_path, "calculator-multiply")) == 3

