"""The runner end to end: scripted smoke on both backends, the model policy through the loopback
model stub, forbidden tools, state timing and the event record — both policies on the one loop."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

import pytest

from farm.errors import FarmError
from farm.llm.client import make_client
from farm.llm.loop import Feedback, LoopHooks, Policy, Step
from farm.llm.model_config import LLMConfig
from farm.llm.policy import ModelPolicy
from farm.llm.stub import ModelStub, StubReply, StubUsage
from tests.helpers.web import BackendFactory
from web_bench.paired import snapshot
from web_bench.paired.matrix import plan
from web_bench.paired.model_policy import model_policy
from web_bench.paired.results import WebRun, expand
from web_bench.paired.runner import MAX_STEPS, RunContext, run_matrix
from web_bench.paired.scripted import SCRIPTS, Script, ScriptedPolicy
from web_bench.paired.site.catalog import SUITE_VERSION, TASK_NAMES, TaskInstance
from web_bench.paired.site.server import SiteServer
from web_bench.paired.turn import WebBrief


def _run(make_backend: BackendFactory, site: SiteServer, policy: Policy[WebBrief], name: str, backends: list[str],
         tasks: list[str], seed: int = 1, max_steps: int = MAX_STEPS) -> list[WebRun]:
    opened = {b: make_backend(b) for b in backends}  # type: ignore[arg-type]
    ctx = RunContext(run_id="test", site_url=site.base_url, policy=policy, policy_name=name,  # type: ignore[arg-type]
                     timeout_ms=60000, max_steps=max_steps)
    return run_matrix(plan(tasks, [seed], 1, backends), opened, ctx, lambda _: None)  # type: ignore[arg-type]


class _Recorded(ScriptedPolicy):
    """The scripted policy, keeping every call it made per task."""

    def __init__(self, scripts: dict[str, Callable[[TaskInstance, str], Script]] | None = None) -> None:
        super().__init__(scripts)
        self.runs: dict[str, list[list[str]]] = {}
        """Task → the calls of each of its runs, in run order."""
        self._current: list[str] = []

    @property
    def calls(self) -> dict[str, list[str]]:
        """Task → the calls of its latest run."""
        return {task: runs[-1] for task, runs in self.runs.items()}

    def begin(self, brief: WebBrief, hooks: LoopHooks) -> None:
        self.runs.setdefault(brief.instance.task, []).append([])
        self._current = self.runs[brief.instance.task][-1]
        super().begin(brief, hooks)

    def step(self, step: int, feedback: Sequence[Feedback]) -> Step:
        move = super().step(step, feedback)
        self._current += [c.name for c in move.calls]
        return move


@pytest.fixture(scope="module")
def smoke(make_backend: BackendFactory, site: SiteServer) -> tuple[list[WebRun], _Recorded]:
    """The scripted smoke, run once for the module: every task on playwright, then on android-chrome."""
    policy = _Recorded()
    runs = _run(make_backend, site, policy, "scripted", ["playwright", "android-chrome"], list(TASK_NAMES), seed=3)
    return runs, policy


def _scripted_events(tools: int) -> list[str]:
    return ["turn/start", *["tool/call", "tool/result"] * tools, "assistant/text", "turn/end"]


def test_scripted_smoke_succeeds_on_both_backends(smoke: tuple[list[WebRun], _Recorded]) -> None:
    runs, _ = smoke
    assert len(runs) == 12
    failed = [(r.task, r.backend, r.error, r.validation.detail) for r in runs if not r.success]
    assert failed == []
    assert {r.backend for r in runs} == {"playwright", "android-chrome"}
    assert all(r.benchmark_suite_version == SUITE_VERSION for r in runs)


def test_write_tasks_record_state_reached_and_read_tasks_do_not(smoke: tuple[list[WebRun], _Recorded]) -> None:
    by_task = {r.task: r for r in smoke[0] if r.backend == "playwright"}
    assert by_task["order_lookup"].timings.state_reached_ms is None
    reached = by_task["contact_form"].timings.state_reached_ms
    assert reached is not None and 0 < reached <= by_task["contact_form"].timings.completion_ms


def test_event_runs_expand_to_the_turn(smoke: tuple[list[WebRun], _Recorded]) -> None:
    (run,) = [r for r in smoke[0] if (r.task, r.backend) == ("order_lookup", "playwright")]
    events = expand(run.diagnostics.event_type_runs)
    assert events[0] == "turn/start" and events[-1] == "turn/end"
    assert events.count("tool/call") == run.diagnostics.tool_calls == 2
    assert events == _scripted_events(2)
    assert run.timings.tool_wall_ms > 0


def test_each_script_makes_its_calls_one_per_step(smoke: tuple[list[WebRun], _Recorded]) -> None:
    runs, policy = smoke
    click, type_ = "browser_click", "browser_type"
    expected = {
        "order_lookup": ["browser_navigate", click],
        "notification_toggle": ["browser_navigate", click, click],
        "contact_form": ["browser_navigate", type_, type_, type_, click],
        "inventory_filter": ["browser_navigate", "browser_select_option", click],
        "cart_checkout": ["browser_navigate", click, click, type_, click, click],
        "lazy_load": ["browser_navigate", click, "browser_wait_for"],
    }
    # The same calls on both backends: the script reads refs from each backend's own snapshot.
    assert policy.runs == {task: [calls, calls] for task, calls in expected.items()}
    for run in runs:
        assert expand(run.diagnostics.event_type_runs) == _scripted_events(len(expected[run.task]))


def _click_a_missing_ref(inst: TaskInstance, url: str) -> Script:
    yield "browser_navigate", {"url": url}
    yield "browser_click", {"element": "nothing", "ref": "e99999"}
    return "never reached"


def test_a_script_whose_call_fails_ends_without_an_answer(make_backend: BackendFactory, site: SiteServer) -> None:
    policy = _Recorded({"order_lookup": _click_a_missing_ref})
    (run,) = _run(make_backend, site, policy, "scripted", ["playwright"], ["order_lookup"])
    assert policy.calls["order_lookup"] == ["browser_navigate", "browser_click"]
    assert (run.success, run.status, run.answer, run.infrastructure_error) == (False, "completed", None, False)
    assert run.error is not None and run.error.startswith("script: ") and "e99999" in run.error
    assert run.diagnostics.tool_errors == 1
    assert expand(run.diagnostics.event_type_runs) == [
        "turn/start", "tool/call", "tool/result", "tool/call", "tool/error", "assistant/text", "turn/end",
    ]


def _order_of_another(inst: TaskInstance, url: str) -> Script:
    # The real script for an order the list does not show: its step cannot be made, no call is sent.
    return SCRIPTS["order_lookup"](inst.model_copy(update={"target": "NO-SUCH-ORDER"}), url)


def test_a_script_step_the_page_does_not_allow_ends_without_an_answer(
    make_backend: BackendFactory, site: SiteServer
) -> None:
    policy = _Recorded({"order_lookup": _order_of_another})
    (run,) = _run(make_backend, site, policy, "scripted", ["playwright"], ["order_lookup"])
    assert policy.calls["order_lookup"] == ["browser_navigate"]
    assert (run.status, run.answer, run.diagnostics.tool_errors) == ("completed", None, 0)
    assert run.error is not None and run.error.startswith("script: ") and "NO-SUCH-ORDER" in run.error
    assert expand(run.diagnostics.event_type_runs) == _scripted_events(1)


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


def _model_policy(stub: ModelStub, provider: Literal["openai", "anthropic"] = "openai") -> ModelPolicy[WebBrief]:
    cfg = LLMConfig(provider=provider, model="stub-model", base_url=stub.base_url(provider), api_key_env="STUB_KEY",
                    max_retries=0)
    return model_policy(make_client(cfg, environ={"STUB_KEY": "test-key"}))


def _model_step(*tool_events: str) -> list[str]:
    return ["model/request", "model/response", *tool_events]


@pytest.mark.parametrize("backend", ["playwright", "android-chrome"])
def test_model_policy_drives_a_task_to_success(make_backend: BackendFactory, site: SiteServer, backend: str) -> None:
    with ModelStub(responder=_order_lookup_model(forbidden_tool=False)) as stub:
        (run,) = _run(make_backend, site, _model_policy(stub), "model", [backend], ["order_lookup"])
        offered = {t["function"]["name"] for t in stub.requests[0].body["tools"]}
    assert run.success, (run.error, run.validation.detail)
    assert run.diagnostics.model_calls == 3
    assert expand(run.diagnostics.event_type_runs) == [
        "turn/start", *_model_step("tool/call", "tool/result"), *_model_step("tool/call", "tool/result"),
        *_model_step("assistant/text"), "turn/end",
    ]
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
    assert expand(run.diagnostics.event_type_runs)[-6:] == [
        "tool/call", "tool/refused", *_model_step("assistant/text"), "turn/end",
    ]


def test_model_error_ends_the_turn_as_error(make_backend: BackendFactory, site: SiteServer) -> None:
    with ModelStub(default=StubReply.server_error(500)) as stub:
        (run,) = _run(make_backend, site, _model_policy(stub), "model", ["playwright"], ["order_lookup"])
    assert not run.success
    assert run.status == "error" and run.error is not None and "500" in run.error
    assert run.infrastructure_error
    assert expand(run.diagnostics.event_type_runs) == ["turn/start", "model/request", "model/error", "turn/end"]


def test_run_past_its_time_limit_fails_as_timeout(make_backend: BackendFactory, site: SiteServer) -> None:
    backend = make_backend("playwright")
    ctx = RunContext(run_id="t", site_url=site.base_url, policy=ScriptedPolicy(), policy_name="scripted",
                     timeout_ms=1)
    (run,) = run_matrix(plan(["cart_checkout"], [1], 1, ["playwright"]), {"playwright": backend}, ctx,
                        lambda _: None)
    assert (run.success, run.status, run.error) == (False, "timeout", "time limit reached")
    events = expand(run.diagnostics.event_type_runs)
    assert (events[0], events[-1], "assistant/text" in events) == ("turn/start", "turn/end", False)


def test_model_that_never_answers_fails_at_the_step_limit(make_backend: BackendFactory, site: SiteServer) -> None:
    with ModelStub(default=StubReply(tool_calls=[("browser_snapshot", {})])) as stub:
        (run,) = _run(make_backend, site, _model_policy(stub), "model", ["playwright"], ["lazy_load"], max_steps=3)
    assert (run.success, run.status, run.diagnostics.model_calls) == (False, "max_steps", 3)
    assert run.error == "no final answer within 3 model steps"
    assert expand(run.diagnostics.event_type_runs) == [
        "turn/start", *_model_step("tool/call", "tool/result") * 3, "turn/end",
    ]


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
