"""Shared fixtures. Tests never touch a developer's adb server: see tests/helpers/phones.py."""

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from tests.helpers.phones import virtual_farm, virtual_phone  # noqa: F401

# `make test` and CI run the same derandomized examples, so a run is reproducible from its commit alone and a
# property test cannot fail on one machine and pass on another. Shared 2-core machines stall now and then: a
# per-example deadline would turn that into a failure.
settings.register_profile("deterministic", derandomize=True, deadline=None, print_blob=True)
# `make fuzz` (HYPOTHESIS_PROFILE=fuzz): fresh random examples on every run and many more of them, to find new
# counterexamples; a failure prints the blob that replays it with @reproduce_failure.
settings.register_profile("fuzz", max_examples=2000, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "deterministic")


@pytest.fixture(autouse=True)
def _own_phone_leases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # Each test (and every `farm` process it starts) leases phones in a directory of its own, never the user's.
    leases = tmp_path_factory.mktemp("leases")
    before = os.environ.get("FARM_LEASES_DIR")
    os.environ["FARM_LEASES_DIR"] = str(leases)
    yield
    if before is None:
        os.environ.pop("FARM_LEASES_DIR", None)
    else:
        os.environ["FARM_LEASES_DIR"] = before
