"""Fixtures that start an isolated adb server and virtual phones (filled by the virtual-phone work)."""

import pytest


@pytest.fixture
def virtual_phone() -> None:
    raise NotImplementedError


@pytest.fixture
def virtual_farm() -> None:
    raise NotImplementedError
