"""Model policy on the virtual phone against the loopback model stub (the real SDKs make the calls)."""

import json
from pathlib import Path
from typing import Any

import pytest

from farm.llm.client import make_client
from farm.llm.model_config import LLMConfig, ModelPrice
from farm.llm.stub import ModelStub, StubReply, StubUsage
from host_agent.evalout import EvalTree
from host_agent.model_policy import ModelPolicy
from host_agent.runner import TaskReport, run_task
from tests.helpers.host import CALCULATOR_PLAN, host_phone, installed, screen_reading_model, task_spec

PRICE = ModelPrice(input_per_m=1.0, output_per_m=2.0, cache_read_per_m=0.5)


def _run(sim: Any, tmp_path: Path, stub: ModelStub, monkeypatch: pytest.MonkeyPatch,
         provider: str = "openai") -> TaskReport:
    monkeypatch.setenv("FARM_TEST_MODEL_KEY", "test-key")
    cfg = LLMConfig(provider=provider, model="stub-model", base_url=stub.base_url(provider),  # type: ignore[arg-type]
                    api_key_env="FARM_TEST_MODEL_KEY", max_retries=2, backoff_initial_s=0.01, backoff_max_s=0.05,
                    timeout_s=30, pricing=PRICE)
    phone = host_phone(sim)
    with make_client(cfg) as client:
        return run_task(task_spec("calculator-multiply", phone), phone, ModelPolicy(client),
                        EvalTree(tmp_path / "r1", "r1"), execution="simulated", installed=installed(sim))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_model_runs_a_full_task(provider: str, virtual_phone: Any, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    with ModelStub(responder=screen_reading_model(CALCULATOR_PLAN)) as stub:
        report = _run(virtual_phone, tmp_path, stub, monkeypatch, provider)
    assert (report.result.outcome, report.result.passed) == ("succeeded", True), report.result.reasons
    assert report.line.metrics.round_trips == len(CALCULATOR_PLAN) == len(stub.requests)
    # Every request after the first carries the previous call's result and the new screen.
    assert all("Screen now:" in json.dumps(r.body, ensure_ascii=False) for r in stub.requests)
    # The phone's requests are the ones it has always sent: not streamed.
    assert not any(r.body.get("stream") for r in stub.requests)


def test_malformed_tool_call_is_a_counted_step_error_the_model_sees(virtual_phone: Any, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with ModelStub(responder=screen_reading_model(CALCULATOR_PLAN)) as stub:
        stub.script([StubReply(tool_calls=[("tap", '{"ref": 3')])])
        report = _run(virtual_phone, tmp_path, stub, monkeypatch)
        second = stub.requests[1]
    assert report.result.passed
    assert report.evidence.step_errors == 1
    lines = (tmp_path / "r1/calculator-multiply/run/steps.jsonl").read_text().splitlines()
    steps = [json.loads(line) for line in lines]
    assert steps[0]["result"]["error"].startswith("tap: arguments are not valid JSON")
    assert steps[0]["action"]["raw"] == '{"ref": 3'
    assert any("error: tap: arguments are not valid JSON" in t for t in second.tool_results())


def test_rate_limit_with_retry_after_is_retried(virtual_phone: Any, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with ModelStub(responder=screen_reading_model(CALCULATOR_PLAN)) as stub:
        stub.script([StubReply.rate_limited(retry_after=0.2)])
        report = _run(virtual_phone, tmp_path, stub, monkeypatch)
    assert report.result.passed
    assert report.line.metrics.round_trips == len(CALCULATOR_PLAN) + 1 == len(stub.requests)


def test_server_error_is_retried(virtual_phone: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ModelStub(responder=screen_reading_model(CALCULATOR_PLAN)) as stub:
        stub.script([StubReply.server_error(500)])
        report = _run(virtual_phone, tmp_path, stub, monkeypatch)
    assert report.result.passed
    assert report.line.metrics.round_trips == len(stub.requests) == len(CALCULATOR_PLAN) + 1


def test_model_that_stays_down_is_an_infrastructure_error(virtual_phone: Any, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    with ModelStub(default=StubReply.server_error(503)) as stub:
        report = _run(virtual_phone, tmp_path, stub, monkeypatch)
    assert (report.result.outcome, report.result.failure_category) == ("error", "infrastructure")
    assert report.result.reasons[0].startswith("model:")


def test_a_model_error_mid_task_ends_the_attempt_as_error_model(virtual_phone: Any, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with ModelStub(default=StubReply.server_error(400)) as stub:
        stub.script([StubReply(tool_calls=[("launch", {"capability": "calculator"})])])
        report = _run(virtual_phone, tmp_path, stub, monkeypatch)
    ev = report.evidence
    assert (ev.end, report.result.outcome, report.result.failure_category) == ("error", "error", "infrastructure")
    assert ev.end_reason.startswith("model: ") and "400" in ev.end_reason
    # The step whose model call failed is not a step: one step, one round trip, one line.
    assert (ev.steps, ev.step_errors, report.line.metrics.round_trips) == (1, 0, 1)
    lines = (tmp_path / "r1/calculator-multiply/run/steps.jsonl").read_text().splitlines()
    assert [json.loads(line)["action"]["tool"] for line in lines] == ["launch"]


def test_tokens_and_cost_add_up_over_the_task(virtual_phone: Any, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    usage = StubUsage(input=100, cached=40, output=7)
    plan = iter(CALCULATOR_PLAN)
    follow = screen_reading_model(list(plan))

    def respond(body: dict[str, Any]) -> StubReply:
        reply = follow(body)
        reply.usage = usage
        return reply

    with ModelStub(responder=respond) as stub:
        report = _run(virtual_phone, tmp_path, stub, monkeypatch)
    n = len(CALCULATOR_PLAN)
    tokens = report.line.tokens
    assert (tokens.input, tokens.cache_read, tokens.output) == (100 * n, 40 * n, 7 * n)
    expected = n * (100 * PRICE.input_per_m + 7 * PRICE.output_per_m + 40 * 0.5) / 1_000_000
    assert report.line.cost_usd == pytest.approx(expected)
    steps = (tmp_path / "r1/calculator-multiply/run/steps.jsonl").read_text().splitlines()
    assert sum(json.loads(s)["tokens"]["output"] for s in steps) == 7 * n


def test_screenshots_go_to_the_model_and_into_the_transcript(virtual_phone: Any, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_TEST_MODEL_KEY", "test-key")
    plan = [("launch", {"capability": "calculator"}), ("answer", {"text": "nothing"})]
    with ModelStub(responder=screen_reading_model(plan)) as stub:
        cfg = LLMConfig(provider="anthropic", model="stub-model", base_url=stub.base_url_anthropic,
                        api_key_env="FARM_TEST_MODEL_KEY")
        phone = host_phone(virtual_phone)
        with make_client(cfg) as client:
            run_task(task_spec("calculator-multiply", phone), phone, ModelPolicy(client, screenshots=True),
                     EvalTree(tmp_path / "r1", "r1"), execution="simulated", installed=installed(virtual_phone))
        counts = [r.image_count() for r in stub.requests]
    # One screenshot with the first screen, two once the second screen is sent (a retried request repeats).
    assert (counts[0], counts[-1]) == (1, 2), counts
    run_dir = tmp_path / "r1/calculator-multiply/run"
    named = [json.loads(s)["observation"]["screenshot"] for s in (run_dir / "steps.jsonl").read_text().splitlines()]
    assert len(named) == 2 and sorted(p.name for p in run_dir.glob("*.jpg")) == sorted(named)
    assert (run_dir / named[0]).read_bytes()[:2] == b"\xff\xd8"
