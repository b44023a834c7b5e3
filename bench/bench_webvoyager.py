"""WebVoyager lane: harness overhead per task, and memory per concurrent task.

1. Overhead: the whole lane on the stand-in sites with a zero-latency loopback stub as agent and judge
   (worker process, its own Chromium and context, the agent's two model rounds, trace/session/result files,
   the final screenshot, the judge, the revision chain and the metrics rewrite) against the bare Playwright
   work of one task in its own process (start the driver, launch Chromium, open a context and a page on the
   same stand-in page, close). Rounds
   alternate the two sides so machine load hits both alike; the figure is the ratio of the medians per task.
2. Memory: the proportional set size (PSS, so Chromium's shared pages are not counted once per process) of
   the scheduler and every process under it, sampled while 8 tasks run with --concurrency 8; peak ÷ 8.

    .venv/bin/python bench/bench_webvoyager.py [--tasks 6] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from farm.llm.stub import ModelStub  # noqa: E402
from tests.helpers.wv_lane import SIX, STAND_IN, Scenario  # noqa: E402
from web_bench.browser import driver  # noqa: E402
from web_bench.browser.chromium import CHROMIUM_ARGS, find_chromium  # noqa: E402
from web_bench.webvoyager.data_files import copy_from  # noqa: E402
from web_bench.webvoyager.lane import run_webvoyager  # noqa: E402
from web_bench.webvoyager.options import RunOptions  # noqa: E402
from web_bench.webvoyager.standin import StandIn  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "webvoyager"
EIGHT = [*SIX, "Allrecipes--2", "Amazon--2"]


def bare_task(chromium: str, stand_in: StandIn, url: str) -> float:
    """Seconds for the bare Playwright work of one task in a fresh process: start the driver, launch Chromium,
    open a context and a page on the stand-in, close."""
    started = time.perf_counter()
    playwright = driver.acquire()
    try:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context()
        stand_in.attach(context)
        page = context.new_page()
        page.goto(url)
        context.close()
        browser.close()
    finally:
        driver.release()
    return time.perf_counter() - started


def lane_run(runs: Path, data: Path, run_id: str, ids: list[str], concurrency: int) -> float:
    """Seconds for one lane run of `ids`."""
    opts = RunOptions(run_id=run_id, runs_dir=runs, data_dir=data, ids=ids, headed=False, stand_in=STAND_IN,
                      timeout_ms=60_000, max_rounds=6, concurrency=concurrency, preflight_timeout_ms=10_000)
    started = time.perf_counter()
    outcome = run_webvoyager(opts)
    elapsed = time.perf_counter() - started
    if outcome.exit_status != 0:
        raise SystemExit(f"lane run {run_id} ended with status {outcome.exit_status}: {outcome.lines}")
    return elapsed


def _pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def peak_pss_mib(work: threading.Thread) -> tuple[float, float]:
    """(peak PSS of this process and its descendants, this process alone before the work) in MiB."""
    me = os.getpid()
    base = _pss_kib(me) / 1024
    peak = 0.0
    work.start()
    while work.is_alive():
        peak = max(peak, sum(_pss_kib(pid) for pid in _tree(me)) / 1024)
        time.sleep(0.2)
    work.join()
    return peak, base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=6, help="tasks per lane round (≤ 6)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of each side")
    args = parser.parse_args()
    if not SHARED.is_dir():
        raise SystemExit(f"{SHARED} is absent: the WebVoyager data lives in ../shared/data")
    ids = SIX[: args.tasks]
    scenario = Scenario()
    chromium = find_chromium()
    stand_in = StandIn(STAND_IN)
    with tempfile.TemporaryDirectory() as tmp, ModelStub(responder=scenario.respond) as stub:
        data = Path(tmp) / "data"
        copy_from(SHARED, data)
        os.environ.update({"EVAL_PROVIDER": "openai", "EVAL_MODEL": "stub-model", "EVAL_BASE_URL": stub.base_url_openai,
                           "EVAL_API_KEY": "bench-key",
                           "EVAL_PRICING_JSON": '{"input": 2, "output": 8, "cache_read": 0.5, "cache_write": 3}'})
        bare: list[float] = []
        lane: list[float] = []
        for n in range(args.rounds):
            bare += [bare_task(chromium, stand_in, "https://www.allrecipes.com/") for _ in ids]
            lane.append(lane_run(Path(tmp) / "runs", data, f"bench-{n}", list(ids), 1) / len(ids))
        bare_ms, lane_ms = statistics.median(bare) * 1000, statistics.median(lane) * 1000
        print(f"overhead per task ({len(ids)} tasks × {args.rounds} rounds, concurrency 1):")
        print(f"  bare Playwright: driver, launch, context, page, close {bare_ms:5.0f} ms")
        print(f"  whole lane task (zero-latency agent and judge)   {lane_ms:8.0f} ms")
        print(f"  ratio lane ÷ bare                                 {lane_ms / bare_ms:8.2f}×")
        print(f"  harness overhead per task                         {lane_ms - bare_ms:8.0f} ms")
        work = threading.Thread(target=lane_run, args=(Path(tmp) / "runs", data, "bench-mem", EIGHT, 8))
        peak, base = peak_pss_mib(work)
        print("memory at --concurrency 8 (8 tasks):")
        print(f"  scheduler before the run (PSS)                    {base:8.0f} MiB")
        print(f"  peak PSS of the scheduler and its processes       {peak:8.0f} MiB")
        print(f"  per concurrent task ((peak − scheduler) ÷ 8)      {(peak - base) / 8:8.0f} MiB")


if __name__ == "__main__":
    main()
