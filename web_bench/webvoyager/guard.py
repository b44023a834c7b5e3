"""The access guard (seed 002, 网站访问失败的处理边界): known restriction and challenge pages become error
results, an origin found restricted is not requested again in the same turn, a navigation that fails on the
network may be retried once, and three restricted results end the attempt (`website_unavailable`).

Detection is a pure function of what the page shows (title, visible text, HTTP status) so it is tested
without a browser. It matches whole block pages, never a word: a recipe article that mentions "captcha" or a
product called "Access Denied (DVD)" is an ordinary page.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Response
from pydantic import JsonValue

from web_bench.browser.contract import BackendName, ToolResult
from web_bench.browser.page_tools import PageSession

MAX_RESTRICTED_RESULTS = 3
"""Restricted tool results after which the attempt stops (seed: 累计三次受限工具结果后终止)."""
BLOCK_PAGE_MAX_CHARS = 4000
"""Block and challenge pages are short; a page with more visible text than this is judged by its status only."""

GuardAction = Literal["restricted", "refused", "network_failure", "network_blocked"]
GuardListener = Callable[[GuardAction, str, str], None]
"""Told (action, origin, reason) whenever the guard acts."""


@dataclass(frozen=True)
class PageView:
    """What the guard looks at: the page as a person sees it."""

    url: str
    title: str
    text: str
    """Visible text (`innerText` of the body), possibly cut after BLOCK_PAGE_MAX_CHARS + 1 characters."""
    status: int | None = None
    """HTTP status of the main document, when known."""


_BLOCK_HEADINGS = frozenset({
    "access denied", "access restricted", "request blocked", "forbidden", "403 forbidden", "403 - forbidden",
    "error 403", "http error 403", "access to this page has been denied", "you have been blocked",
    "sorry, you have been blocked",
})
"""Titles / first lines of block pages (compared whole, so "Access Denied (DVD)" is not one)."""
_AUTOMATION_HINT = re.compile(
    r"automated|automation|\brobots?\b|\bbots?\b|reference id|reference #|request id|incident id|"
    r"you don't have permission to access|press (?:&|and) hold|could not be satisfied|unusual activity"
)
# (reason, phrase a prominent line starts with, phrases of which one must appear anywhere — empty: none needed)
_CHALLENGES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("Amazon robot check (captcha)", "enter the characters you see below",
     ("not a robot", "type the characters you see in this image", "try different image")),
    ("Google unusual-traffic check", "our systems have detected unusual traffic from your computer network", ()),
)
_PROMINENT_LINES = 6
"""Lines at the top of the page where a challenge states itself (an article quoting one further down is not one)."""
_NETWORK_ERROR = re.compile(r"net::ERR_(?!ABORTED)[A-Z_]+|Timeout \d+ms exceeded")


def _norm(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u00a0", " ").lower()
    return " ".join(text.split()).strip(" .!")


def _lines(text: str) -> list[str]:
    return [_norm(line) for line in text.splitlines() if line.strip()]


def detect_restriction(view: PageView) -> str | None:
    """Why this page is an access restriction or challenge page, or None for an ordinary page."""
    lines = _lines(view.text)
    title = _norm(view.title)
    heading = next((h for h in [title, *lines[:2]] if h in _BLOCK_HEADINGS), None)
    if heading is not None and view.status == 403:
        return f"HTTP 403 page {heading!r}"
    if len(view.text) > BLOCK_PAGE_MAX_CHARS:
        return None
    body = "\n".join(lines)
    if heading is not None and (view.status in (401, 429, 503) or _AUTOMATION_HINT.search(body)):
        return f"block page {heading!r}" + (f" (HTTP {view.status})" if view.status else "")
    prominent = [title, *lines[:_PROMINENT_LINES]]
    for reason, opening, one_of in _CHALLENGES:
        if any(line.startswith(opening) for line in prominent) and (not one_of or any(p in body for p in one_of)):
            return reason
    if "to discuss automated access to amazon data" in body and "api-services-support@amazon.com" in body:
        return "Amazon automated-access block"
    return None


def is_network_failure(error_text: str) -> bool:
    """Whether a navigation error is the network's (DNS, connection, TLS, timeout), not the page's."""
    return _NETWORK_ERROR.search(error_text) is not None


def origin_of(url: str) -> str | None:
    """`scheme://host[:port]` of an http(s) URL; None for anything else."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    default = {"http": 80, "https": 443}[parts.scheme]
    try:
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname.lower()
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")


_PAGE_TEXT_JS = f"() => (document.body ? document.body.innerText : '').slice(0, {BLOCK_PAGE_MAX_CHARS + 1})"


class GuardedSession:
    """A `BrowserSession` over a `PageSession` that applies the access rules of one turn."""

    def __init__(self, inner: PageSession, on_event: GuardListener | None = None) -> None:
        self.inner = inner
        self.backend: BackendName = inner.backend
        self.on_event = on_event
        self.restricted_origins: list[str] = []
        self.restricted_results = 0
        self.blocked_origins: set[str] = set()
        self._network_failures: dict[str, int] = {}
        self._status: int | None = None
        inner.page.on("response", self._on_response)

    def reset(self) -> None:
        """A new user turn: forget restricted and blocked origins (seed: 新用户轮次重置限制)."""
        self.restricted_origins.clear()
        self.restricted_results = 0
        self.blocked_origins.clear()
        self._network_failures.clear()

    @property
    def exhausted(self) -> bool:
        """Whether the turn has hit its limit of restricted results."""
        return self.restricted_results >= MAX_RESTRICTED_RESULTS

    def call(self, name: str, arguments: Mapping[str, JsonValue]) -> ToolResult:
        """Run a tool under the access rules."""
        target = arguments.get("url") if name == "browser_navigate" else None
        origin = origin_of(target) if isinstance(target, str) else None
        if origin is not None and origin in self.restricted_origins:
            self.restricted_results += 1
            self._tell("refused", origin, "restricted earlier in this turn")
            return ToolResult(is_error=True, text=(
                f"Error: browser_navigate: {origin} is restricting access (found earlier in this task); it is not "
                "requested again. Do not try to get around captchas or access controls: use another permitted "
                "source, or give your final answer with what you found and say the site restricted access."))
        if origin is not None and origin in self.blocked_origins:
            self._tell("refused", origin, "navigation failed twice on the network")
            return ToolResult(is_error=True, text=(
                f"Error: browser_navigate: {origin} failed twice on the network; navigation to it is stopped for "
                "this task. Use another permitted source or give your final answer."))
        result = self.inner.call(name, arguments)
        if origin is not None and result.is_error and is_network_failure(result.text):
            return self._network_failure(origin, result)
        return self._check_page(result, origin)

    def _network_failure(self, origin: str, result: ToolResult) -> ToolResult:
        count = self._network_failures.get(origin, 0) + 1
        self._network_failures[origin] = count
        if count == 1:
            self._tell("network_failure", origin, result.text)
            return ToolResult(is_error=True,
                              text=result.text + "\n(Network failure: this navigation may be retried once.)")
        self.blocked_origins.add(origin)
        self._tell("network_blocked", origin, result.text)
        return ToolResult(is_error=True, text=result.text + f"\n(Second network failure: navigation to {origin} is "
                                                             "stopped for this task.)")

    def _check_page(self, result: ToolResult, requested: str | None) -> ToolResult:
        try:
            view = self.page_view()
        except PlaywrightError:
            return result  # the page is gone (crash, closed): nothing to judge
        reason = detect_restriction(view)
        if reason is None:
            return result
        self.restricted_results += 1
        origins = [o for o in (origin_of(view.url), requested) if o is not None]
        for origin in origins:
            if origin not in self.restricted_origins:
                self.restricted_origins.append(origin)
        shown = origins[0] if origins else view.url
        self._tell("restricted", shown, reason)
        return ToolResult(is_error=True, image_jpeg=result.image_jpeg, text=(
            f"Error: {shown} is restricting access ({reason}).\n- Page URL: {view.url}\n- Page Title: {view.title}\n"
            "This is an access restriction or challenge page. Do not try to solve or get around it; it will not be "
            "requested again in this task. Use another permitted source, or give your final answer with what you "
            "found and say the site restricted access."))

    def page_view(self) -> PageView:
        """The current page as the detector sees it."""
        page = self.inner.page
        text = page.evaluate(_PAGE_TEXT_JS)
        return PageView(url=page.url, title=page.title(), text=str(text or ""), status=self._status)

    def close(self) -> None:
        """Close the underlying session."""
        self.inner.close()

    def _on_response(self, response: Response) -> None:
        try:
            if response.request.is_navigation_request() and response.frame == self.inner.page.main_frame:
                self._status = response.status
        except PlaywrightError:
            pass

    def _tell(self, action: GuardAction, origin: str, reason: str) -> None:
        if self.on_event is not None:
            self.on_event(action, origin, reason)
