"""Fixtures of the report tests: the screenshot tests' headless Chromium, the machine's own."""

from tests.helpers.web import chromium_browser  # noqa: F401 - a fixture
