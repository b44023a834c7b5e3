"""Fixtures for the model-access tests: a running loopback stub and clients pointed at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from farm.llm.client import ModelClient, make_client
from farm.llm.config import LLMConfig, Provider
from farm.llm.stub import ModelStub

KEY_ENV = "FARM_TEST_LLM_KEY"
CANARY_KEY = "sk-canary-7f3a9c1e5b2d4f60"

MakeClient = Callable[..., ModelClient]


@pytest.fixture
def stub() -> Iterator[ModelStub]:
    with ModelStub() as running:
        yield running


@pytest.fixture
def client_for(stub: ModelStub, monkeypatch: pytest.MonkeyPatch) -> Iterator[MakeClient]:
    """`client_for(provider, **config_fields)` -> a client of the stub (fast backoff, key from env)."""
    monkeypatch.setenv(KEY_ENV, CANARY_KEY)
    made: list[ModelClient] = []

    def build(provider: Provider, **fields: object) -> ModelClient:
        data: dict[str, object] = {
            "provider": provider,
            "model": f"{provider}-test-model",
            "base_url": stub.base_url(provider),
            "api_key_env": KEY_ENV,
            "timeout_s": 30.0,
            "max_retries": 2,
            "backoff_initial_s": 0.01,
            "backoff_max_s": 0.05,
        }
        data.update(fields)
        client = make_client(LLMConfig.model_validate(data))
        made.append(client)
        return client

    yield build
    for client in made:
        client.close()
