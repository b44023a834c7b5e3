"""Model configuration (the `llm:` section of farm.yaml, or FARM_LLM_* environment variables).

The API key itself never lives on a model: only the *name* of the environment variable that holds it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from farm.errors import FarmError

Provider = Literal["openai", "anthropic"]
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
MaxTokensParam = Literal["max_completion_tokens", "max_tokens"]

# Extended-thinking budget per reasoning effort (the API's minimum budget is 1024); "none" = no thinking.
THINKING_BUDGET: dict[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32768,
    "max": 65536,
}

DEFAULT_KEY_ENV: dict[str, str] = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SECRETISH = re.compile(r"key|token|secret|password|auth", re.IGNORECASE)

# FARM_LLM_* variable -> LLMConfig field.
ENV_FIELDS: dict[str, str] = {
    "FARM_LLM_PROVIDER": "provider",
    "FARM_LLM_MODEL": "model",
    "FARM_LLM_BASE_URL": "base_url",
    "FARM_LLM_API_KEY_ENV": "api_key_env",
    "FARM_LLM_REASONING_EFFORT": "reasoning_effort",
    "FARM_LLM_TIMEOUT_S": "timeout_s",
    "FARM_LLM_MAX_RETRIES": "max_retries",
    "FARM_LLM_MAX_OUTPUT_TOKENS": "max_output_tokens",
    "FARM_LLM_OPENAI_MAX_TOKENS_PARAM": "openai_max_tokens_param",
    "FARM_LLM_TEMPERATURE": "temperature",
}


class ModelPrice(BaseModel):
    """What a model costs, in USD per million tokens. A cache price left unset is unknown, not free."""

    model_config = ConfigDict(extra="forbid")

    input_per_m: float = Field(ge=0)
    """Price of uncached input tokens."""
    output_per_m: float = Field(ge=0)
    """Price of output tokens (reasoning included)."""
    cache_read_per_m: float | None = Field(default=None, ge=0)
    """Price of input tokens served from the prompt cache; null when unknown."""
    cache_write_per_m: float | None = Field(default=None, ge=0)
    """Price of input tokens written to the prompt cache; null when unknown."""


class LLMConfig(BaseModel):
    """Which model to call and how. Holds no secret: `api_key_env` names the variable holding the key."""

    # Validation errors never quote inputs: a key pasted into the wrong field must not reach a log.
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    provider: Provider
    """API family: `openai` (also any OpenAI-compatible endpoint via `base_url`) or `anthropic`."""
    model: str = Field(min_length=1)
    """Model name sent to the API."""
    base_url: str | None = None
    """Endpoint override (OpenAI-compatible servers, proxies, the loopback stub); null = provider default."""
    api_key_env: str = ""
    """Name of the environment variable holding the API key (default OPENAI_API_KEY / ANTHROPIC_API_KEY)."""
    reasoning_effort: ReasoningEffort | None = None
    """OpenAI `reasoning_effort`; for Anthropic mapped to an extended-thinking budget. Null = not sent."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Per-request timeout in seconds (one attempt, not the whole retry sequence)."""
    max_retries: int = Field(default=4, ge=0)
    """Retries after the first attempt on 429, 5xx, timeouts and connection errors."""
    backoff_initial_s: float = Field(default=1.0, ge=0)
    """First backoff step; later waits grow exponentially with full jitter."""
    backoff_max_s: float = Field(default=30.0, ge=0)
    """Cap of one exponential backoff wait."""
    retry_after_max_s: float = Field(default=60.0, ge=0)
    """Cap applied to a server's Retry-After so a bad header cannot stall a run."""
    max_output_tokens: int = Field(default=4096, gt=0)
    """`max_tokens` of each request (Anthropic requires it; thinking budget is added on top)."""
    openai_max_tokens_param: MaxTokensParam = "max_completion_tokens"
    """How an OpenAI-compatible endpoint names the output limit (older servers only know `max_tokens`)."""
    anthropic_prompt_cache: bool = False
    """Anthropic: send top-level `cache_control` (ephemeral) so the conversation prefix is cached."""
    temperature: float | None = None
    """Sampling temperature; null = provider default (not sent)."""
    pricing: ModelPrice | None = None
    """Price of the model; null = unknown, so costs stay null."""

    @model_validator(mode="before")
    @classmethod
    def _defaults_and_redaction(cls, data: object) -> object:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        # A parent model (farm.yaml) may print inputs in its errors: blank anything that may be a key
        # before validation, so the error names the field but never quotes the secret.
        for name in list(data):
            if name not in cls.model_fields and _SECRETISH.search(str(name)):
                data[name] = "<redacted>"
        env_name = data.get("api_key_env")
        if isinstance(env_name, str) and env_name and not _ENV_NAME.fullmatch(env_name):
            data["api_key_env"] = "<redacted: not a variable name>"
        if not data.get("api_key_env"):
            provider = data.get("provider")
            if isinstance(provider, str) and provider in DEFAULT_KEY_ENV:
                data["api_key_env"] = DEFAULT_KEY_ENV[provider]
        return data

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        # Never echo the value: someone may have pasted the key itself here.
        if not _ENV_NAME.fullmatch(value):
            raise ValueError("must be the NAME of an environment variable (letters, digits, _), not a key")
        return value

    @classmethod
    def from_env(
        cls,
        overrides: Mapping[str, object] | None = None,
        *,
        base: LLMConfig | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> LLMConfig:
        """Merge `base` (farm.yaml `llm:`) < FARM_LLM_* variables < non-None `overrides` (field -> value).

        When the provider changes on the way and the key variable was only the old provider's
        default, the new provider's default applies.
        """
        env = os.environ if environ is None else environ
        data: dict[str, object] = base.model_dump(exclude_none=True) if base is not None else {}
        for var, field in ENV_FIELDS.items():
            value = env.get(var)
            if value is not None and value.strip() != "":
                data[field] = value.strip()
        for key, override in (overrides or {}).items():
            if override is not None:
                data[key] = override
        if (
            base is not None
            and data.get("provider") != base.provider
            and data.get("api_key_env") == DEFAULT_KEY_ENV[base.provider]
        ):
            data.pop("api_key_env")
        if "provider" not in data or "model" not in data:
            raise FarmError(
                "llm: no model configured (FARM_LLM_PROVIDER / FARM_LLM_MODEL unset)",
                hint="set them, or the `llm:` section of farm.yaml",
            )
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise FarmError(f"llm: {_first_error(exc)}", hint="fix the FARM_LLM_* variables") from None

    def api_key(self, environ: Mapping[str, str] | None = None) -> str:
        """Read the key from the named environment variable (call only when creating a client)."""
        env = os.environ if environ is None else environ
        key = env.get(self.api_key_env, "").strip()
        if not key:
            raise FarmError(
                f"llm: environment variable {self.api_key_env} (api_key_env) is unset or empty",
                hint=f"export {self.api_key_env}=<your {self.provider} API key>",
            )
        return key


def _first_error(exc: ValidationError) -> str:
    """One line naming the field and the problem, never the offending input."""
    err = exc.errors(include_input=False, include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"]) or "config"
    return f"{where}: {err['msg']}"
