"""The lanes' report sections registered, as `farm report` and the sweep do before they build a report."""

from __future__ import annotations

import pytest

from farm.lane_plugins import install


@pytest.fixture(autouse=True, scope="session")
def lane_plugins() -> None:
    """Autouse in a module that imports it: its tests and module fixtures see the lanes' sections registered."""
    install()
