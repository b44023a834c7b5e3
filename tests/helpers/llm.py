"""Real SDK clients pointed at the loopback model stub, closed when the test ends."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import pytest

from farm.llm.client import ModelClient, make_client
from farm.llm.model_config import LLMConfig, Provider
from farm.llm.stub import ModelStub

MakeClient = Callable[..., ModelClient]
"""`build(provider, **config_fields) -> ModelClient`."""


@contextmanager
def stub_clients(stub: ModelStub, monkeypatch: pytest.MonkeyPatch, *, key_env: str, key: str,
                 model_suffix: str = "-test-model", defaults: Mapping[str, object] | None = None,
                 ) -> Iterator[MakeClient]:
    """A factory of clients of `stub` (fast backoff, the key read from `key_env`), all closed on exit."""
    monkeypatch.setenv(key_env, key)
    made: list[ModelClient] = []

    def build(provider: Provider, **fields: object) -> ModelClient:
        data: dict[str, object] = {
            "provider": provider, "model": f"{provider}{model_suffix}", "base_url": stub.base_url(provider),
            "api_key_env": key_env, "timeout_s": 30.0, "max_retries": 2, "backoff_initial_s": 0.01,
            "backoff_max_s": 0.05, **(defaults or {}), **fields,
        }
        client = make_client(LLMConfig.model_validate(data))
        made.append(client)
        return client

    try:
        yield build
    finally:
        for client in made:
            client.close()
