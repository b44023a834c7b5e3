"""The WebVoyager lane on the one provider-error classifier: an OpenAI-style quota error inside an HTTP 200 is a
quota for the agent, for the judge and for the lane (dispatch stops, the task is kept for `--resume`); a refused
key is `auth`; an answer that merely mentions the quota code is an answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from farm.llm.client import make_client
from farm.llm.model_config import LLMConfig, Provider
from farm.llm.stub import ModelStub, StubReply
from tests.helpers.llm import MakeClient, stub_clients
from tests.helpers.shared_data import shared_data
from tests.helpers.wv_lane import Scenario, run, wv_data, wv_stub
from web_bench.webvoyager import run_tree
from web_bench.webvoyager.agent import AgentSettings, run_attempt
from web_bench.webvoyager.judge_reference import judge_reference
from web_bench.webvoyager.model import AgentResult, WvTask
from web_bench.webvoyager.prompt import load_reference_prompt
from web_bench.webvoyager.standin import DEFAULT_STAND_IN

__all__ = ["wv_data", "wv_stub"]

PROVIDERS: list[Provider] = ["openai", "anthropic"]
KEY_ENV = "WV_QUOTA_TEST_KEY"
TASK = WvTask(task_id="Allrecipes--0", site="Allrecipes", website="https://www.allrecipes.com/",
              confirmed_task="Provide a recipe for vegetarian lasagna with more than 100 reviews.")
QUOTA_200 = StubReply.quota(status=200, code="insufficient_quota")
"""HTTP 200 whose body is an OpenAI-style `insufficient_quota` error (an OpenAI-compatible gateway's way)."""


@pytest.fixture
def stub() -> Iterator[ModelStub]:
    with ModelStub() as running:
        yield running


def _attempt(stub: ModelStub, tmp_path: Path, provider: Provider) -> AgentResult:
    llm = LLMConfig(provider=provider, model="stub-model", base_url=stub.base_url(provider), api_key_env=KEY_ENV,
                    max_retries=5, backoff_initial_s=0.01, backoff_max_s=0.02, timeout_s=30.0)
    settings = AgentSettings(llm=llm, timeout_ms=60_000, stand_in=str(DEFAULT_STAND_IN))
    client = make_client(llm, environ={KEY_ENV: "sk-test-quota"})
    try:
        return run_attempt(TASK, 1, tmp_path / TASK.task_id, settings, client=client)
    finally:
        client.close()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_agent_step_answered_by_a_200_quota_error_ends_as_quota(
    provider: Provider, stub: ModelStub, tmp_path: Path,
) -> None:
    stub.script([QUOTA_200, StubReply(text="never")])
    result = _attempt(stub, tmp_path, provider)
    assert (result.status, result.error_kind, result.model_rounds, result.retry_count) == ("error", "quota", 1, 0)
    assert result.model_calls[0].outcome == "quota" and stub.pending == 1


def test_an_agent_step_answered_by_a_200_invalid_key_error_ends_as_auth(stub: ModelStub, tmp_path: Path) -> None:
    body = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                      "code": "invalid_api_key"}}
    stub.script([StubReply(raw_body=json.dumps(body).encode()), StubReply(text="never")])
    result = _attempt(stub, tmp_path, "openai")
    assert (result.status, result.error_kind, result.model_rounds) == ("error", "auth", 1)


def test_an_answer_that_mentions_insufficient_quota_is_an_answer(stub: ModelStub, tmp_path: Path) -> None:
    answer = 'The page only said {"error": {"code": "insufficient_quota"}}; no recipe was found.'
    stub.script([StubReply(text=answer)])
    result = _attempt(stub, tmp_path, "openai")
    assert (result.status, result.error_kind, result.final_answer) == ("completed", None, answer)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_judge_request_answered_by_a_200_quota_error_is_unjudged_as_quota(
    provider: Provider, stub: ModelStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    stub.script([QUOTA_200, StubReply(text="never")])
    result = AgentResult(task_id=TASK.task_id, attempt=1, status="completed", final_answer="Lasagna, 4.7 stars.",
                         started_at="2026-09-16T08:00:00Z", duration_ms=1000.0)
    prompt = load_reference_prompt(shared_data("webvoyager", "judge-prompt.md"))
    build: MakeClient
    with stub_clients(stub, monkeypatch, key_env=KEY_ENV, key="sk-judge-quota", model_suffix="-judge") as build:
        verdict = judge_reference(TASK, result, client=build(provider), prompt=prompt, price=None,
                                  log_path=tmp_path / "judge.ndjson")
    assert (verdict.passed, verdict.error_kind) == (None, "quota")
    assert len(stub.requests) == 1


def test_the_lane_stops_dispatch_on_a_200_quota_error_and_keeps_the_task_for_resume(
    tmp_path: Path, wv_data: Path, wv_stub: tuple[ModelStub, Scenario],
) -> None:
    _stub, scenario = wv_stub

    def agent(url: str, body: dict[str, object]) -> StubReply | None:
        return QUOTA_200 if "amazon" in url else None

    scenario.agent_override = agent
    first = run(tmp_path, wv_data, ids=["Allrecipes--0", "Amazon--0", "Apple--0"], concurrency=1)
    assert first.halted == "quota" and first.exit_status == 3
    summary = json.loads((first.root / "summary.json").read_text())
    assert (summary["quota_retry_task_ids"], summary["failed"]) == (["Amazon--0"], 0)
    recovery = run_tree.load_recovery(run_tree.RunTree(first.root))
    assert [e.task_id for e in recovery.quota_retry] == ["Amazon--0"]
    assert not (first.root / "Apple--0").exists()  # never dispatched
