"""Shared fixtures. Tests never touch a developer's adb server: see tests/helpers/phones.py."""

import os

from hypothesis import settings

from tests.helpers.phones import virtual_farm, virtual_phone  # noqa: F401

# Shared 2-core machines stall now and then: a per-example deadline would turn that into a failure.
# In CI the examples are derandomized, so a run is reproducible from its commit alone.
settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")
