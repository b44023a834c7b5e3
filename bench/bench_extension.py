"""The `extension` backend against the `playwright` backend and playwright-mcp, side by side in one run.

1. `browser_snapshot` median latency on the same three task-site pages (each side its own site
   session of each page; calls interleaved so machine load hits all sides alike). playwright-mcp is
   installed from npm into a temporary directory by bench_snapshot's helpers.
2. The end-to-end scripted smoke (six tasks, seed 1) of each backend: wall time of the whole smoke
   (browser launches included: the extension backend starts a Chromium per run) and the sum of the
   runs' completionMs (the turns only). Smokes alternate backends over `--smoke-rounds`.

The backends differ in snapshot shape, refs and action execution, so the ratios compare whole
backends, not the cost of the extension's transport.

    .venv/bin/python bench/bench_extension.py [--rounds 30] [--smoke-rounds 2] [--mcp-version latest]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from bench_snapshot import McpClient, mcp_in, median_ms, page_paths

from web_bench.browser.chromium import find_chromium
from web_bench.browser.contract import BackendName, ToolResult
from web_bench.browser.extension_backend import ExtensionBackend
from web_bench.browser.playwright_backend import PlaywrightBackend
from web_bench.paired.lane import ModelChoice, run_lane
from web_bench.paired.matrix import plan
from web_bench.paired.results import read_runs
from web_bench.paired.site.catalog import TASK_NAMES
from web_bench.paired.site.server import SiteClient, SiteServer


def snapshot_latency(site: SiteServer, mcp: McpClient, rounds: int) -> None:
    """Print per-page medians of the three sides and the ratios."""
    with ExitStack() as cleanup:
        playwright = PlaywrightBackend()
        cleanup.callback(playwright.close)
        pw = playwright.new_session()
        cleanup.callback(pw.close)
        ext = ExtensionBackend().new_session()
        cleanup.callback(ext.close)

        def ours(session: object) -> Callable[[], None]:
            def snap() -> None:
                result: ToolResult = session.call("browser_snapshot", {})  # type: ignore[attr-defined]
                assert not result.is_error, result.text
            return snap

        def theirs() -> None:
            mcp.call("browser_snapshot", {})

        sides: dict[str, Callable[[], None]] = {"extension": ours(ext), "playwright": ours(pw), "mcp": theirs}
        print(f"{rounds} interleaved browser_snapshot calls per page and side (ms, median)\n")
        print(f"{'page':<24}{'extension':>11}{'playwright':>12}{'pw-mcp':>9}{'ext/pw':>9}{'ext/mcp':>9}")
        totals: dict[str, list[float]] = {name: [] for name in sides}
        for label, (ext_path, mcp_path, pw_path) in page_paths(SiteClient(site.base_url)).items():
            for session, path in ((ext, ext_path), (pw, pw_path)):
                navigated = session.call("browser_navigate", {"url": site.base_url + path})
                assert not navigated.is_error, navigated.text
            mcp.call("browser_navigate", {"url": site.base_url + mcp_path})
            samples: dict[str, list[float]] = {name: [] for name in sides}
            for _ in range(rounds):
                for name, snap in sides.items():
                    started = time.perf_counter()
                    snap()
                    samples[name].append(time.perf_counter() - started)
            for name in sides:
                totals[name] += samples[name]
            _row(label, samples)
        _row("all pages", totals)


def _row(label: str, samples: dict[str, list[float]]) -> None:
    e, p, m = (median_ms(samples[n]) for n in ("extension", "playwright", "mcp"))
    print(f"{label:<24}{e:>11.2f}{p:>12.2f}{m:>9.2f}{e / p:>8.2f}×{e / m:>8.2f}×")


def smoke_times(rounds: int) -> None:
    """Scripted smoke per backend, alternating; print wall time and summed completionMs."""
    order: list[BackendName] = []
    for n in range(rounds):
        order += ["playwright", "extension"] if n % 2 == 0 else ["extension", "playwright"]
    walls: dict[str, list[float]] = {"playwright": [], "extension": []}
    turns: dict[str, list[float]] = {"playwright": [], "extension": []}
    with tempfile.TemporaryDirectory(prefix="bench-extension-") as tmp:
        for n, backend in enumerate(order):
            started = time.perf_counter()
            results, _ = run_lane(
                plan(list(TASK_NAMES), [1], 1, [backend]), run_id=f"smoke{n}", runs_dir=Path(tmp),
                output=None, policy_kind="scripted", choice=ModelChoice(), timeout_ms=120000,
            )
            walls[backend].append(time.perf_counter() - started)
            runs = read_runs(results)
            ok = sum(r.success for r in runs)
            if ok != len(TASK_NAMES):
                print(f"warning: {backend} smoke {n}: {ok}/{len(runs)} succeeded")
            turns[backend].append(sum(r.timings.completion_ms for r in runs))
    print(f"\nscripted smoke, {len(TASK_NAMES)} tasks, {rounds} round(s) per backend (median)\n")
    print(f"{'backend':<12}{'wall s':>9}{'Σ completionMs':>16}")
    for backend in walls:
        print(f"{backend:<12}{statistics.median(walls[backend]):>9.2f}{statistics.median(turns[backend]):>16.0f}")
    wall_ratio = statistics.median(walls["extension"]) / statistics.median(walls["playwright"])
    turn_ratio = statistics.median(turns["extension"]) / statistics.median(turns["playwright"])
    print(f"extension/playwright: wall {wall_ratio:.2f}×, Σ completionMs {turn_ratio:.2f}×")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=30, help="snapshots per page and side")
    parser.add_argument("--smoke-rounds", type=int, default=2, help="scripted smokes per backend")
    parser.add_argument("--mcp-version", default="latest", help="@playwright/mcp version to install")
    args = parser.parse_args()
    chromium = find_chromium()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp, SiteServer() as site:
        tmp_dir = Path(tmp)
        mcp = mcp_in(tmp_dir, args.mcp_version, chromium)
        if mcp is None:
            return 1
        try:
            print(f"playwright-mcp: {mcp.start()}")
            snapshot_latency(site, mcp, args.rounds)
        finally:
            mcp.close()
    smoke_times(args.smoke_rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
