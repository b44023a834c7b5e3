"""Fixtures of the conformance suites: an RSA key for AUTH and adb-shell on the phone's direct transport."""

from tests.sim.clients import adb_key, direct  # noqa: F401
