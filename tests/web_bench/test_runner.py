"""The runner end to end: scripted smoke on both backends, the model policy through the loopback
model stub, forbidden tools, state timing and the event record."""

from __future__ import annotations

import re
from typing import Any, Literal

import pytest

from farm.errors import FarmError
from farm.llm.client import make_client
from farm.llm.config import LLMConfig
from farm.llm.stub import ModelStub, StubReply, StubUsage
from tests.helpers.web import BackendFactory
from web_bench import snapshot
from web_bench.matrix import plan
from web_bench.model_policy import ModelPolicy
from web_bench.results import WebRun, expand
from web_bench.runner import RunContext, run_matrix
from web_bench.scripted import ScriptedPolicy
from web_bench.site.catalog import SUITE_VERSION, TASK_NAMES
from web_bench.site.server import SiteServer
from web_bench.turn import Policy


def _run(make_backend: BackendFactory, site: SiteServer, policy: Policy, name: str, backends: list[str],
         tasks: list[str], seed: int = 1) -> list[WebRun]:
    opened = {b: make_backend(b) for b in backends}  # type: ignore[arg-type]
    ctx = RunContext(run_id="test", site_url=site.base_url, policy=policy, policy_name=name,  # type: ignore[arg-type]
                     timeout_ms=60000)
    return run_matrix(plan(tasks, [seed], 1, backends), opened, ctx, lambda _: None)  # type: ignore[arg-type]


def test_scripted_smoke_succeeds_on_both_backends(make_backend: BackendFactory, site: SiteServer) -> None:
    runs = _run(make_backend, site, ScriptedPolicy(), "scripted", ["playwright", "android-chrome"],
                list(TASK_NAMES), seed=3)
    assert len(runs) == 12
    failed = [(r.task, r.backend, r.error, r.validation.detail) for r in runs if not r.success]
    assert failed == []
    assert {r.backend for r in runs} == {"playwright", "android-chrome"}
    assert all(r.benchmark_suite_version == SUITE_VERSION for r in runs)


def test_write_tasks_record_state_reached_and_read_tasks_do_not(
    make_backend: BackendFactory, site: SiteServer
) -> None:
    runs = _run(make_backend, site, ScriptedPolicy(), "scripted", ["playwright"], ["order_lookup", "contact_form"])
    by_task = {r.task: r for r in runs}
    assert by_task["order_lookup"].timings.state_reached_ms is None
    reached = by_task["contact_form"].timings.state_reached_ms
    assert reached is not None and 0 < reached <= by_task["contact_form"].timings.completion_ms


def test_event_runs_expand_to_the_turn(make_backend: BackendFactory, site: SiteServer) -> None:
    (run,) = _run(make_backend, site, ScriptedPolicy(), "scripted", ["playwright"], ["order_lookup"])
    events = expand(run.diagnostics.event_type_runs)
    assert events[0] == "turn/start" and events[-1] == "turn/end"
    assert events.count("tool/call") == run.diagnostics.tool_calls == 2
    assert run.timings.tool_wall_ms > 0


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")


def _user_text(body: dict[str, Any]) -> str:
    for message in body["messages"]:
        if message["role"] == "user":
            return _text(message["content"])
    return ""


def _tool_texts(body: dict[str, Any]) -> list[str]:
    """Tool results in either API's request body (OpenAI `tool` messages, Anthropic `tool_result` blocks)."""
    out = []
    for message in body["messages"]:
        if message["role"] == "tool":
            out.append(_text(message["content"]))
        elif isinstance(message["content"], list):
            out += [_text(b["content"]) for b in message["content"] if b.get("type") == "tool_result"]
    return out


def _order_lookup_model(forbidden_tool: bool) -> Any:
    """A stand-in model: navigates, clicks the order (ref read from the snapshot), answers the total;
    optionally calls a non-browser tool on the way."""

    def respond(body: dict[str, Any]) -> StubReply:
        prompt = _user_text(body)
        results = _tool_texts(body)
        usage = StubUsage(input=100, cached=20, output=7)
        if not results:
            url = re.search(r"Start at (\S+)", prompt)
            assert url is not None
            return StubReply(tool_calls=[("browser_navigate", {"url": url.group(1)})], usage=usage)
        if len(results) == 1:
            order_id = re.search(r"Find order (\S+) ", prompt)
            assert order_id is not None
            link = snapshot.find(results[0], "link", f"View order {order_id.group(1)}")
            return StubReply(tool_calls=[("browser_click", {"element": "view", "ref": link.ref})], usage=usage)
        if forbidden_tool and len(results) == 2:
            return StubReply(tool_calls=[("bash", {"command": "cat /etc/passwd"})], usage=usage)
        total = re.search(r"\$[\d,]+\.\d\d", results[1])
        assert total is not None
        return StubReply(text=f"The total is {total.group(0)}.", usage=usage)

    return respond


def _model_policy(stub: ModelStub, provider: Literal["openai", "anthropic"] = "openai") -> ModelPolicy:
    cfg = LLMConfig(provider=provider, model="stub-model", base_url=stub.base_url(provider), api_key_env="STUB_KEY",
                    max_retries=0)
    return ModelPolicy(make_client(cfg, environ={"STUB_KEY": "test-key"}))


@pytest.mark.parametrize("backend", ["playwright", "android-chrome"])
def test_model_policy_drives_a_task_to_success(make_backend: BackendFactory, site: SiteServer, backend: str) -> None:
    with ModelStub(responder=_order_lookup_model(forbidden_tool=False)) as stub:
        (run,) = _run(make_backend, site, _model_policy(stub), "model", [backend], ["order_lookup"])
        offered = {t["function"]["name"] for t in stub.requests[0].body["tools"]}
    assert run.success, (run.error, run.validation.detail)
    assert run.diagnostics.model_calls == 3
    assert (run.tokens.input_new, run.tokens.cache_read, run.tokens.output) == (300, 60, 21)
    assert run.timings.ttft_ms is not None and run.timings.ttft_ms <= run.timings.completion_ms
    assert offered == {
        "browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_select_option",
        "browser_press_key", "browser_wait_for", "browser_navigate_back", "browser_take_screenshot",
    }


def test_non_browser_tool_fails_the_run(make_backend: BackendFactory, site: SiteServer) -> None:
    with ModelStub(responder=_order_lookup_model(forbidden_tool=True)) as stub:
        (run,) = _run(make_backend, site, _model_policy(stub), "model", ["playwright"], ["order_lookup"])
        refused = stub.requests[-1].tool_results()[-1]
    assert run.validation.answer_ok
    assert not run.success
    assert run.diagnostics.disallowed_tools == ["bash"]
    assert run.status == "completed"
    assert "not allowed" in refused


def test_model_error_ends_the_turn_as_error(make_backend: BackendFactory, site: SiteServer) -> None:
    with ModelStub(default=StubReply.server_error(500)) as stub:
        (run,) = _run(make_backend, site, _model_policy(stub), "model", ["playwright"], ["order_lookup"])
    assert not run.success
    assert run.status == "error" and run.error is not None and "500" in run.error
    assert run.infrastructure_error


def test_run_past_its_time_limit_fails_as_timeout(make_backend: BackendFactory, site: SiteServer) -> None:
    backend = make_backend("playwright")
    ctx = RunContext(run_id="t", site_url=site.base_url, policy=ScriptedPolicy(), policy_name="scripted",
                     timeout_ms=1)
    (run,) = run_matrix(plan(["cart_checkout"], [1], 1, ["playwright"]), {"playwright": backend}, ctx,
                        lambda _: None)
    assert (run.success, run.status) == (False, "timeout")


def test_model_that_never_answers_fails_at_the_step_limit(make_backend: BackendFactory, site: SiteServer) -> None:
    with ModelStub(default=StubReply(tool_calls=[("browser_snapshot", {})])) as stub:
        policy = _model_policy(stub)
        policy.max_steps = 3
        (run,) = _run(make_backend, site, policy, "model", ["playwright"], ["lazy_load"])
    assert (run.success, run.status, run.diagnostics.model_calls) == (False, "max_steps", 3)


class _BrokenBackend:
    name = "android-chrome"

    def new_session(self) -> Any:
        raise FarmError("127.0.0.1:5555: cannot connect to Chrome over CDP: refused")

    def close(self) -> None:
        pass


def test_infrastructure_failure_is_recorded_and_the_matrix_goes_on(
    make_backend: BackendFactory, site: SiteServer
) -> None:
    ctx = RunContext(run_id="t", site_url=site.base_url, policy=ScriptedPolicy(), policy_name="scripted",
                     timeout_ms=60000)
    backends = {"playwright": make_backend("playwright"), "android-chrome": _BrokenBackend()}
    runs = run_matrix(plan(["order_lookup"], [1], 1, ["playwright", "android-chrome"]), backends, ctx,  # type: ignore[arg-type]
                      lambda _: None)
    by_backend = {r.backend: r for r in runs}
    broken = by_backend["android-chrome"]
    assert broken.infrastructure_error and not broken.success and broken.status == "error"
    assert broken.error is not None and "cannot connect" in broken.error
    assert by_backend["playwright"].success


def test_model_policy_through_the_anthropic_api(make_backend: BackendFactory, site: SiteServer) -> None:
    with ModelStub(responder=_order_lookup_model(forbidden_tool=False)) as stub:
        (run,) = _run(make_backend, site, _model_policy(stub, "anthropic"), "model", ["playwright"], ["order_lookup"])
        assert stub.requests[0].provider == "anthropic"
    assert run.success, (run.error, run.validation.detail)
    assert (run.tokens.input_new, run.tokens.cache_read, run.tokens.output) == (300, 60, 21)
