"""The agent's and the judge's model setup from the EVAL_* variables (seed 002), with their prices.

The agent: EVAL_PROVIDER / EVAL_MODEL / EVAL_API_PROTOCOL / EVAL_BASE_URL / EVAL_API_KEY / EVAL_API_KEY_ENV /
EVAL_REASONING_EFFORT (`--reasoning-effort` wins), falling back to the farm's own model (farm.yaml `llm:` /
FARM_LLM_*). The judge: EVAL_JUDGE_*; by default the agent's model, protocol, effort and credentials. Prices:
EVAL_PRICING_JSON / EVAL_JUDGE_PRICING_JSON, else the built-in list price of the model, else unknown.

No key is ever held here: a key given in EVAL_API_KEY is referred to by that variable's name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Literal, get_args
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from farm.errors import FarmError
from farm.llm.model_config import THINKING_BUDGET, LLMConfig, ReasoningEffort

Protocol = Literal["anthropic-messages", "openai-completions", "openai-responses"]
Role = Literal["agent", "judge"]

RETRIES: dict[str, object] = {"max_retries": 5, "backoff_initial_s": 0.5, "backoff_max_s": 10.0}
"""The seed's retry policy for both models: ≤ 5 retries per step, 0.5–10 s exponential backoff with jitter."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_SDK_PROVIDER: dict[str, Literal["openai", "anthropic"]] = {
    "anthropic-messages": "anthropic", "openai-completions": "openai",
}


class Route(BaseModel):
    """What a provider route name (EVAL_PROVIDER) stands for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    protocol: Protocol
    """The route's API protocol."""
    base_url: str | None
    """Its endpoint; null = the SDK's default."""
    key_env: str
    """The variable that holds its key unless EVAL_API_KEY / EVAL_API_KEY_ENV say otherwise."""


ROUTES: dict[str, Route] = {
    "minimax-cn": Route(protocol="anthropic-messages", base_url="https://api.minimaxi.com/anthropic",
                        key_env="MINIMAX_CN_API_KEY"),
    "minimax": Route(protocol="anthropic-messages", base_url="https://api.minimax.io/anthropic",
                     key_env="MINIMAX_API_KEY"),
    "anthropic": Route(protocol="anthropic-messages", base_url=None, key_env="ANTHROPIC_API_KEY"),
    "openai": Route(protocol="openai-completions", base_url=None, key_env="OPENAI_API_KEY"),
}
"""Known route names (case-insensitive)."""


class WvPrice(BaseModel):
    """A model's price in USD per million tokens. An unset cache price is unknown, never free."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0, allow_inf_nan=False)
    """Uncached input tokens."""
    output: float = Field(ge=0, allow_inf_nan=False)
    """Output tokens (reasoning included: never billed again)."""
    cache_read: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Input tokens read from the prompt cache; null = unknown."""
    cache_write: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Input tokens written to the prompt cache; null = unknown."""
    context_threshold: int | None = Field(default=None, gt=0)
    """Input tokens (new + cache read + cache write) above which the whole request costs `long_context_multiplier`
    times as much; set together with the multiplier."""
    long_context_multiplier: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Factor on the whole request above `context_threshold`."""
    source: str | None = None
    """Where the price comes from."""
    date: str | None = None
    """When it was read (YYYY-MM-DD)."""

    @model_validator(mode="after")
    def _threshold_and_multiplier_together(self) -> WvPrice:
        if (self.context_threshold is None) != (self.long_context_multiplier is None):
            missing = "context_threshold" if self.context_threshold is None else "long_context_multiplier"
            raise ValueError(f"{missing} is required when the other long-context field is set")
        return self


MINIMAX_M3_PRICE = WvPrice(
    input=0.30, output=1.20, cache_read=0.06, cache_write=None, context_threshold=512_000,
    long_context_multiplier=2.0, source="MiniMax standard USD list price", date="2026-09-13",
)
"""MiniMax-M3's standard list price (≤ 512k input; above it the request costs twice as much). Its cache-write
price is not published, so a non-zero cache-write count leaves the cost unknown."""


def builtin_price(model: str) -> WvPrice | None:
    """The built-in price of `model` (MiniMax-M3, case-insensitive, also as `route/MiniMax-M3`); None if unknown."""
    name = model.strip().rsplit("/", 1)[-1].lower()
    return MINIMAX_M3_PRICE if name == "minimax-m3" else None


def parse_price(text: str, variable: str) -> WvPrice:
    """A price from the JSON of `variable`; FarmError naming the variable and the field when it is not one."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FarmError(f"{variable}: not valid JSON ({exc.msg} at character {exc.pos})",
                        hint=f"""e.g. {variable}='{{"input":2,"output":8}}' (USD per million tokens)""") from None
    if not isinstance(raw, dict):
        raise FarmError(f"{variable}: must be a JSON object", hint='e.g. {"input":2,"output":8,"cache_read":0.5}')
    pair = ("context_threshold", "long_context_multiplier")
    if (raw.get(pair[0]) is None) != (raw.get(pair[1]) is None):
        missing, given = pair if raw.get(pair[0]) is None else pair[::-1]
        raise FarmError(f"{variable}: {missing}: required together with {given}",
                        hint="set both (input tokens above the threshold multiply the whole request) or neither")
    try:
        return WvPrice.model_validate_json(text, strict=True)
    except ValidationError as exc:
        err = exc.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "price"
        raise FarmError(f"{variable}: {where}: {err['msg']}",
                        hint="input and output are required; cache_read, cache_write, context_threshold + "
                             "long_context_multiplier, source, date optional; USD per million tokens, ≥ 0") from None


class ModelSetup(BaseModel):
    """One model of the run: how to call it and what it costs."""

    model_config = ConfigDict(extra="forbid")

    llm: LLMConfig
    """Client configuration (no key: `api_key_env` names the variable holding it)."""
    price: WvPrice | None
    """Price of the model; null = unknown, so costs stay null."""
    protocol: Protocol
    """API protocol (`openai-responses` is refused by `agent_setup` / `judge_setup`)."""
    role: Role
    """Agent or judge."""
    route: str | None = None
    """Provider route name (EVAL_PROVIDER, e.g. `minimax-cn`) when one was given."""


def _get(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name)
    return value.strip() if value is not None and value.strip() else None


def _protocol(value: str, variable: str) -> Protocol:
    if value not in get_args(Protocol):
        raise FarmError(f"{variable}: unknown protocol {value[:40]!r}",
                        hint="use anthropic-messages or openai-completions")
    if value == "openai-responses":
        raise FarmError(f"{variable}: openai-responses is not supported by this runner",
                        hint="use openai-completions (chat completions) for OpenAI-compatible endpoints")
    return value  # type: ignore[return-value]


def _effort(value: str, variable: str) -> ReasoningEffort:
    if value not in get_args(ReasoningEffort):
        raise FarmError(f"{variable}: unknown reasoning effort {value[:40]!r}",
                        hint="use " + "|".join(get_args(ReasoningEffort)))
    return value  # type: ignore[return-value]


def _url(value: str, variable: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FarmError(f"{variable}: not an http(s) URL", hint="e.g. https://api.minimaxi.com/anthropic")
    return value.rstrip("/")


def _infer_protocol(url: str | None) -> Protocol | None:
    """The protocol a base URL shows: OpenAI-compatible endpoints end in /v1 (or the full chat path),
    Anthropic-compatible ones in /anthropic (or the full messages path)."""
    if url is None:
        return None
    path = urlsplit(url).path.rstrip("/")
    if path.endswith(("/v1", "/chat/completions")) and not path.endswith("/v1/messages"):
        return "openai-completions"
    if path.endswith(("/anthropic", "/v1/messages")):
        return "anthropic-messages"
    return None


def _sdk_base_url(url: str | None, protocol: Protocol) -> str | None:
    """The base URL the SDK wants: the openai SDK appends /chat/completions, the anthropic SDK /v1/messages."""
    if url is None:
        return None
    for tail in (("/chat/completions",) if protocol == "openai-completions" else ("/v1/messages", "/v1")):
        if url.endswith(tail):
            return url[: -len(tail)]
    return url


def _key_env(environ: Mapping[str, str], key_var: str, env_var: str | None, fallback: str | None) -> str | None:
    """Name of the variable holding the key: `key_var` itself when it holds a key, else the variable named by
    `env_var`, else `fallback`. Names only: the key's value is never copied."""
    if _get(environ, key_var) is not None:
        return key_var
    named = _get(environ, env_var) if env_var is not None else None
    if named is None:
        return fallback
    if not _ENV_NAME.fullmatch(named):
        # Never echo it: a key pasted here instead of a variable name must not reach a log.
        raise FarmError(f"{env_var}: must be the NAME of an environment variable, not a key",
                        hint=f"put a key itself in {key_var}, or name the variable holding it in {env_var}")
    return named


def _config(data: dict[str, object], role: Role, where: str) -> LLMConfig:
    try:
        return LLMConfig.model_validate(data | RETRIES)
    except ValidationError as exc:
        err = exc.errors(include_input=False, include_url=False)[0]
        field = ".".join(str(p) for p in err["loc"]) or "config"
        raise FarmError(f"{role} model: {field}: {err['msg']}", hint=f"fix {where}") from None


def _agent_protocol(
    environ: Mapping[str, str], url_var: str | None, route: Route | None, inherit: LLMConfig | None,
) -> Protocol | None:
    """EVAL_API_PROTOCOL, else what EVAL_BASE_URL shows, else the route's, else the farm model's."""
    explicit = _get(environ, "EVAL_API_PROTOCOL")
    if explicit:
        return _protocol(explicit, "EVAL_API_PROTOCOL")
    shown = _infer_protocol(url_var)
    if shown is not None:
        return shown
    if route is not None:
        return route.protocol
    if inherit is not None:
        return "anthropic-messages" if inherit.provider == "anthropic" else "openai-completions"
    return None


def agent_setup(
    environ: Mapping[str, str], *, reasoning_effort: str | None, base: LLMConfig | None,
) -> ModelSetup:
    """The agent's model from the EVAL_* variables over `base` (the farm's own model); `reasoning_effort`
    (the command line) wins over EVAL_REASONING_EFFORT. FarmError naming the variable when it cannot be built."""
    route_name = _get(environ, "EVAL_PROVIDER")
    route = ROUTES.get(route_name.lower()) if route_name else None
    # Only without a route of its own does the agent take the farm model's endpoint and key.
    inherit = base if route_name is None else None
    model = _get(environ, "EVAL_MODEL") or (base.model if base is not None else None)
    if model is None:
        raise FarmError("EVAL_MODEL is unset and no farm model is configured",
                        hint="export EVAL_PROVIDER=minimax-cn EVAL_MODEL=MiniMax-M3 (or set farm.yaml llm:)")
    url_var = _url(v, "EVAL_BASE_URL") if (v := _get(environ, "EVAL_BASE_URL")) else None
    protocol = _agent_protocol(environ, url_var, route, inherit)
    if protocol is None or (route_name is not None and route is None and url_var is None):
        raise FarmError(f"EVAL_PROVIDER: unknown route {route_name!r}; its endpoint and protocol are not known",
                        hint="set EVAL_BASE_URL and EVAL_API_PROTOCOL (anthropic-messages|openai-completions), "
                             "or use " + "|".join(ROUTES))
    if inherit is not None and _SDK_PROVIDER[protocol] != inherit.provider:
        inherit = None  # another API family: the farm model's endpoint and key do not fit it
    url = url_var or (route.base_url if route else None) or (inherit.base_url if inherit is not None else None)
    effort_text = reasoning_effort or _get(environ, "EVAL_REASONING_EFFORT")
    effort_var = "--reasoning-effort" if reasoning_effort else "EVAL_REASONING_EFFORT"
    effort = _effort(effort_text, effort_var) if effort_text else (base.reasoning_effort if base else None)
    key_fallback = route.key_env if route else (inherit.api_key_env if inherit is not None else None)
    key_env = _key_env(environ, "EVAL_API_KEY", "EVAL_API_KEY_ENV", key_fallback)
    data: dict[str, object] = base.model_dump(exclude={"pricing", "api_key_env"}) if base is not None else {}
    data.update(provider=_SDK_PROVIDER[protocol], model=model, base_url=_sdk_base_url(url, protocol),
                reasoning_effort=effort)
    if key_env is not None:
        data["api_key_env"] = key_env
    llm = _config(data, "agent", "the EVAL_* variables")
    pricing = _get(environ, "EVAL_PRICING_JSON")
    price = parse_price(pricing, "EVAL_PRICING_JSON") if pricing else builtin_price(model)
    if price is None and base is not None and base.pricing is not None and base.model == model:
        p = base.pricing
        price = WvPrice(input=p.input_per_m, output=p.output_per_m, cache_read=p.cache_read_per_m,
                        cache_write=p.cache_write_per_m, source="farm llm.pricing")
    return ModelSetup(llm=llm, price=price, protocol=protocol, role="agent", route=route_name)


def judge_setup(environ: Mapping[str, str], agent: ModelSetup) -> ModelSetup:
    """The judge's model from EVAL_JUDGE_*, inheriting the agent's model, protocol, effort and credentials.
    The agent's price carries over only to the same model at the same endpoint."""
    a = agent.llm
    model = _get(environ, "EVAL_JUDGE_MODEL") or a.model
    url_var = _get(environ, "EVAL_JUDGE_BASE_URL")
    url = _url(url_var, "EVAL_JUDGE_BASE_URL") if url_var else a.base_url
    explicit = _get(environ, "EVAL_JUDGE_API_PROTOCOL")
    protocol = (_protocol(explicit, "EVAL_JUDGE_API_PROTOCOL") if explicit
                else (_infer_protocol(url_var) if url_var else None) or agent.protocol)
    if protocol != agent.protocol and url_var is None:
        raise FarmError("EVAL_JUDGE_API_PROTOCOL differs from the agent's but EVAL_JUDGE_BASE_URL is unset",
                        hint="set EVAL_JUDGE_BASE_URL to the judge's endpoint for that protocol")
    effort_text = _get(environ, "EVAL_JUDGE_REASONING_EFFORT")
    effort = _effort(effort_text, "EVAL_JUDGE_REASONING_EFFORT") if effort_text else a.reasoning_effort
    key_env = _key_env(environ, "EVAL_JUDGE_API_KEY", None, a.api_key_env)
    base_url = _sdk_base_url(url, protocol)
    data = a.model_dump() | {"provider": _SDK_PROVIDER[protocol], "model": model, "base_url": base_url,
                             "reasoning_effort": effort, "api_key_env": key_env}
    llm = _config(data, "judge", "the EVAL_JUDGE_* variables")
    pricing = _get(environ, "EVAL_JUDGE_PRICING_JSON")
    price: WvPrice | None
    if pricing:
        price = parse_price(pricing, "EVAL_JUDGE_PRICING_JSON")
    elif model == a.model and base_url == a.base_url:
        price = agent.price
    else:
        price = builtin_price(model)
    route = agent.route if base_url == a.base_url else None
    return ModelSetup(llm=llm, price=price, protocol=protocol, role="judge", route=route)


def _safe_url(url: str | None) -> str | None:
    """The URL without user info, query or fragment (where a key may hide)."""
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def snapshot(setup: ModelSetup) -> dict[str, JsonValue]:
    """What the manifest records of a model setup: everything but credentials (the key variable's NAME only)."""
    cfg = setup.llm
    budget = THINKING_BUDGET.get(cfg.reasoning_effort or "none") if setup.protocol == "anthropic-messages" else None
    return {
        "role": setup.role,
        "route": setup.route,
        "protocol": setup.protocol,
        "model": cfg.model,
        "base_url": _safe_url(cfg.base_url),
        "api_key_env": cfg.api_key_env,
        "reasoning_effort": cfg.reasoning_effort,
        "thinking_budget_tokens": budget,
        "max_output_tokens": cfg.max_output_tokens,
        "max_tokens_sent": cfg.max_output_tokens + (budget or 0) if setup.protocol == "anthropic-messages" else None,
        "temperature": cfg.temperature,
        "timeout_s": cfg.timeout_s,
        "max_retries": cfg.max_retries,
        "backoff_initial_s": cfg.backoff_initial_s,
        "backoff_max_s": cfg.backoff_max_s,
        "retry_after_max_s": cfg.retry_after_max_s,
        "anthropic_prompt_cache": cfg.anthropic_prompt_cache,
        "openai_max_tokens_param": cfg.openai_max_tokens_param,
        "price": setup.price.model_dump() if setup.price is not None else None,
    }
