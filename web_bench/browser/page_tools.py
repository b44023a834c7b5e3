"""The `browser_*` tools executed on a Playwright page — the same code for both backends, so the
settle budget, snapshot format and error texts cannot drift apart."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Locator, Page
from pydantic import JsonValue

from web_bench.browser.contract import (
    ACTION_TIMEOUT_MS,
    NAVIGATION_TIMEOUT_MS,
    SETTLE_BUDGET_MS,
    SETTLE_QUIET_MS,
    WAIT_FOR_MAX_S,
    BackendName,
    ClickArgs,
    NavigateArgs,
    PressKeyArgs,
    SelectArgs,
    ToolResult,
    TypeArgs,
    WaitForArgs,
    parse_args,
)

# Resolves once the DOM has had no mutation for `quiet` ms, or after `budget` ms.
_QUIET_DOM_JS = """([quiet, budget]) => new Promise((resolve) => {
  let timer = null;
  const finish = () => { observer.disconnect(); clearTimeout(timer); clearTimeout(cap); resolve(true); };
  const observer = new MutationObserver(() => { clearTimeout(timer); timer = setTimeout(finish, quiet); });
  observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  timer = setTimeout(finish, quiet);
  const cap = setTimeout(finish, budget);
})"""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class PageSession:
    """A `BrowserSession` over one Playwright page."""

    def __init__(self, backend: BackendName, page: Page, on_close: Callable[[], None]) -> None:
        self.backend: BackendName = backend
        self.page = page
        self._on_close = on_close
        page.set_default_timeout(ACTION_TIMEOUT_MS)
        page.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)

    def call(self, name: str, arguments: Mapping[str, JsonValue]) -> ToolResult:
        """Execute one tool; every failure becomes an error result the model can read."""
        try:
            args = parse_args(name, arguments)
        except ValueError as exc:
            return ToolResult(text=f"Error: {exc}", is_error=True)
        try:
            return self._dispatch(name, args)
        except PlaywrightError as exc:
            return ToolResult(text=f"Error: {name}: {_one_line(exc)}", is_error=True)

    def close(self) -> None:
        """Close the page and whatever the backend opened for it."""
        self._on_close()

    # -- tools -------------------------------------------------------------------------------

    def _dispatch(self, name: str, args: object) -> ToolResult:
        page = self.page
        if isinstance(args, NavigateArgs):
            page.goto(args.url, wait_until="domcontentloaded")
            return self._after_action()
        if name == "browser_snapshot":
            return ToolResult(text=self.snapshot_text())
        if name == "browser_navigate_back":
            # "commit": a back-forward-cache restore fires no load events (Chrome on phones keeps bfcache on).
            page.go_back(wait_until="commit")
            return self._after_action()
        if name == "browser_take_screenshot":
            image = page.screenshot(type="jpeg", quality=70)
            return ToolResult(text=f"Screenshot of {page.url} ({len(image)} bytes, JPEG).", image_jpeg=image)
        if isinstance(args, ClickArgs):
            clicked = self._target(args.ref)
            if clicked is None:
                return self._stale(name, args.ref)
            clicked.click()
            return self._after_action()
        if isinstance(args, TypeArgs):
            target = self._target(args.ref)
            if target is None:
                return self._stale(name, args.ref)
            target.fill(args.text)
            if args.submit:
                target.press("Enter")
            return self._after_action()
        if isinstance(args, SelectArgs):
            select = self._target(args.ref)
            if select is None:
                return self._stale(name, args.ref)
            select.select_option(args.values)
            return self._after_action()
        if isinstance(args, PressKeyArgs):
            page.keyboard.press(args.key)
            return self._after_action()
        if isinstance(args, WaitForArgs):
            return self._wait_for(args)
        raise AssertionError(f"unhandled tool {name}")

    def _wait_for(self, args: WaitForArgs) -> ToolResult:
        if args.time is None and args.text is None and args.textGone is None:
            return ToolResult(text="Error: browser_wait_for: give time, text or textGone", is_error=True)
        page = self.page
        if args.time is not None:
            page.wait_for_timeout(min(max(args.time, 0.0), WAIT_FOR_MAX_S) * 1000)
        limit_ms = WAIT_FOR_MAX_S * 1000
        if args.textGone is not None:
            page.get_by_text(args.textGone).first.wait_for(state="hidden", timeout=limit_ms)
        if args.text is not None:
            page.get_by_text(args.text).first.wait_for(state="visible", timeout=limit_ms)
        done = [f"waited {args.time:g} s" if args.time is not None else "",
                f"text {args.text!r} appeared" if args.text is not None else "",
                f"text {args.textGone!r} is gone" if args.textGone is not None else ""]
        return ToolResult(text="; ".join(d for d in done if d) + "\n\n" + self.snapshot_text())

    # -- helpers -----------------------------------------------------------------------------

    def _target(self, ref: str) -> Locator | None:
        # An unknown ref would otherwise wait out the whole action timeout.
        locator = self.page.locator(f"aria-ref={ref}")
        return locator if locator.count() == 1 else None

    @staticmethod
    def _stale(name: str, ref: str) -> ToolResult:
        return ToolResult(
            text=f"Error: {name}: ref {ref!r} is not in the current page; take a new browser_snapshot",
            is_error=True,
        )

    def settle(self) -> None:
        """Wait until the page is loaded and its DOM quiet, within the shared budget."""
        deadline = time.monotonic() + SETTLE_BUDGET_MS / 1000
        for _ in range(3):
            remaining = int((deadline - time.monotonic()) * 1000)
            if remaining <= 0:
                return
            try:
                self.page.wait_for_load_state("domcontentloaded", timeout=remaining)
                remaining = max(int((deadline - time.monotonic()) * 1000), SETTLE_QUIET_MS)
                self.page.evaluate(_QUIET_DOM_JS, [SETTLE_QUIET_MS, remaining])
                return
            except PlaywrightError:
                # A navigation destroyed the context mid-wait; wait for the new document instead.
                continue

    def snapshot_text(self) -> str:
        """URL, title and the accessibility snapshot with refs, as the model sees it."""
        page = self.page
        tree = page.aria_snapshot(mode="ai")
        return f"- Page URL: {page.url}\n- Page Title: {page.title()}\n- Page Snapshot:\n```yaml\n{tree}\n```"

    def _after_action(self) -> ToolResult:
        self.settle()
        return ToolResult(text=self.snapshot_text())
