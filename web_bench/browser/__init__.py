"""One `browser_*` tool contract, two backends: Playwright-driven Chromium and Chrome on a phone."""

from web_bench.browser.contract import (
    BACKEND_NAMES,
    SYSTEM_PROMPT,
    TOOLS,
    BackendName,
    BrowserBackend,
    BrowserSession,
    ToolResult,
)

__all__ = [
    "BACKEND_NAMES", "SYSTEM_PROMPT", "TOOLS", "BackendName", "BrowserBackend", "BrowserSession", "ToolResult",
]
