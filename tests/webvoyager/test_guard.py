"""The access guard: block and challenge pages are recognised as whole pages (never by a word), restricted
origins are not requested again, and a network failure allows one retry."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from web_bench.browser import driver
from web_bench.browser.chromium import CHROMIUM_ARGS, find_chromium
from web_bench.browser.page_tools import PageSession
from web_bench.webvoyager.guard import (
    MAX_RESTRICTED_RESULTS,
    GuardedSession,
    PageView,
    detect_restriction,
    is_network_failure,
    origin_of,
)
from web_bench.webvoyager.standin import DEFAULT_STAND_IN, StandIn

AMAZON_CAPTCHA = PageView(
    url="https://www.amazon.com/s?k=xbox", title="Amazon.com", status=200,
    text="Enter the characters you see below\nSorry, we just need to make sure you're not a robot. For best results, "
         "please make sure your browser is accepting cookies.\nType the characters you see in this image:\n"
         "Try different image\nContinue shopping\nConditions of Use\nPrivacy Policy\n© 1996-2026, Amazon.com, Inc.",
)
AMAZON_AUTOMATED = PageView(
    url="https://www.amazon.com/dp/B0X", title="Sorry! Something went wrong!", status=503,
    text="Sorry! Something went wrong on our end.\nTo discuss automated access to Amazon data please contact "
         "api-services-support@amazon.com.",
)
GOOGLE_SORRY = PageView(
    url="https://www.google.com/sorry/index?continue=x", title="https://www.google.com/search?q=apple", status=429,
    text="About this page\nOur systems have detected unusual traffic from your computer network. This page checks "
         "to see if it's really you sending the requests, and not a robot.\nWhy did this happen?",
)
PEOPLE_INC = PageView(
    url="https://www.allrecipes.com/recipe/1/", title="Access Restricted", status=403,
    text="Access Restricted\nYour access to this site has been restricted because the request looked automated.\n"
         "Reference ID: 7f3c2a91",
)
AKAMAI = PageView(
    url="https://www.apple.com/iphone/", title="Access Denied", status=403,
    text='Access Denied\nYou don\'t have permission to access "http://www.apple.com/iphone/" on this server.\n'
         "Reference #18.6f2c3e17.1727000000.5a1b2c3",
)
RECIPE_ARTICLE = PageView(
    url="https://www.allrecipes.com/article/captchas/", title="Why Recipe Sites Ask You to Prove You Are Human",
    status=200,
    text="Allrecipes\nWhy recipe sites ask you to prove you are human\nHave you ever been asked to solve a captcha "
         "before a recipe? Sites show one when traffic looks automated. If you see one, enter the characters you "
         "see below the picture to show you are not a robot.\nAccess restricted pages are rarer: a blocked network "
         "usually recovers within the hour.\nSalt the pasta water well.",
)
DVD_PRODUCT = PageView(
    url="https://www.amazon.com/dp/B0DVD/", title="Amazon.com: Access Denied (DVD)", status=200,
    text="Access Denied (DVD)\nA thriller about a robot that locks a hacker out of her bank.\n4.1 out of 5 stars\n"
         "Price: $12.99\nAdd to Cart",
)


@pytest.mark.parametrize("view", [AMAZON_CAPTCHA, AMAZON_AUTOMATED, GOOGLE_SORRY, PEOPLE_INC, AKAMAI],
                         ids=["amazon-captcha", "amazon-automated", "google-sorry", "people-inc", "akamai-403"])
def test_known_block_and_challenge_pages_are_restricted(view: PageView) -> None:
    assert detect_restriction(view) is not None


def test_a_people_inc_block_page_is_recognised_without_its_status() -> None:
    assert detect_restriction(PageView(PEOPLE_INC.url, PEOPLE_INC.title, PEOPLE_INC.text, status=None)) is not None


def test_a_recipe_article_that_talks_about_captchas_is_not_restricted() -> None:
    assert detect_restriction(RECIPE_ARTICLE) is None


def test_a_product_titled_access_denied_is_not_restricted() -> None:
    assert detect_restriction(DVD_PRODUCT) is None


def test_a_short_page_headed_access_denied_without_any_block_sign_is_not_restricted() -> None:
    movie = PageView(url="https://www.amazon.com/dp/B1/", title="Access Denied", status=200,
                     text="Access Denied\nA 2024 thriller. Runtime 1 h 48 min.\n$3.99 to rent")
    assert detect_restriction(movie) is None


def test_a_challenge_quoted_deep_in_a_long_page_is_not_restricted() -> None:
    filler = "\n".join(f"Step {n}: stir the sauce and taste it." for n in range(200))
    quoted = PageView(url="https://www.allrecipes.com/article/x/", title="Kitchen tech", status=200,
                      text=f"{filler}\n{AMAZON_CAPTCHA.text}\n{GOOGLE_SORRY.text}")
    assert detect_restriction(quoted) is None


def test_a_long_403_page_headed_access_denied_is_restricted() -> None:
    long_denied = PageView(url="https://www.apple.com/x/", title="Access Denied", status=403,
                           text="Access Denied\n" + "Apple footer link\n" * 600)
    assert detect_restriction(long_denied) is not None


def test_network_failures_are_told_from_page_errors() -> None:
    assert is_network_failure("Error: browser_navigate: Page.goto: net::ERR_NAME_NOT_RESOLVED at https://x/")
    assert is_network_failure("Error: browser_navigate: Page.goto: Timeout 20000ms exceeded.")
    assert not is_network_failure("Error: browser_navigate: Page.goto: net::ERR_ABORTED at https://x/")
    assert not is_network_failure("Error: browser_click: ref 'e9' is not in the current page")


def test_origins_normalise_scheme_host_and_default_port() -> None:
    assert origin_of("https://WWW.Amazon.com:443/s?k=1") == "https://www.amazon.com"
    assert origin_of("http://127.0.0.1:8080/a") == "http://127.0.0.1:8080"
    assert origin_of("about:blank") is None and origin_of("javascript:alert(1)") is None


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    playwright = driver.acquire()
    try:
        launched = playwright.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()
    finally:
        driver.release()


class _Guarded:
    """A guarded page on the stand-in sites, with the requests it sent and the guard's events."""

    def __init__(self, browser: Browser) -> None:
        self.context = browser.new_context()
        StandIn(DEFAULT_STAND_IN).attach(self.context)
        self.requests: list[str] = []
        self.context.on("request", lambda r: self.requests.append(r.url))
        self.events: list[tuple[str, str]] = []
        page = self.context.new_page()
        self.guard = GuardedSession(PageSession("playwright", page, self.context.close),
                                    on_event=lambda action, origin, _: self.events.append((action, origin)))

    def go(self, url: str) -> str:
        return self.guard.call("browser_navigate", {"url": url}).text


@pytest.fixture
def guarded(browser: Browser) -> Iterator[_Guarded]:
    made = _Guarded(browser)
    yield made
    made.guard.close()


def test_a_captcha_page_is_an_error_and_its_origin_is_not_requested_again(guarded: _Guarded) -> None:
    first = guarded.guard.call("browser_navigate", {"url": "https://www.amazon.com/errors/validateCaptcha"})
    assert first.is_error and "restricting access" in first.text and "robot check" in first.text
    sent = len(guarded.requests)
    second = guarded.guard.call("browser_navigate", {"url": "https://www.amazon.com/s?k=xbox"})
    assert second.is_error and "not requested again" in second.text
    assert len(guarded.requests) == sent
    assert guarded.guard.restricted_origins == ["https://www.amazon.com"]
    assert guarded.guard.restricted_results == 2 < MAX_RESTRICTED_RESULTS
    assert guarded.events == [("restricted", "https://www.amazon.com"), ("refused", "https://www.amazon.com")]


def test_an_explicit_403_access_denied_page_is_restricted(guarded: _Guarded) -> None:
    result = guarded.guard.call("browser_navigate", {"url": "https://www.apple.com/denied/"})
    assert result.is_error and "HTTP 403" in result.text


def test_ordinary_pages_that_mention_blocks_pass_untouched(guarded: _Guarded) -> None:
    article = guarded.guard.call("browser_navigate",
                                 {"url": "https://www.allrecipes.com/article/why-sites-ask-for-a-captcha/"})
    dvd = guarded.guard.call("browser_navigate", {"url": "https://www.amazon.com/dp/B0DVDACDN3/"})
    assert not article.is_error and "captcha" in article.text
    assert not dvd.is_error and "Access Denied (DVD)" in dvd.text
    assert guarded.guard.restricted_results == 0 and guarded.events == []


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_network_failure_allows_one_retry_then_stops_that_origin(guarded: _Guarded) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/"
    first, second = guarded.go(url), guarded.go(url)
    assert "ERR_CONNECTION_REFUSED" in first and "may be retried once" in first
    assert "ERR_CONNECTION_REFUSED" in second and "stopped" in second
    sent = len(guarded.requests)
    third = guarded.go(url + "other")
    assert "failed twice" in third and len(guarded.requests) == sent
    assert [a for a, _ in guarded.events] == ["network_failure", "network_blocked", "refused"]
    assert guarded.guard.restricted_results == 0


def test_a_new_turn_forgets_the_restrictions(guarded: _Guarded) -> None:
    guarded.go("https://www.allrecipes.com/restricted/")
    assert guarded.guard.restricted_origins == ["https://www.allrecipes.com"]
    guarded.guard.reset()
    result = guarded.guard.call("browser_navigate", {"url": "https://www.allrecipes.com/"})
    assert not result.is_error and guarded.guard.restricted_results == 0
