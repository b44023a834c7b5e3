"""Fixtures of the viewer tests: one headless Chromium per module, the machine's own (never downloaded)."""

from tests.helpers.web import chromium_browser  # noqa: F401 - a fixture
