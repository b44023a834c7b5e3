"""The turn's model timing: ttftMs is the first non-empty streamed delta of the turn (seed 001), not the
first whole reply; model replies without streamed output leave it unset. The turn's hooks record the loop's
events for any policy."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

import pytest

from farm.llm.client import make_client
from farm.llm.loop import Feedback, LoopHooks, Step, run_tool_loop
from farm.llm.model_config import LLMConfig
from farm.llm.stub import ModelStub, StubReply, user_texts
from farm.llm.stub_sse import anthropic_stream, openai_stream
from farm.llm.types import ToolCall
from farm.results.record import Tokens
from tests.helpers.web import BackendFactory
from web_bench.browser.contract import BackendName, BrowserBackend
from web_bench.paired.matrix import plan
from web_bench.paired.model_policy import model_policy
from web_bench.paired.runner import RunContext, run_matrix
from web_bench.paired.site.catalog import make_instance
from web_bench.paired.site.server import SiteServer
from web_bench.paired.turn import Turn, TurnHooks, WebBrief

DELAY_S = 0.2
"""Pause between the stub's streamed events."""


def _slow_stream_model(served: list[StubReply]) -> Any:
    """Navigate (streamed slowly: a dozen events or so), then answer; every reply is kept in `served`."""

    def respond(body: dict[str, Any]) -> StubReply:
        if not served:
            url = re.search(r"Start at (\S+)", user_texts(body)[0])
            assert url is not None
            reply = StubReply(tool_calls=[("browser_navigate", {"url": url.group(1)})], chunk_delay_s=DELAY_S)
        else:
            reply = StubReply(text="I could not find it.", chunk_delay_s=DELAY_S)
        served.append(reply)
        return reply

    return respond


def _pauses(provider: str, reply: StubReply) -> int:
    if provider == "openai":
        return len(openai_stream(1, "m", reply, include_usage=True)) - 1
    return len(anthropic_stream(1, "m", reply)) - 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_ttft_is_the_first_streamed_delta_not_the_first_whole_reply(
    make_backend: BackendFactory, site: SiteServer, provider: Literal["openai", "anthropic"],
) -> None:
    served: list[StubReply] = []
    with ModelStub(responder=_slow_stream_model(served)) as stub:
        cfg = LLMConfig(provider=provider, model="stub-model", base_url=stub.base_url(provider),
                        api_key_env="STUB_KEY", max_retries=0)
        policy = model_policy(make_client(cfg, environ={"STUB_KEY": "k"}))
        ctx = RunContext(run_id="ttft", site_url=site.base_url, policy=policy, policy_name="model",
                         timeout_ms=60000)
        backends: dict[BackendName, BrowserBackend] = {"playwright": make_backend("playwright")}
        (run,) = run_matrix(plan(["order_lookup"], [1], 1, ["playwright"]), backends, ctx, lambda _: None)
    first_reply_ms = _pauses(provider, served[0]) * DELAY_S * 1000
    ttft = run.timings.ttft_ms
    assert run.status == "completed", run.error
    assert ttft is not None
    # The opening event carries no output, so the first delta is at least one pause in...
    assert ttft >= DELAY_S * 1000
    # ...and well before the first whole reply, which is what the old measure gave.
    assert first_reply_ms >= 8 * DELAY_S * 1000
    assert ttft < first_reply_ms / 2
    assert ttft < run.timings.completion_ms
    assert run.timings.completion_ms >= first_reply_ms


class _NoSession:
    """A turn's session is not touched by its model accounting."""


def _turn() -> Turn:
    return Turn(_NoSession(), timeout_ms=1000)  # type: ignore[arg-type]


def test_a_whole_reply_does_not_set_ttft() -> None:
    turn = _turn()
    turn.model_reply(Tokens(input_new=1, output=1), None)
    assert turn.first_output_ms is None


def test_only_the_turns_first_delta_sets_ttft() -> None:
    turn = _turn()
    turn.model_delta()
    first = turn.first_output_ms
    turn.model_reply(Tokens(), None)
    turn.model_delta()
    assert first is not None and turn.first_output_ms == first


class _MalformedThenAnswer:
    """Calls a tool with arguments that are not JSON, then answers."""

    name = "scripted"

    def begin(self, brief: WebBrief, hooks: LoopHooks) -> None:
        self.read: list[str] = []

    def step(self, step: int, feedback: Sequence[Feedback]) -> Step:
        self.read += [f.output.text for f in feedback]
        if step == 1:
            return Step(calls=[ToolCall(id="c1", name="browser_snapshot", arguments_json="{not json")])
        return Step(text="done")


def test_turn_hooks_record_bad_arguments_without_running_the_tool() -> None:
    turn, policy = _turn(), _MalformedThenAnswer()
    brief = WebBrief(make_instance("order_lookup", 1), "Find it.\n\nStart at http://127.0.0.1:1/")
    out = run_tool_loop(policy, brief, lambda call, args: turn.call_tool(call.name, args), max_steps=5,
                        expired=turn.expired, hooks=TurnHooks(turn))
    assert (out.status, out.answer, out.tool_calls) == ("completed", "done", 0)
    assert turn.events == ["turn/start", "tool/bad_arguments", "assistant/text"]
    assert turn.tool_calls == 0 and "not valid JSON" in policy.read[0]


def test_the_brief_names_its_start_url() -> None:
    instance = make_instance("order_lookup", 1)
    brief = WebBrief(instance, instance.prompt("http://127.0.0.1:8/orders?x=Start at"))
    assert brief.start_url == "http://127.0.0.1:8/orders?x=Start at"
