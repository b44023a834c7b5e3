"""ScriptedPolicy as a `farm.llm.loop.Policy`: one call per step, resolved against the screen it was last given."""

import json

import pytest

from farm.llm.loop import Feedback, LoopHooks, ToolResult
from farm.llm.types import ToolCall
from host_agent.observation import Observation, observe_xml
from host_agent.policy import PhoneBrief, PolicyUnavailable, TaskContext
from host_agent.scripted import Script, ScriptedPolicy
from host_agent.session import PhoneResult
from tests.helpers.host import hierarchy, make_task, node


def _screen(*labels: str) -> Observation:
    return observe_xml(hierarchy(*(node(label, clickable=True) for label in labels)))


def _begun(*steps: dict[str, object], screen: Observation | None = None) -> ScriptedPolicy:
    policy = ScriptedPolicy({"t-read": Script.model_validate({"steps": list(steps)})})
    policy.begin(PhoneBrief(ctx=TaskContext(task=make_task()), screen=screen or _screen("a")), LoopHooks())
    return policy


def test_each_step_is_one_call_with_a_step_numbered_id_and_no_reply() -> None:
    policy = _begun({"home": None}, {"back": None})
    moves = [policy.step(n, []) for n in (1, 2)]
    assert [[(c.id, c.name, c.arguments_json) for c in m.calls] for m in moves] == [
        [("s1", "home", "{}")], [("s2", "back", "{}")]]
    assert all(m.reply is None and m.error is None and m.text is None for m in moves)


def test_raw_steps_are_sent_verbatim_even_when_malformed() -> None:
    policy = _begun({"raw": {"tool": "tap", "arguments": '{"ref": 3'}})
    assert policy.step(1, []).calls == [ToolCall(id="s1", name="tap", arguments_json='{"ref": 3')]


def test_a_script_that_runs_out_gives_up() -> None:
    policy = _begun({"home": None})
    policy.step(1, [])
    (call,) = policy.step(2, []).calls
    assert call.name == "give_up"
    assert json.loads(call.arguments_json) == {"reason": "script ended without finishing the task"}


def test_selectors_resolve_against_the_screen_the_last_call_left() -> None:
    policy = _begun({"tap": "go"}, {"tap": "next"}, screen=_screen("go"))
    assert policy.step(1, []).calls[0].arguments_json == '{"ref": 1}'
    after = PhoneResult(text="tap at 50,25", observation=_screen("back", "next"))
    (call,) = policy.step(2, [Feedback(ToolCall(id="s1", name="tap", arguments_json='{"ref": 1}'), after)]).calls
    assert call.arguments_json == '{"ref": 2}'


def test_feedback_without_a_screen_keeps_the_last_screen() -> None:
    policy = _begun({"raw": {"tool": "tap", "arguments": "{"}}, {"tap": "go"}, screen=_screen("x", "go"))
    bad = policy.step(1, []).calls[0]
    (call,) = policy.step(2, [Feedback(bad, ToolResult(text="Error: bad", is_error=True))]).calls
    assert call.arguments_json == '{"ref": 2}'


def test_a_selector_that_finds_nothing_gives_up_loudly() -> None:
    policy = _begun({"tap": "missing"})
    (call,) = policy.step(1, []).calls
    assert call.name == "give_up" and "no element" in json.loads(call.arguments_json)["reason"]


def test_a_task_without_a_script_cannot_begin() -> None:
    policy = ScriptedPolicy({})
    with pytest.raises(PolicyUnavailable, match="no script for task t-read"):
        policy.begin(PhoneBrief(ctx=TaskContext(task=make_task()), screen=_screen("a")), LoopHooks())


def _clock_screen(shown: str) -> Observation:
    return observe_xml(hierarchy(node(shown, rid="com.android.systemui:id/clock"),
                                 node("", cls="android.widget.EditText", rid="com.example:id/time", clickable=True)))


@pytest.mark.parametrize(("shown", "typed"), [("09:15", "10:15"), ("23:30", "00:30"), ("7:05", "08:05")])
def test_a_time_value_is_the_phones_clock_that_many_minutes_later(shown: str, typed: str) -> None:
    policy = _begun({"type": {"text": "{time+60:clock}", "into": {"resource_id": "time"}}},
                    screen=_clock_screen(shown))
    (call,) = policy.step(1, []).calls
    assert json.loads(call.arguments_json)["text"] == typed


@pytest.mark.parametrize("shown", ["24:10", "9:7", "下午 3:00", "--:--"])
def test_a_clock_that_shows_no_time_ends_the_script_loudly(shown: str) -> None:
    policy = _begun({"type": {"text": "{time+60:clock}", "into": {"resource_id": "time"}}},
                    screen=_clock_screen(shown))
    (call,) = policy.step(1, []).calls
    assert call.name == "give_up" and "not a time HH:MM" in json.loads(call.arguments_json)["reason"]
