"""EVAL_* variables -> the agent's and the judge's model setup, prices, and the manifest snapshot."""

from __future__ import annotations

import json

import pytest

from farm.errors import FarmError
from farm.llm.model_config import LLMConfig, ModelPrice
from web_bench.webvoyager.model_setup import (
    MINIMAX_M3_PRICE,
    ModelSetup,
    WvPrice,
    agent_setup,
    builtin_price,
    judge_setup,
    parse_price,
    snapshot,
)

SECRET = "sk-cp-canary-5e1f0a9b7c3d"
MINIMAX = {"EVAL_PROVIDER": "minimax-cn", "EVAL_MODEL": "MiniMax-M3"}


def agent(env: dict[str, str], *, effort: str | None = None, base: LLMConfig | None = None) -> ModelSetup:
    return agent_setup(env, reasoning_effort=effort, base=base)


def refused(env: dict[str, str], *, base: LLMConfig | None = None) -> str:
    with pytest.raises(FarmError) as err:
        agent(env, base=base)
    return err.value.line()


# -- agent -----------------------------------------------------------------------------------------------------
def test_minimax_cn_defaults_to_its_anthropic_endpoint() -> None:
    setup = agent(MINIMAX)
    assert setup.protocol == "anthropic-messages"
    assert setup.llm.provider == "anthropic"
    assert setup.llm.base_url == "https://api.minimaxi.com/anthropic"
    assert setup.route == "minimax-cn"
    assert setup.role == "agent"


def test_retry_settings_follow_the_seed() -> None:
    base = LLMConfig(provider="openai", model="m", max_retries=1, backoff_initial_s=3, backoff_max_s=60)
    for setup in (agent(MINIMAX), agent({}, base=base)):
        cfg = setup.llm
        assert (cfg.max_retries, cfg.backoff_initial_s, cfg.backoff_max_s) == (5, 0.5, 10.0)


def test_the_flag_wins_over_the_effort_variable() -> None:
    env = MINIMAX | {"EVAL_REASONING_EFFORT": "low"}
    assert agent(env).llm.reasoning_effort == "low"
    assert agent(env, effort="high").llm.reasoning_effort == "high"


def test_an_unknown_effort_is_refused_naming_its_source() -> None:
    assert "EVAL_REASONING_EFFORT" in refused(MINIMAX | {"EVAL_REASONING_EFFORT": "extreme"})
    with pytest.raises(FarmError, match="--reasoning-effort"):
        agent(MINIMAX, effort="extreme")


def test_a_key_in_eval_api_key_is_referred_to_by_name() -> None:
    setup = agent(MINIMAX | {"EVAL_API_KEY": SECRET})
    assert setup.llm.api_key_env == "EVAL_API_KEY"
    assert SECRET not in setup.model_dump_json()


def test_eval_api_key_env_names_the_key_variable() -> None:
    assert agent(MINIMAX | {"EVAL_API_KEY_ENV": "MY_MINIMAX_KEY"}).llm.api_key_env == "MY_MINIMAX_KEY"
    assert agent(MINIMAX).llm.api_key_env == "MINIMAX_CN_API_KEY"


def test_a_key_pasted_into_eval_api_key_env_is_refused_without_echo() -> None:
    line = refused(MINIMAX | {"EVAL_API_KEY_ENV": SECRET})
    assert "EVAL_API_KEY_ENV" in line
    assert SECRET not in line


def test_a_v1_base_url_means_openai_completions() -> None:
    setup = agent({"EVAL_PROVIDER": "minimax-cn", "EVAL_MODEL": "MiniMax-M3", "EVAL_BASE_URL": "https://api.minimaxi.com/v1"})
    assert setup.protocol == "openai-completions"
    assert setup.llm.provider == "openai"
    assert setup.llm.base_url == "https://api.minimaxi.com/v1"


def test_an_explicit_protocol_wins_over_the_url() -> None:
    env = MINIMAX | {"EVAL_BASE_URL": "http://127.0.0.1:9/anthropic/v1", "EVAL_API_PROTOCOL": "anthropic-messages"}
    setup = agent(env)
    assert setup.protocol == "anthropic-messages"
    # The anthropic SDK appends /v1/messages itself.
    assert setup.llm.base_url == "http://127.0.0.1:9/anthropic"


def test_openai_responses_is_refused() -> None:
    line = refused(MINIMAX | {"EVAL_API_PROTOCOL": "openai-responses"})
    assert "EVAL_API_PROTOCOL" in line and "openai-completions" in line


def test_an_unknown_protocol_is_refused() -> None:
    assert "EVAL_API_PROTOCOL" in refused(MINIMAX | {"EVAL_API_PROTOCOL": "grpc"})


def test_an_unknown_route_needs_an_endpoint() -> None:
    assert "EVAL_PROVIDER" in refused({"EVAL_PROVIDER": "acme", "EVAL_MODEL": "m"})
    setup = agent({"EVAL_PROVIDER": "acme", "EVAL_MODEL": "m", "EVAL_BASE_URL": "https://llm.acme.test/v1"})
    assert setup.protocol == "openai-completions"


def test_a_base_url_that_is_not_http_is_refused() -> None:
    assert "EVAL_BASE_URL" in refused(MINIMAX | {"EVAL_BASE_URL": "ftp://x/v1"})


def test_no_model_anywhere_is_refused() -> None:
    assert "EVAL_MODEL" in refused({"EVAL_PROVIDER": "minimax-cn"})


def test_without_eval_variables_the_farm_model_is_used() -> None:
    base = LLMConfig(provider="openai", model="gpt-x", base_url="http://127.0.0.1:9/v1", api_key_env="FARM_KEY",
                     reasoning_effort="medium", timeout_s=33)
    setup = agent({}, base=base)
    assert (setup.llm.model, setup.llm.api_key_env) == ("gpt-x", "FARM_KEY")
    assert setup.llm.base_url == "http://127.0.0.1:9/v1"
    assert setup.llm.reasoning_effort == "medium"
    assert setup.llm.timeout_s == 33
    assert setup.protocol == "openai-completions"
    assert setup.price is None


def test_a_route_does_not_inherit_the_farm_endpoint_or_key() -> None:
    base = LLMConfig(provider="anthropic", model="claude-x", base_url="http://127.0.0.1:9", api_key_env="FARM_KEY")
    setup = agent(MINIMAX, base=base)
    assert setup.llm.base_url == "https://api.minimaxi.com/anthropic"
    assert setup.llm.api_key_env == "MINIMAX_CN_API_KEY"


def test_farm_pricing_is_used_for_the_same_model_only() -> None:
    base = LLMConfig(provider="openai", model="gpt-x", pricing=ModelPrice(input_per_m=1, output_per_m=2))
    price = agent({}, base=base).price
    assert price is not None and (price.input, price.output, price.cache_read) == (1, 2, None)
    assert agent({"EVAL_MODEL": "other"}, base=base).price is None


# -- prices ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["MiniMax-M3", "minimax-m3", "MINIMAX-M3", "minimax-cn/MiniMax-M3"])
def test_minimax_m3_has_a_built_in_price(name: str) -> None:
    assert builtin_price(name) == MINIMAX_M3_PRICE


def test_the_built_in_minimax_price_is_the_list_price() -> None:
    p = MINIMAX_M3_PRICE
    assert (p.input, p.output, p.cache_read, p.cache_write) == (0.30, 1.20, 0.06, None)
    assert (p.context_threshold, p.long_context_multiplier) == (512_000, 2.0)
    assert (p.source, p.date) == ("MiniMax standard USD list price", "2026-09-13")
    assert agent(MINIMAX).price == p


def test_other_models_have_no_built_in_price() -> None:
    assert builtin_price("MiniMax-M3-mini") is None
    assert agent({"EVAL_PROVIDER": "minimax-cn", "EVAL_MODEL": "MiniMax-M2"}).price is None


def test_pricing_json_overrides_the_built_in_price() -> None:
    price = agent(MINIMAX | {"EVAL_PRICING_JSON": '{"input":2,"output":8,"cache_read":0.5,"cache_write":3}'}).price
    assert price == WvPrice(input=2, output=8, cache_read=0.5, cache_write=3)


def test_a_full_price_parses() -> None:
    text = json.dumps({"input": 1, "output": 4, "context_threshold": 1000, "long_context_multiplier": 1.5,
                       "source": "list", "date": "2026-01-01"})
    price = parse_price(text, "EVAL_PRICING_JSON")
    assert (price.context_threshold, price.long_context_multiplier, price.source) == (1000, 1.5, "list")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{input: 2}", "not valid JSON"),
        ("[2, 8]", "JSON object"),
        ('{"output": 8}', "input"),
        ('{"input": 2}', "output"),
        ('{"input": -1, "output": 8}', "input"),
        ('{"input": 2, "output": 8, "cache_hit": 1}', "cache_hit"),
        ('{"input": "2", "output": 8}', "input"),
        ('{"input": 2, "output": 8, "long_context_multiplier": 2}', "context_threshold: required"),
        ('{"input": 2, "output": 8, "context_threshold": 1000}', "long_context_multiplier: required"),
        ('{"input": 2, "output": 8, "context_threshold": 1000.5, "long_context_multiplier": 2}', "context_threshold"),
        ('{"input": 2, "output": 8, "context_threshold": 0, "long_context_multiplier": 2}', "context_threshold"),
    ],
)
def test_a_bad_price_is_one_line_naming_variable_and_field(text: str, needle: str) -> None:
    with pytest.raises(FarmError) as err:
        agent(MINIMAX | {"EVAL_PRICING_JSON": text})
    line = err.value.line()
    assert line.startswith("EVAL_PRICING_JSON:")
    assert needle in line.split("—")[0]
    assert "\n" not in line


# -- judge -----------------------------------------------------------------------------------------------------
def test_the_judge_inherits_model_protocol_effort_credentials_and_price() -> None:
    a = agent(MINIMAX | {"EVAL_API_KEY": SECRET}, effort="high")
    j = judge_setup(MINIMAX | {"EVAL_API_KEY": SECRET}, a)
    assert j.role == "judge"
    assert (j.llm.model, j.protocol, j.llm.reasoning_effort, j.llm.api_key_env) == (
        "MiniMax-M3", "anthropic-messages", "high", "EVAL_API_KEY")
    assert j.llm.base_url == a.llm.base_url
    assert j.price == a.price


def test_judge_variables_override() -> None:
    env = MINIMAX | {"EVAL_JUDGE_MODEL": "judge-m", "EVAL_JUDGE_REASONING_EFFORT": "low",
                     "EVAL_JUDGE_API_KEY": SECRET, "EVAL_JUDGE_BASE_URL": "https://judge.test/v1"}
    j = judge_setup(env, agent(env))
    assert (j.llm.model, j.llm.reasoning_effort, j.llm.api_key_env) == ("judge-m", "low", "EVAL_JUDGE_API_KEY")
    assert (j.protocol, j.llm.provider, j.llm.base_url) == ("openai-completions", "openai", "https://judge.test/v1")
    assert (j.llm.max_retries, j.llm.backoff_initial_s, j.llm.backoff_max_s) == (5, 0.5, 10.0)


def test_the_judge_price_is_not_inherited_by_another_model() -> None:
    a = agent(MINIMAX | {"EVAL_PRICING_JSON": '{"input":2,"output":8}'})
    other = judge_setup({"EVAL_JUDGE_MODEL": "judge-m"}, a)
    assert other.price is None
    priced = judge_setup({"EVAL_JUDGE_MODEL": "judge-m", "EVAL_JUDGE_PRICING_JSON": '{"input":1,"output":1}'}, a)
    assert priced.price == WvPrice(input=1, output=1)


def test_the_judge_price_is_not_inherited_at_another_endpoint() -> None:
    a = agent(MINIMAX | {"EVAL_PRICING_JSON": '{"input":2,"output":8}'})
    moved = judge_setup({"EVAL_JUDGE_BASE_URL": "https://api.minimax.io/anthropic"}, a)
    # Same model, other endpoint: the agent's configured price does not carry over, the built-in one applies.
    assert moved.price == MINIMAX_M3_PRICE


def test_the_judge_protocol_needs_its_own_endpoint() -> None:
    a = agent(MINIMAX)
    with pytest.raises(FarmError, match="EVAL_JUDGE_BASE_URL"):
        judge_setup({"EVAL_JUDGE_API_PROTOCOL": "openai-completions"}, a)
    with pytest.raises(FarmError, match="EVAL_JUDGE_API_PROTOCOL"):
        judge_setup({"EVAL_JUDGE_API_PROTOCOL": "openai-responses"}, a)


def test_a_bad_judge_price_names_its_variable() -> None:
    a = agent(MINIMAX)
    with pytest.raises(FarmError, match=r"^EVAL_JUDGE_PRICING_JSON: output"):
        judge_setup({"EVAL_JUDGE_MODEL": "x", "EVAL_JUDGE_PRICING_JSON": '{"input":1}'}, a)


# -- snapshot --------------------------------------------------------------------------------------------------
def test_the_snapshot_holds_no_key() -> None:
    env = MINIMAX | {"EVAL_API_KEY": SECRET, "EVAL_JUDGE_API_KEY": SECRET + "j",
                     "EVAL_BASE_URL": f"https://user:{SECRET}@api.minimaxi.com/anthropic?key={SECRET}"}
    a = agent(env, effort="high")
    j = judge_setup(env, a)
    text = json.dumps([snapshot(a), snapshot(j)])
    assert SECRET not in text
    assert snapshot(a)["base_url"] == "https://api.minimaxi.com/anthropic"
    assert snapshot(a)["api_key_env"] == "EVAL_API_KEY"


def test_the_snapshot_records_the_thinking_budget_and_price() -> None:
    snap = snapshot(agent(MINIMAX, effort="high"))
    assert snap["thinking_budget_tokens"] == 16384
    assert snap["max_tokens_sent"] == 4096 + 16384
    assert snap["protocol"] == "anthropic-messages"
    assert snap["reasoning_effort"] == "high"
    assert snap["max_retries"] == 5
    assert snap["price"] == MINIMAX_M3_PRICE.model_dump()
    assert json.loads(json.dumps(snap)) == snap


def test_openai_completions_snapshot_has_no_thinking_budget() -> None:
    snap = snapshot(agent({"EVAL_PROVIDER": "openai", "EVAL_MODEL": "gpt-x"}, effort="high"))
    assert snap["thinking_budget_tokens"] is None
    assert snap["max_tokens_sent"] is None
