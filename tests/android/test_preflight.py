"""A run with the model policy checks the key and the endpoint before anything is made: a missing or refused
key, or an endpoint that does not answer, is one line and exit 2, never a run of infrastructure errors."""

from pathlib import Path
from typing import Any

import pytest

from farm.android.options import AgentOptions, HostSettings
from farm.errors import FarmError
from farm.exits import EXIT_INFRA, EXIT_OK
from farm.llm.stub import ModelStub, StubReply
from farm.sim.launcher import free_port
from farm.sweep.dev_run import run, run_request
from tests.helpers.host import CALCULATOR_PLAN, screen_reading_model

KEY_ENV = "FARM_TEST_MODEL_KEY"


def _request(tmp_path: Path, base_url: str, serials: list[str] | None = None) -> Any:
    settings = HostSettings(policy="model", provider="openai", model="stub-model", base_url=base_url,
                            api_key_env=KEY_ENV)
    return run_request(agent=AgentOptions(split="tune", set_prefix="calculator-multiply"), serials=serials,
                       executor="host", host=settings, runs_dir=tmp_path / "runs", show_progress=False, run_id="p1")


def test_an_unset_key_is_refused_before_the_run_directory_exists(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with ModelStub() as stub, pytest.raises(FarmError, match=f"{KEY_ENV} .* unset or empty"):
        run(_request(tmp_path, stub.base_url_openai))
    assert not (tmp_path / "runs").exists() and stub.model_lists == 0


def test_a_refused_key_is_refused_before_any_model_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "wrong-key")
    with ModelStub(api_key="right-key") as stub, pytest.raises(FarmError) as info:
        run(_request(tmp_path, stub.base_url_openai))
    assert f"the API key in {KEY_ENV} was refused (HTTP 401)" in info.value.message
    assert "wrong-key" not in info.value.line()
    assert not (tmp_path / "runs").exists() and stub.requests == []


def test_an_endpoint_that_does_not_answer_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "k")
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(FarmError, match="the endpoint does not answer"):
        run(_request(tmp_path, dead))
    assert not (tmp_path / "runs").exists()


def test_an_endpoint_without_a_model_list_still_runs(virtual_phone: Any, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # Some OpenAI-compatible servers have no /models: the preflight's 404 is not a refusal.
    monkeypatch.setenv(KEY_ENV, "k")
    with ModelStub(responder=screen_reading_model(CALCULATOR_PLAN)) as stub:
        result = run(_request(tmp_path, stub.base_url_openai.removesuffix("/v1") + "/v2", [virtual_phone.serial]))
    assert result.exit_code == EXIT_OK, result.phones[0].records[0].reasons


def test_a_good_key_runs_and_the_preflight_made_one_model_list_request(
    virtual_phone: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "right-key")
    with ModelStub(api_key="right-key", responder=screen_reading_model(CALCULATOR_PLAN)) as stub:
        result = run(_request(tmp_path, stub.base_url_openai, [virtual_phone.serial]))
    assert result.exit_code == EXIT_OK and stub.model_lists == 1
    assert [r.outcome for r in result.phones[0].records] == ["succeeded"]


def test_a_model_that_fails_after_the_preflight_gives_exit_5(virtual_phone: Any, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "k")
    monkeypatch.setenv("FARM_LLM_MAX_RETRIES", "0")
    with ModelStub(default=StubReply.server_error(503)) as stub:
        result = run(_request(tmp_path, stub.base_url_openai, [virtual_phone.serial]))
    records = result.phones[0].records
    assert [(r.outcome, r.failure_category) for r in records] == [("error", "infrastructure")]
    assert result.exit_code == EXIT_INFRA
