"""The web lane on a used-up quota or a refused key (the one provider-error classifier): the run it hit is an
infrastructure error naming the provider and the reason, and no later run of the matrix starts — every one would
fail the same way. A model service that is merely down still lets the matrix go on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farm.llm.client import make_client
from farm.llm.model_config import LLMConfig
from farm.llm.policy import ModelPolicy
from farm.llm.stub import ModelStub, StubReply
from farm.manifest import load as load_manifest
from tests.helpers.web import BackendFactory
from web_bench.paired.lane import ModelChoice, run_lane
from web_bench.paired.matrix import plan
from web_bench.paired.model_policy import model_policy
from web_bench.paired.runner import RunContext, run_matrix
from web_bench.paired.site.server import SiteServer
from web_bench.paired.turn import WebBrief

QUOTA_200 = json.dumps({"error": {
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "type": "insufficient_quota", "param": None, "code": "insufficient_quota",
}}).encode()


def _policy(stub: ModelStub, provider: str = "openai") -> ModelPolicy[WebBrief]:
    cfg = LLMConfig(provider=provider, model="stub-model", base_url=stub.base_url(provider),  # type: ignore[arg-type]
                    api_key_env="STUB_KEY", max_retries=2, backoff_initial_s=0.01, backoff_max_s=0.02)
    return model_policy(make_client(cfg, environ={"STUB_KEY": "test-key"}))


@pytest.mark.parametrize(("provider", "reply", "kind"), [
    ("openai", StubReply(raw_body=QUOTA_200), "quota"),
    ("anthropic", StubReply.quota(status=200, code="insufficient_quota"), "quota"),
    ("openai", StubReply.quota(status=429, code=2056), "quota"),
    ("anthropic", StubReply(status=401, error_message="invalid x-api-key"), "auth"),
])
def test_a_quota_or_key_refusal_stops_the_matrix(
    make_backend: BackendFactory, site: SiteServer, provider: str, reply: StubReply, kind: str,
) -> None:
    with ModelStub(default=reply) as stub:
        ctx = RunContext(run_id="q", site_url=site.base_url, policy=_policy(stub, provider), policy_name="model",
                         timeout_ms=60_000)
        runs = run_matrix(plan(["order_lookup", "lazy_load"], [1], 1, ["playwright"]),
                          {"playwright": make_backend("playwright")}, ctx, lambda _: None)
        asked = len(stub.requests)
    assert asked == 1  # never retried, and the second run never started
    (run,) = runs
    assert (run.status, run.infrastructure_error, run.success) == ("error", True, False)
    assert run.error is not None and kind in run.error and "bad_response" not in run.error
    assert ctx.stopped is not None and ctx.stopped.startswith(f"model provider {provider} at 127.0.0.1:")
    assert f": {kind}: " in ctx.stopped and "\n" not in ctx.stopped


def test_a_model_service_that_stays_down_lets_the_matrix_go_on(make_backend: BackendFactory,
                                                               site: SiteServer) -> None:
    with ModelStub(default=StubReply.server_error(503)) as stub:
        ctx = RunContext(run_id="d", site_url=site.base_url, policy=_policy(stub), policy_name="model",
                         timeout_ms=60_000)
        runs = run_matrix(plan(["order_lookup", "lazy_load"], [1], 1, ["playwright"]),
                          {"playwright": make_backend("playwright")}, ctx, lambda _: None)
    assert [r.status for r in runs] == ["error", "error"] and ctx.stopped is None


def test_the_lane_says_the_stop_once_and_leaves_the_run_interrupted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    runs_dir = tmp_path / "runs"
    with ModelStub(default=StubReply(raw_body=QUOTA_200)) as stub:
        results, _report = run_lane(
            plan(["order_lookup", "lazy_load"], [1], 1, ["playwright"]), run_id="web-q", runs_dir=runs_dir,
            output=None, policy_kind="model", choice=ModelChoice(provider="openai", model="stub-model"),
            timeout_ms=60_000, policy=_policy(stub),
        )
        asked = len(stub.requests)
    assert asked == 1
    assert len(results.read_text().splitlines()) == 1
    manifest = load_manifest(runs_dir / "web-q")
    (note,) = [n for n in manifest.notes if "stopped dispatch" in n]
    assert note.startswith("web: stopped dispatch: model provider openai at 127.0.0.1:")
    assert note.endswith("; 1 of 2 runs not started") and "insufficient_quota" in note
    assert manifest.status == "interrupted"
    assert capsys.readouterr().err.count("stopped dispatch") == 1
