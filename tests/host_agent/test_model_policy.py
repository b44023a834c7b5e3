"""ModelPolicy's conversation, against the loopback stub through the real openai SDK (no phone)."""

from collections.abc import Iterator

import pytest

from farm.llm.client import ModelClient, make_client
from farm.llm.config import LLMConfig
from farm.llm.stub import ModelStub, StubReply
from host_agent.model_policy import ModelPolicy
from host_agent.observation import Observation, observe_xml
from host_agent.policy import TaskContext
from tests.helpers.host import hierarchy, make_task, node


@pytest.fixture
def stub_client(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModelStub, ModelClient]]:
    monkeypatch.setenv("FARM_TEST_MODEL_KEY", "test-key")
    with ModelStub() as stub:
        cfg = LLMConfig(provider="openai", model="m", base_url=stub.base_url_openai, api_key_env="FARM_TEST_MODEL_KEY")
        with make_client(cfg) as client:
            yield stub, client


def _screen(label: str) -> Observation:
    return observe_xml(hierarchy(node(label, clickable=True)))


def test_first_message_has_goal_apps_and_screen(stub_client: tuple[ModelStub, ModelClient]) -> None:
    stub, client = stub_client
    stub.script([StubReply(tool_calls=[("back", {})])])
    policy = ModelPolicy(client)
    policy.begin(TaskContext(task=make_task(goal="看电量", channel="web"), apps={"settings": "com.android.settings"}))
    decision = policy.decide(_screen("电池"), None)
    assert (decision.tool, decision.round_trips) == ("back", 1)
    first = stub.requests[0].user_texts()[0]
    assert first.startswith("Task: 用网页看电量") and "settings=com.android.settings" in first
    assert '[1] TextView "电池" click' in first


def test_extra_tool_calls_are_answered_not_performed(stub_client: tuple[ModelStub, ModelClient]) -> None:
    stub, client = stub_client
    stub.script([StubReply(tool_calls=[("back", {}), ("home", {})]), StubReply(tool_calls=[("home", {})])])
    policy = ModelPolicy(client)
    policy.begin(TaskContext(task=make_task()))
    assert policy.decide(_screen("a"), None).tool == "back"
    policy.decide(_screen("b"), "pressed back")
    results = stub.requests[1].tool_results()
    assert results[0].startswith("pressed back") and results[1] == "not performed: one tool call per turn"


def test_text_without_a_tool_call_is_a_step_error(stub_client: tuple[ModelStub, ModelClient]) -> None:
    stub, client = stub_client
    stub.script([StubReply(text="I think I am done")])
    policy = ModelPolicy(client)
    policy.begin(TaskContext(task=make_task()))
    decision = policy.decide(_screen("a"), None)
    assert decision.error == "no tool call: reply with exactly one tool call"


def test_only_the_last_three_screens_stay_in_the_conversation(stub_client: tuple[ModelStub, ModelClient]) -> None:
    stub, client = stub_client
    stub.script([StubReply(tool_calls=[("back", {})]) for _ in range(5)])
    policy = ModelPolicy(client)
    policy.begin(TaskContext(task=make_task()))
    for i in range(5):
        policy.decide(_screen(f"screen-{i}"), "ok" if i else None)
    sent = " ".join(stub.requests[-1].tool_results() + stub.requests[-1].user_texts())
    assert [f"screen-{i}" in sent for i in range(5)] == [False, False, True, True, True]
    assert sent.count("(older screen omitted)") == 2
