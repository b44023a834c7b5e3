"""ModelPolicy's conversation, against the loopback stub through the real openai SDK (no phone).

The policy is stepped by hand, or by the one loop (`run_tool_loop`) over a small executor that stands in for the
phone: each call gives back a `PhoneResult` with a new screen.
"""

from collections.abc import Iterator

import pytest
from pydantic import JsonValue

from farm.llm.client import ModelClient, make_client
from farm.llm.loop import Feedback, LoopHalt, LoopHooks, LoopOutcome, run_tool_loop
from farm.llm.model_config import LLMConfig
from farm.llm.stub import ModelStub, StubReply
from farm.llm.types import ToolCall
from host_agent.model_policy import ModelPolicy
from host_agent.observation import Observation, observe_xml
from host_agent.policy import PhoneBrief, TaskContext
from host_agent.session import PhoneResult
from tests.helpers.host import hierarchy, make_task, node

_SCREEN = "\n\nScreen now:\n"


class _Hooks(LoopHooks):
    stream = False  # as the phone lane's hooks


@pytest.fixture
def stub_client(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModelStub, ModelClient]]:
    monkeypatch.setenv("FARM_TEST_MODEL_KEY", "test-key")
    with ModelStub() as stub:
        cfg = LLMConfig(provider="openai", model="m", base_url=stub.base_url_openai, api_key_env="FARM_TEST_MODEL_KEY",
                        max_retries=0)
        with make_client(cfg) as client:
            yield stub, client


def _screen(label: str) -> Observation:
    return observe_xml(hierarchy(node(label, clickable=True)))


def _begin(policy: ModelPolicy, screen: Observation, **task: str) -> None:
    policy.begin(PhoneBrief(ctx=TaskContext(task=make_task(**task)), screen=screen), _Hooks())


def _done(call: ToolCall, label: str) -> Feedback:
    return Feedback(call, PhoneResult(text=f"did {call.name}", observation=_screen(label)))


class _FakePhone:
    """An executor standing in for the phone: call n leaves the screen `after-n`; `answer` ends the loop."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, call: ToolCall, arguments: dict[str, JsonValue]) -> PhoneResult:
        if call.name == "answer":
            raise LoopHalt("answer", "")
        self.calls.append(call.name)
        return PhoneResult(text=f"did {call.name}", observation=_screen(f"after-{len(self.calls)}"))


def _loop(policy: ModelPolicy, first: Observation, max_steps: int = 5) -> LoopOutcome:
    brief = PhoneBrief(ctx=TaskContext(task=make_task()), screen=first)
    return run_tool_loop(policy, brief, _FakePhone(), max_steps=max_steps, expired=lambda: False, hooks=_Hooks())


def test_first_message_has_goal_apps_and_screen(stub_client: tuple[ModelStub, ModelClient]) -> None:
    stub, client = stub_client
    stub.script([StubReply(tool_calls=[("back", {})])])
    policy = ModelPolicy(client)
    ctx = TaskContext(task=make_task(goal="看电量", channel="web"), apps={"settings": "com.android.settings"})
    policy.begin(PhoneBrief(ctx=ctx, screen=_screen("电池")), _Hooks())
    move = policy.step(1, [])
    assert [c.name for c in move.calls] == ["back"] and move.error is None
    assert move.reply is not None and len(move.reply.attempts) == 1
    first = stub.requests[0].user_texts()[0]
    assert first.startswith("Task: 用网页看电量") and "settings=com.android.settings" in first
    assert '[1] TextView "电池" click' in first
    assert not stub.requests[0].body.get("stream")


def test_extra_tool_calls_are_answered_not_performed(stub_client: tuple[ModelStub, ModelClient]) -> None:
    stub, client = stub_client
    stub.script([StubReply(tool_calls=[("back", {}), ("home", {})]), StubReply(tool_calls=[("home", {})])])
    policy = ModelPolicy(client)
    _begin(policy, _screen("a"))
    move = policy.step(1, [])
    assert [c.name for c in move.calls] == ["back"]
    policy.step(2, [_done(move.calls[0], "b")])
    results = stub.requests[1].tool_results()
    assert results[0].startswith(f"did back{_SCREEN}") and '"b"' in results[0]
    assert results[1] == "not performed: one tool call per turn"


def test_text_without_a_tool_call_is_a_step_error(stub_client: tuple[ModelStub, ModelClient]) -> None:
    stub, client = stub_client
    stub.script([StubReply(text="I think I am done")])
    policy = ModelPolicy(client)
    _begin(policy, _screen("a"))
    move = policy.step(1, [])
    assert (move.error, move.calls, move.text) == ("no tool call: reply with exactly one tool call", [],
                                                   "I think I am done")


def test_the_error_move_re_sends_the_same_screen(stub_client: tuple[ModelStub, ModelClient]) -> None:
    stub, client = stub_client
    stub.script([StubReply(text="hmm"), StubReply(tool_calls=[("back", {})]),
                 StubReply(tool_calls=[("answer", {"text": "x"})])])
    first = _screen("first")
    out = _loop(ModelPolicy(client), first)
    assert (out.status, out.steps) == ("halted", 3)
    second, third = stub.requests[1], stub.requests[2]
    assert second.user_texts()[-1] == f"error: no tool call: reply with exactly one tool call{_SCREEN}{first.text}"
    assert third.tool_results()[-1] == f"did back{_SCREEN}{_screen('after-1').text}"


def test_a_call_with_bad_json_is_answered_in_the_phones_words_on_the_same_screen(
    stub_client: tuple[ModelStub, ModelClient],
) -> None:
    stub, client = stub_client
    stub.script([StubReply(tool_calls=[("tap", '{"ref": 3')]), StubReply(tool_calls=[("answer", {"text": "x"})])])
    first = _screen("first")
    out = _loop(ModelPolicy(client), first)
    assert (out.status, out.steps) == ("halted", 2)
    (result,) = stub.requests[1].tool_results()
    assert result.startswith("error: tap: arguments are not valid JSON (") and result.endswith(f"{_SCREEN}{first.text}")


def test_error_steps_count_against_the_step_limit(stub_client: tuple[ModelStub, ModelClient]) -> None:
    stub, client = stub_client
    stub.script([StubReply(text="hmm")] * 3)
    out = _loop(ModelPolicy(client), _screen("a"), max_steps=3)
    assert (out.status, out.steps, len(stub.requests)) == ("max_steps", 3, 3)


def test_a_failed_model_call_ends_the_loop_as_a_model_error(stub_client: tuple[ModelStub, ModelClient]) -> None:
    stub, client = stub_client
    stub.script([StubReply(tool_calls=[("back", {})]), StubReply.server_error(400)])
    out = _loop(ModelPolicy(client), _screen("a"))
    assert (out.status, out.steps, out.tool_calls) == ("model_error", 2, 1)
    assert out.error is not None


def test_only_the_last_three_screens_stay_in_the_conversation(stub_client: tuple[ModelStub, ModelClient]) -> None:
    stub, client = stub_client
    stub.script([StubReply(tool_calls=[("back", {})]) for _ in range(5)])
    policy = ModelPolicy(client)
    _begin(policy, _screen("screen-0"))
    move = policy.step(1, [])
    for i in range(1, 5):
        move = policy.step(i + 1, [_done(move.calls[0], f"screen-{i}")])
    sent = " ".join(stub.requests[-1].tool_results() + stub.requests[-1].user_texts())
    assert [f"screen-{i}" in sent for i in range(5)] == [False, False, True, True, True]
    assert sent.count("(older screen omitted)") == 2
