"""P6: `browser_snapshot` latency of the playwright backend vs playwright-mcp's, same pages, one run.

Installs `@playwright/mcp` from npm into a temporary directory (nothing is left behind), runs it
with `--executable-path /usr/bin/chromium --headless --isolated --no-sandbox` and speaks MCP
(JSON-RPC over stdio) to it. Both sides snapshot the same task-site pages; calls are interleaved
so machine load hits both alike. Goal: our median ≤ 1.0 × playwright-mcp's.

    .venv/bin/python bench/bench_snapshot.py [--rounds 40] [--mcp-version latest]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from web_bench.browser.android_chrome import AndroidChromeBackend
from web_bench.browser.chromium import CHROMIUM_ARGS, find_chromium
from web_bench.browser.playwright_backend import PlaywrightBackend
from web_bench.paired.site import data
from web_bench.paired.site.server import SiteClient, SiteServer
from web_bench.paired.virtual_phone import VirtualChromePhone


class McpClient:
    """A minimal MCP stdio client (newline-delimited JSON-RPC)."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.argv = argv
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self._id = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        self._send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                err = self.proc.stderr.read() if self.proc.stderr else ""
                raise RuntimeError(f"playwright-mcp exited: {err.strip()[:500]}")
            message = json.loads(line)
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message["result"])

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def start(self) -> str:
        info = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "bench_snapshot", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return f"{info['serverInfo']['name']} {info['serverInfo']['version']}"

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{name}: {result}")
        return "".join(part.get("text", "") for part in result.get("content", []))

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def install_mcp(where: Path, version: str) -> Path:
    """`npm install @playwright/mcp@<version>` into `where`; the server's executable."""
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed, so @playwright/mcp cannot be installed")
    proc = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(where),
                           f"@playwright/mcp@{version}"], capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"npm install @playwright/mcp@{version} failed: {proc.stderr.strip()[:500]}")
    for name in ("playwright-mcp", "mcp-server-playwright"):
        candidate = where / "node_modules" / ".bin" / name
        if candidate.exists():
            return candidate
    raise RuntimeError("@playwright/mcp installed but has no playwright-mcp executable")


def page_paths(client: SiteClient) -> dict[str, list[str]]:
    """Three sessions (ours, mcp, android) of each page, so no side touches another's state."""
    _, category, _ = data.inventory(1)
    pages: dict[str, list[str]] = {}
    for label, task, suffix in (("order history", "order_lookup", ""),
                                ("inventory (filtered)", "inventory_filter", f"?category={category}"),
                                ("shop", "cart_checkout", "")):
        pages[label] = [client.new_session(task, 1).start_path + suffix for _ in range(3)]  # type: ignore[arg-type]
    return pages


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def mcp_in(tmp_dir: Path, version: str, chromium: str) -> McpClient | None:
    """playwright-mcp installed into `tmp_dir` and its client (not started); None, said why, when npm cannot."""
    try:
        server = install_mcp(tmp_dir / "pkg", version)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"playwright-mcp unavailable: {exc}")
        return None
    argv = [str(server), "--executable-path", chromium, "--headless", "--isolated", "--no-sandbox",
            "--output-dir", str(tmp_dir / "out")]
    return McpClient(argv, tmp_dir)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=40, help="snapshots per page and side")
    parser.add_argument("--mcp-version", default="latest", help="@playwright/mcp version to install")
    args = parser.parse_args()
    chromium = find_chromium()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp, SiteServer() as site:
        tmp_dir = Path(tmp)
        mcp_client = mcp_in(tmp_dir, args.mcp_version, chromium)
        if mcp_client is None:
            return 1
        with ExitStack() as cleanup:
            mcp = mcp_client
            cleanup.callback(mcp.close)
            backend = PlaywrightBackend(chromium)
            cleanup.callback(backend.close)
            ours = backend.new_session()
            cleanup.callback(ours.close)
            phone = cleanup.enter_context(VirtualChromePhone(chromium))
            android_backend = AndroidChromeBackend(site.port, phone.serial, adb_port=phone.adb_port)
            cleanup.callback(android_backend.close)
            android = android_backend.new_session()
            cleanup.callback(android.close)
            version = mcp.start()
            print(f"ours: web_bench playwright backend, Chromium flags {' '.join(CHROMIUM_ARGS)}")
            print(f"theirs: {version} via {' '.join(mcp.argv[1:6])}")
            print(f"{args.rounds} interleaved snapshots per page and side\n")
            print(f"{'page':<24}{'ours p50 ms':>12}{'mcp p50 ms':>12}{'ratio':>8}{'android-chrome*':>17}")
            all_ours: list[float] = []
            all_mcp: list[float] = []
            all_android: list[float] = []
            for label, (our_path, mcp_path, android_path) in page_paths(SiteClient(site.base_url)).items():
                ours.call("browser_navigate", {"url": site.base_url + our_path})
                mcp.call("browser_navigate", {"url": site.base_url + mcp_path})
                android.call("browser_navigate", {"url": site.base_url + android_path})
                mine: list[float] = []
                theirs: list[float] = []
                phone_side: list[float] = []
                for _ in range(args.rounds):
                    started = time.perf_counter()
                    result = ours.call("browser_snapshot", {})
                    mine.append(time.perf_counter() - started)
                    assert not result.is_error, result.text
                    started = time.perf_counter()
                    mcp.call("browser_snapshot", {})
                    theirs.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    android.call("browser_snapshot", {})
                    phone_side.append(time.perf_counter() - started)
                all_ours += mine
                all_mcp += theirs
                all_android += phone_side
                print(f"{label:<24}{median_ms(mine):>12.2f}{median_ms(theirs):>12.2f}"
                      f"{median_ms(mine) / median_ms(theirs):>7.2f}×{median_ms(phone_side):>17.2f}")
            ratio = median_ms(all_ours) / median_ms(all_mcp)
            print(f"{'all pages':<24}{median_ms(all_ours):>12.2f}{median_ms(all_mcp):>12.2f}{ratio:>7.2f}×"
                  f"{median_ms(all_android):>17.2f}")
            print("* android-chrome backend on a virtual phone (adb forward → CDP → local Chromium), for reference")
            print(f"\nP6 browser_snapshot median ratio ours/playwright-mcp = {ratio:.2f}× "
                  f"(goal ≤ 1.0×: {'met' if ratio <= 1.0 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
