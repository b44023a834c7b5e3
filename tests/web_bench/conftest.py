"""Fixtures of the web lane tests (see tests/helpers/web.py)."""

from tests.helpers.web import chromium_browser, devtools_chromium, make_backend, site  # noqa: F401
