"""Fixtures for the model-access tests: a running loopback stub and clients pointed at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from farm.llm.stub import ModelStub
from tests.helpers.llm import MakeClient, stub_clients

KEY_ENV = "FARM_TEST_LLM_KEY"
CANARY_KEY = "sk-canary-7f3a9c1e5b2d4f60"

__all__ = ["CANARY_KEY", "KEY_ENV", "MakeClient", "client_for", "stub"]


@pytest.fixture
def stub() -> Iterator[ModelStub]:
    with ModelStub() as running:
        yield running


@pytest.fixture
def client_for(stub: ModelStub, monkeypatch: pytest.MonkeyPatch) -> Iterator[MakeClient]:
    """`client_for(provider, **config_fields)` -> a client of the stub (fast backoff, key from env)."""
    with stub_clients(stub, monkeypatch, key_env=KEY_ENV, key=CANARY_KEY) as build:
        yield build
