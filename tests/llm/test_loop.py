"""The shared model loop (`farm.llm.loop`): a tiny tool executor and the real clients against the loopback stub."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic import JsonValue

from farm.llm.client import ModelCallError, ModelClient
from farm.llm.loop import (
    Feedback,
    LoopHalt,
    LoopHooks,
    LoopOutcome,
    Step,
    ToolExecutor,
    ToolResult,
    ask,
    run_tool_loop,
)
from farm.llm.policy import ModelPolicy
from farm.llm.stub import ModelStub, StubReply
from farm.llm.types import Message, ModelTurn, ToolCall, ToolSpec
from tests.llm.conftest import MakeClient

TOOLS = [
    ToolSpec(name="lookup", description="Look a word up.", parameters={
        "type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}),
    ToolSpec(name="look", description="A picture of the page."),
]
JPEG = b"\xff\xd8\xff\xe0 tiny jpeg \xff\xd9"


class FakeTools:
    """Answers `lookup` from a dictionary and `look` with a JPEG; records every call it ran."""

    def __init__(self, halt_on: str | None = None) -> None:
        self.calls: list[tuple[str, dict[str, JsonValue]]] = []
        self.halt_on = halt_on

    def __call__(self, call: ToolCall, arguments: dict[str, JsonValue]) -> ToolResult:
        self.calls.append((call.name, arguments))
        if call.name == self.halt_on:
            raise LoopHalt("guard", f"{call.name} is not allowed here")
        if call.name == "look":
            return ToolResult(text="a page", image_jpeg=JPEG)
        meaning = {"cat": "a small feline"}.get(str(arguments.get("word")))
        return ToolResult(text=meaning or "not found", is_error=meaning is None)


class Recorder(LoopHooks):
    """Writes every hook call down, in order."""

    def __init__(self, *, stream: bool = True) -> None:
        self.stream = stream
        self.events: list[str] = []
        self.errors: list[ModelCallError] = []

    def on_request(self, step: int, messages: Sequence[Message]) -> None:
        self.events.append(f"request {step}")

    def on_delta(self) -> None:
        self.events.append("delta")

    def on_reply(self, step: int, reply: ModelTurn) -> None:
        self.events.append(f"reply {step}")

    def on_error(self, step: int, exc: ModelCallError) -> None:
        self.errors.append(exc)
        self.events.append(f"error {step}")

    def on_answer(self, step: int, text: str | None) -> None:
        self.events.append(f"answer {step}")

    def on_bad_arguments(self, call: ToolCall, error: str) -> None:
        self.events.append(f"bad {call.name}")


class OneToolBudget(LoopHooks):
    """Halts the loop once the executor has run a tool call."""

    def __init__(self, tools: FakeTools) -> None:
        self.tools = tools

    def halt(self) -> None:
        if self.tools.calls:
            raise LoopHalt("budget", f"stopped after {len(self.tools.calls)} tool call(s)")


def _conversation(question: str = "What is a cat?") -> list[Message]:
    return [Message.system("Answer briefly."), Message.user(question)]


class Run:
    """One loop over the real model policy; `messages` is the policy's conversation afterwards."""

    def __init__(self, client: ModelClient, execute: ToolExecutor, *, max_steps: int = 5,
                 hooks: LoopHooks | None = None, expired: bool = False) -> None:
        self.policy: ModelPolicy[str] = ModelPolicy(client, TOOLS, _conversation)
        self.out = run_tool_loop(self.policy, "What is a cat?", execute, max_steps=max_steps,
                                 expired=lambda: expired, hooks=hooks)
        self.messages = self.policy.messages


def _run(client: ModelClient, execute: ToolExecutor, *, max_steps: int = 5, hooks: LoopHooks | None = None,
         expired: bool = False) -> LoopOutcome:
    return Run(client, execute, max_steps=max_steps, hooks=hooks, expired=expired).out


def test_an_answer_without_tools_completes_the_loop(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="A small feline.")])
    tools = FakeTools()
    run = Run(client_for("openai"), tools)
    out = run.out
    assert (out.status, out.answer, out.steps, out.tool_calls) == ("completed", "A small feline.", 1, 0)
    assert tools.calls == [] and run.messages[-1].role == "assistant"


def test_a_tool_call_runs_and_its_result_reaches_the_model(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(tool_calls=[("lookup", {"word": "cat"})]), StubReply(text="A small feline.")])
    tools = FakeTools()
    out = _run(client_for("openai"), tools)
    assert (out.status, out.answer, out.steps, out.tool_calls) == ("completed", "A small feline.", 2, 1)
    assert tools.calls == [("lookup", {"word": "cat"})]
    assert stub.requests[1].tool_results() == ["a small feline"]


def test_a_tool_result_image_is_sent_with_it(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(tool_calls=[("look", {})]), StubReply(text="I see a page.")])
    run = Run(client_for("anthropic"), FakeTools())
    assert run.out.status == "completed"
    assert stub.requests[0].image_count() == 0 and stub.requests[1].image_count() == 1
    assert run.messages[-2].images == [JPEG]


def test_bad_json_arguments_are_an_error_result_and_the_loop_goes_on(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([
        StubReply(tool_calls=[("lookup", '{"word": "cat"')]),
        StubReply(tool_calls=[("lookup", {"word": "cat"})]),
        StubReply(text="A small feline."),
    ])
    tools, hooks = FakeTools(), Recorder()
    out = _run(client_for("openai"), tools, hooks=hooks)
    (bad,) = stub.requests[1].tool_results()
    assert bad.startswith("Error: tool lookup: arguments are not valid JSON")
    assert tools.calls == [("lookup", {"word": "cat"})]  # the malformed call never reached the executor
    assert (out.status, out.steps, out.tool_calls) == ("completed", 3, 1)
    assert "bad lookup" in hooks.events


def test_arguments_that_are_not_an_object_are_refused_too(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(tool_calls=[("lookup", '["cat"]')]), StubReply(text="Sorry.")])
    tools = FakeTools()
    out = _run(client_for("openai"), tools)
    assert stub.requests[1].tool_results() == ["Error: tool lookup: arguments are not a JSON object"]
    assert (out.status, tools.calls) == ("completed", [])


def test_running_out_of_steps_ends_with_max_steps_and_keeps_the_last_text(
    stub: ModelStub, client_for: MakeClient,
) -> None:
    stub.script([StubReply(text=f"trying {n}", tool_calls=[("lookup", {"word": "dog"})]) for n in range(3)])
    tools = FakeTools()
    out = _run(client_for("openai"), tools, max_steps=3)
    assert (out.status, out.steps, out.tool_calls, out.answer) == ("max_steps", 3, 3, None)
    assert out.last_text == "trying 2" and len(stub.requests) == 3


def test_a_hook_raising_loop_halt_stops_before_the_next_request(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(tool_calls=[("lookup", {"word": "cat"})]), StubReply(text="never asked for")])
    tools = FakeTools()
    out = _run(client_for("openai"), tools, hooks=OneToolBudget(tools))
    assert out.status == "halted" and out.halt is not None
    assert (out.halt.reason, out.halt.detail) == ("budget", "stopped after 1 tool call(s)")
    assert len(stub.requests) == 1 and stub.pending == 1


def test_the_tool_executor_may_halt_the_loop(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(tool_calls=[("look", {})]), StubReply(text="never asked for")])
    out = _run(client_for("openai"), FakeTools(halt_on="look"))
    assert out.status == "halted" and out.halt is not None and out.halt.reason == "guard"
    assert len(stub.requests) == 1


def test_a_failed_model_call_ends_with_model_error(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(status=400, error_message="bad request")])
    hooks = Recorder()
    out = _run(client_for("openai"), FakeTools(), hooks=hooks)
    assert out.status == "model_error" and out.error is not None
    assert (out.error.kind, out.error.status, out.steps) == ("client", 400, 1)
    assert hooks.events == ["request 1", "error 1"] and hooks.errors == [out.error]


def test_transient_failures_are_retried_inside_one_step(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply.server_error(), StubReply(text="A small feline.")])
    out = _run(client_for("openai"), FakeTools())
    assert (out.status, out.steps, len(stub.requests)) == ("completed", 1, 2)


def test_an_expired_deadline_ends_with_timeout_before_any_request(stub: ModelStub, client_for: MakeClient) -> None:
    out = _run(client_for("openai"), FakeTools(), expired=True)
    assert (out.status, out.steps, stub.requests) == ("timeout", 0, [])


def test_hooks_see_request_delta_reply_answer_in_order(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="A small feline.")])
    hooks = Recorder()
    _run(client_for("openai"), FakeTools(), hooks=hooks)
    assert hooks.events == ["request 1", "delta", "reply 1", "answer 1"]


def test_ask_streams_by_default(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="hi")])
    reply = ask(client_for("openai"), _conversation(), TOOLS, step=1)
    assert reply.streamed and reply.first_delta_ms is not None
    assert stub.requests[0].body.get("stream") is True


def test_ask_without_streaming_sends_a_plain_request(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(text="hi")])
    hooks = Recorder(stream=False)
    reply = ask(client_for("openai"), _conversation(), TOOLS, step=7, hooks=hooks)
    assert (reply.text, reply.streamed) == ("hi", False)
    assert "stream" not in stub.requests[0].body
    assert hooks.events == ["request 7", "reply 7"]


def test_ask_raises_the_model_error_after_the_error_hook(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(status=401, error_message="no key")])
    hooks = Recorder()
    with pytest.raises(ModelCallError) as caught:
        ask(client_for("anthropic"), _conversation(), TOOLS, step=2, hooks=hooks)
    assert hooks.errors == [caught.value] and hooks.events == ["request 2", "error 2"]


class Script:
    """A policy without a model: plays fixed steps and writes down the feedback it read."""

    name = "scripted"

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        self.brief: str | None = None
        self.read: list[list[tuple[str | None, str, bool]]] = []

    def begin(self, brief: str, hooks: LoopHooks) -> None:
        self.brief = brief

    def step(self, step: int, feedback: Sequence[Feedback]) -> Step:
        self.read.append([(f.call.name if f.call else None, f.output.text, f.output.is_error) for f in feedback])
        if step > len(self.steps):
            raise LoopHalt("script", "the script ran out")
        return self.steps[step - 1]


def _call(name: str, arguments: str, n: int = 1) -> ToolCall:
    return ToolCall(id=f"s{n}", name=name, arguments_json=arguments)


def test_a_scripted_policy_runs_on_the_same_loop_and_reads_its_results() -> None:
    script = Script([Step(calls=[_call("lookup", '{"word": "cat"}'), _call("lookup", '{"word": "emu"}', 2)]),
                     Step(text="A small feline.")])
    tools = FakeTools()
    out = run_tool_loop(script, "the brief", tools, max_steps=5, expired=lambda: False)
    assert (out.status, out.answer, out.steps, out.tool_calls) == ("completed", "A small feline.", 2, 2)
    assert script.brief == "the brief"
    assert script.read == [[], [("lookup", "a small feline", False), ("lookup", "not found", True)]]


def test_a_step_without_a_usable_call_is_fed_back_as_an_error_and_is_not_an_answer() -> None:
    script = Script([Step(text="I will tap it", error="no tool call: reply with exactly one tool call"),
                     Step(text="done")])
    hooks = Recorder()
    out = run_tool_loop(script, "b", FakeTools(), max_steps=5, expired=lambda: False, hooks=hooks)
    assert (out.status, out.answer, out.steps, out.tool_calls) == ("completed", "done", 2, 0)
    assert script.read[1] == [(None, "Error: no tool call: reply with exactly one tool call", True)]
    assert hooks.events == ["answer 2"]


def test_error_steps_count_against_the_step_limit() -> None:
    script = Script([Step(error="no tool call") for _ in range(4)])
    out = run_tool_loop(script, "b", FakeTools(), max_steps=3, expired=lambda: False)
    assert (out.status, out.steps, out.answer, out.tool_calls) == ("max_steps", 3, None, 0)


def test_on_step_sees_every_move_before_its_calls_run() -> None:
    seen: list[tuple[int, int]] = []
    tools = FakeTools()

    class Watch(LoopHooks):
        def on_step(self, step: int, move: Step) -> None:
            seen.append((step, len(tools.calls)))

    script = Script([Step(calls=[_call("lookup", '{"word": "cat"}')]), Step(text="ok")])
    run_tool_loop(script, "b", tools, max_steps=5, expired=lambda: False, hooks=Watch())
    assert seen == [(1, 0), (2, 1)]


def test_a_policy_may_halt_the_loop() -> None:
    out = run_tool_loop(Script([]), "b", FakeTools(), max_steps=5, expired=lambda: False)
    assert out.status == "halted" and out.halt is not None
    assert (out.halt.reason, out.halt.detail, out.steps) == ("script", "the script ran out", 1)


def test_results_a_halt_left_unread_are_handed_back(stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(tool_calls=[("lookup", {"word": "cat"})]), StubReply(text="never asked for")])
    tools = FakeTools()
    run = Run(client_for("openai"), tools, hooks=OneToolBudget(tools))
    assert run.out.status == "halted" and len(stub.requests) == 1
    assert [(f.call.name if f.call else None, f.output.text) for f in run.out.unread] == [("lookup", "a small feline")]
    run.policy.take(run.out.unread)
    assert run.messages[-1].role == "tool" and run.messages[-1].text == "a small feline"


def test_an_exhausted_step_limit_leaves_the_last_results_unread() -> None:
    script = Script([Step(calls=[_call("lookup", '{"word": "cat"}')])])
    out = run_tool_loop(script, "b", FakeTools(), max_steps=1, expired=lambda: False)
    assert out.status == "max_steps" and [f.output.text for f in out.unread] == ["a small feline"]
