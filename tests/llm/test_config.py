"""LLMConfig from farm.yaml data or FARM_LLM_* variables, and the API key never leaking."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from farm.errors import FarmError
from farm.llm.client import ModelCallError, make_client
from farm.llm.model_config import LLMConfig
from farm.llm.stub import ModelStub, StubReply
from farm.llm.types import Message
from tests.llm.conftest import CANARY_KEY, KEY_ENV, MakeClient


def test_from_env_reads_farm_llm_variables() -> None:
    cfg = LLMConfig.from_env(
        environ={
            "FARM_LLM_PROVIDER": "anthropic",
            "FARM_LLM_MODEL": "claude-test",
            "FARM_LLM_BASE_URL": "http://127.0.0.1:9/",
            "FARM_LLM_API_KEY_ENV": "MY_KEY",
            "FARM_LLM_REASONING_EFFORT": "high",
            "FARM_LLM_MAX_RETRIES": "7",
        }
    )
    assert (cfg.provider, cfg.model, cfg.base_url) == ("anthropic", "claude-test", "http://127.0.0.1:9/")
    assert (cfg.api_key_env, cfg.reasoning_effort, cfg.max_retries) == ("MY_KEY", "high", 7)


def test_from_env_overrides_win_over_variables() -> None:
    env = {"FARM_LLM_PROVIDER": "openai", "FARM_LLM_MODEL": "from-env"}
    cfg = LLMConfig.from_env({"model": "from-override", "base_url": None, "timeout_s": 5}, environ=env)
    assert cfg.model == "from-override"
    assert cfg.base_url is None
    assert cfg.timeout_s == 5


def test_from_env_without_a_model_is_a_farm_error() -> None:
    with pytest.raises(FarmError, match="FARM_LLM_PROVIDER"):
        LLMConfig.from_env(environ={})


def test_from_env_with_a_bad_value_names_the_field() -> None:
    env = {"FARM_LLM_PROVIDER": "gemini", "FARM_LLM_MODEL": "m"}
    with pytest.raises(FarmError, match="provider"):
        LLMConfig.from_env(environ=env)


@pytest.mark.parametrize(("provider", "variable"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_default_key_variable_follows_the_provider(provider: str, variable: str) -> None:
    assert LLMConfig.model_validate({"provider": provider, "model": "m"}).api_key_env == variable


def test_yaml_section_with_pricing_validates() -> None:
    cfg = LLMConfig.model_validate(
        {
            "provider": "openai",
            "model": "gpt-test",
            "base_url": "http://127.0.0.1:8000/v1",
            "pricing": {"input_per_m": 1.25, "output_per_m": 10, "cache_read_per_m": 0.125},
        }
    )
    assert cfg.pricing is not None
    assert cfg.pricing.cache_write_per_m is None


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(ValidationError):
        LLMConfig.model_validate({"provider": "openai", "model": "m", "api_key": "sk-x"})


def test_missing_key_variable_is_a_farm_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FARM_TEST_ABSENT_KEY", raising=False)
    cfg = LLMConfig(provider="openai", model="m", api_key_env="FARM_TEST_ABSENT_KEY")
    with pytest.raises(FarmError, match="FARM_TEST_ABSENT_KEY"):
        make_client(cfg)


def test_key_pasted_into_api_key_env_is_refused_without_echoing_it() -> None:
    with pytest.raises(ValidationError) as err:
        LLMConfig(provider="openai", model="m", api_key_env=CANARY_KEY)
    assert CANARY_KEY not in str(err.value)
    with pytest.raises(FarmError) as farm_err:
        LLMConfig.from_env(
            environ={"FARM_LLM_PROVIDER": "openai", "FARM_LLM_MODEL": "m", "FARM_LLM_API_KEY_ENV": CANARY_KEY}
        )
    assert CANARY_KEY not in str(farm_err.value)


def test_key_never_appears_in_config_or_client_text(client_for: MakeClient) -> None:
    client = client_for("openai")
    cfg = client.config
    for text in (repr(cfg), str(cfg), str(cfg.model_dump()), cfg.model_dump_json(), repr(client), str(client)):
        assert CANARY_KEY not in text
    assert cfg.api_key_env == KEY_ENV


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_key_echoed_by_the_endpoint_is_scrubbed_from_errors(
    provider: str, stub: ModelStub, client_for: MakeClient
) -> None:
    stub.script([StubReply(status=401, error_message=f"invalid key {CANARY_KEY} for this org")])
    with pytest.raises(ModelCallError) as err:
        client_for(provider).complete([Message.user("hi")])
    assert err.value.kind == "auth"
    for text in (str(err.value), err.value.line(), err.value.message, repr(err.value), str(err.value.hint)):
        assert CANARY_KEY not in text
    assert "invalid key *** for this org" in str(err.value)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_key_absent_from_errors_after_retries(provider: str, stub: ModelStub, client_for: MakeClient) -> None:
    stub.script([StubReply(status=503, error_message=f"upstream saw {CANARY_KEY}")] * 2)
    with pytest.raises(ModelCallError) as err:
        client_for(provider, max_retries=1).complete([Message.user("hi")])
    chained: BaseException | None = err.value
    while chained is not None:
        assert CANARY_KEY not in str(chained)
        assert CANARY_KEY not in repr(vars(chained))
        chained = chained.__cause__ or chained.__context__


class _FarmYaml(BaseModel):
    """Stands in for a parent config (farm.yaml) that embeds LLMConfig without hiding inputs."""

    llm: LLMConfig | None = None


@pytest.mark.parametrize("section", [{"api_key_env": CANARY_KEY}, {"api_key": CANARY_KEY}, {"token": CANARY_KEY}])
def test_key_in_a_yaml_section_is_not_quoted_by_the_parent_error(section: dict[str, str]) -> None:
    with pytest.raises(ValidationError) as err:
        _FarmYaml.model_validate({"llm": {"provider": "openai", "model": "m", **section}})
    assert CANARY_KEY not in str(err.value)
    assert CANARY_KEY not in repr(err.value.errors())


def test_from_env_layers_yaml_then_variables_then_overrides() -> None:
    yaml_cfg = LLMConfig(provider="openai", model="from-yaml", base_url="http://127.0.0.1:1/v1", max_retries=9)
    env = {"FARM_LLM_MODEL": "from-env", "FARM_LLM_TIMEOUT_S": "12"}
    cfg = LLMConfig.from_env({"timeout_s": 3.5}, base=yaml_cfg, environ=env)
    assert (cfg.provider, cfg.model, cfg.base_url) == ("openai", "from-env", "http://127.0.0.1:1/v1")
    assert (cfg.max_retries, cfg.timeout_s) == (9, 3.5)


def test_switching_provider_drops_the_old_default_key_variable() -> None:
    yaml_cfg = LLMConfig(provider="openai", model="m")
    cfg = LLMConfig.from_env({"provider": "anthropic", "model": "claude"}, base=yaml_cfg, environ={})
    assert cfg.api_key_env == "ANTHROPIC_API_KEY"
    custom = LLMConfig(provider="openai", model="m", api_key_env="PROXY_KEY")
    assert LLMConfig.from_env({"provider": "anthropic"}, base=custom, environ={}).api_key_env == "PROXY_KEY"
