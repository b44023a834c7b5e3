"""fixtures/benchmark/form.html in the real Chromium: both browser tasks reach their strings, offline."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import BrowserContext, Page, sync_playwright

from farm.desktop.tasks import FORM_PAGE, get_task
from tests.helpers.desktop import REPO
from web_bench.browser.chromium import CHROMIUM_ARGS

TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrowserContext, list[str]]]:
    """A fresh Chromium profile and the URL of every request any of its pages made."""
    requests: list[str] = []
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path="/usr/bin/chromium",
            args=CHROMIUM_ARGS,
            headless=True,
        )
        context.on("request", lambda request: requests.append(request.url))
        yield context, requests
        context.close()


@pytest.fixture
def page(browser_context: tuple[BrowserContext, list[str]]) -> Iterator[Page]:
    """The form page freshly opened by its absolute file:// URL."""
    context, _ = browser_context
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    tab.goto((REPO / FORM_PAGE).resolve().as_uri())
    yield tab
    tab.close()


def test_browser_form_preview_reaches_the_expected_text(page: Page) -> None:
    page.select_option("#plan", "Team")
    page.fill("#name", "Deskhand")
    page.check("#agree")
    page.click("#preview")
    task = get_task("browser-form")
    assert task is not None
    assert page.text_content("#form-preview") == task.expected == "Deskhand | Team | agreed"


def test_browser_form_preview_without_agreement_differs(page: Page) -> None:
    page.select_option("#plan", "Team")
    page.fill("#name", "Deskhand")
    page.uncheck("#agree")
    page.click("#preview")
    assert page.text_content("#form-preview") == "Deskhand | Team | not agreed"


def test_browser_delayed_control_appears_late_and_verifies(page: Page) -> None:
    assert page.is_hidden("#details-input")
    page.click("#load-details")
    assert page.is_hidden("#details-input")  # the control is not there right after the click
    page.wait_for_selector("#details-input", state="visible")
    page.fill("#details-input", page.text_content("#details-code") or "")
    page.click("#verify-details")
    task = get_task("browser-delayed")
    assert task is not None
    assert page.text_content("#details-status") == task.expected == "Details verified"


def test_browser_delayed_rejects_a_wrong_code(page: Page) -> None:
    page.click("#load-details")
    page.wait_for_selector("#details-input", state="visible")
    page.fill("#details-input", "wrong")
    page.click("#verify-details")
    assert page.text_content("#details-status") == "Code does not match"


def test_no_request_left_file_urls(browser_context: tuple[BrowserContext, list[str]], page: Page) -> None:
    _, requests = browser_context
    page.click("#load-details")
    page.wait_for_selector("#details-input", state="visible")
    page.click("#preview")
    assert requests, "the request listener saw nothing"
    assert all(url.startswith("file://") for url in requests), requests


def test_page_references_no_remote_resource() -> None:
    html = (REPO / FORM_PAGE).read_text(encoding="utf-8").lower()
    assert "http:" not in html and "https:" not in html and 'src="//' not in html
    assert "<form" in html and 'onsubmit="return false"' in html  # nothing is ever submitted
