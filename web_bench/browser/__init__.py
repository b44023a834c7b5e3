"""One `browser_*` tool contract, three backends: Playwright-driven Chromium, a Manifest V3 extension inside
Chromium (through a loopback bridge), and Chrome on a phone."""

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
