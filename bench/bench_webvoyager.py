"""WebVoyager lane: harness overhead per task, and memory per concurrent task.

1. Overhead: the whole lane on the stand-in sites with a zero-latency loopback stub as agent and judge
   (worker process, its own Chromium and context, the agent's two model rounds, trace/session/result files,
   the final screenshot, the judge, the revision chain and the metrics rewrite) against the bare Playwright
   work of one task in its own process (start the driver, launch Chromium, open a context and a page on the
   same stand-in page, close). Rounds
   alternate the two sides so machine load hits both alike; the figure is the ratio of the medians per task.
2. Memory: the proportional set size (PSS, so Chromium's shared pages are not counted once per process) of
   the scheduler and every process under it, sampled while 8 tasks run with --concurrency 8; peak ÷ 8, and the
   peak split by kind of process (Chromium, Playwright drivers, workers, the scheduler).
3. The split of a lane task (median ms per task): the parent's side timed around the worker, the judge and
   the table rewrites; the worker's side read from the `at` stamps of its trace.ndjson —
     worker start     hand-over to the worker process → its `run_start` (interpreter, imports, worker.json)
     browser launch   `run_start` → the first model request (Playwright driver, Chromium, context, page)
     agent loop       first model request → the last event before the screenshot (model rounds, tools)
     screenshot       → the `screenshot` event (final page capture, PNG written)
     browser close    → `run_end` (context and Chromium closed, session.json)
     worker exit      `run_end` → the parent sees the worker gone (result.json, interpreter exit)
     judge            the parent's judge request and its log
     tables           the revision chain and the metrics rewrite, after the agent and after the judge
   and the bare side's own split (driver, launch, context and page, close).

    .venv/bin/python bench/bench_webvoyager.py [--tasks 6] [--rounds 2]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goals import goal  # noqa: E402

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
GOAL_RATIO = 1.2
GOAL_MIB = 250.0
PHASES = ("worker start", "browser launch", "agent loop", "screenshot", "browser close", "worker exit", "judge",
          "tables")


def bare_task(chromium: str, stand_in: StandIn, url: str, split: dict[str, list[float]]) -> float:
    """Seconds for the bare Playwright work of one task: start the driver, launch Chromium, open a context and a
    page on the stand-in, close; each step's seconds added to `split`."""
    started = time.perf_counter()
    mark = started

    def step(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        split[name].append(now - mark)
        mark = now

    playwright = driver.acquire()
    step("driver")
    try:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        step("launch")
        context = browser.new_context()
        stand_in.attach(context)
        page = context.new_page()
        page.goto(url)
        step("context, page")
        context.close()
        browser.close()
    finally:
        driver.release()
    step("close")
    return time.perf_counter() - started


def _stamp(text: str) -> float:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC).timestamp()


def _worker_phases(trace: Path, handed: float, returned: float) -> dict[str, float]:
    at = [(e["kind"], _stamp(e["at"])) for e in map(json.loads, trace.read_text(encoding="utf-8").splitlines())]
    start = next(t for k, t in at if k == "run_start")
    first = next((t for k, t in at if k == "model_request"), start)
    shot = next(t for k, t in at if k == "screenshot")
    end = next(t for k, t in at if k == "run_end")
    before_shot = max((t for k, t in at if t <= shot and k != "screenshot"), default=first)
    return {"worker start": start - handed, "browser launch": first - start, "agent loop": before_shot - first,
            "screenshot": shot - before_shot, "browser close": end - shot, "worker exit": returned - end}


@contextmanager
def lane_split(into: dict[str, list[float]]) -> Iterator[None]:
    """Time the phases of every lane task run inside the block (the lane's functions are wrapped, then restored);
    each task's seconds per phase are appended to `into`."""
    from web_bench.webvoyager import execute, worker

    saved = (worker.run_in_child, execute.judge_one, execute.Dispatcher._commit)
    per_task: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))

    def run_in_child(task: Any, attempt: int, attempt_dir: Path, *args: Any, **kw: Any) -> Any:
        handed = time.time()
        result = saved[0](task, attempt, attempt_dir, *args, **kw)
        per_task[task.task_id].update(_worker_phases(attempt_dir / "trace.ndjson", handed, time.time()))
        return result

    def timed(task_id: str, name: str, work: Callable[[], Any]) -> Any:
        began = time.perf_counter()
        try:
            return work()
        finally:
            per_task[task_id][name] += time.perf_counter() - began

    def judge_one(prepared: Any, task: Any, *args: Any, **kw: Any) -> Any:
        return timed(task.task_id, "judge", lambda: saved[1](prepared, task, *args, **kw))

    def commit(dispatcher: Any, view: Any, reason: Any) -> None:
        timed(view.task_id, "tables", lambda: saved[2](dispatcher, view, reason))

    worker.run_in_child, execute.judge_one = run_in_child, judge_one  # type: ignore[assignment]
    execute.Dispatcher._commit = commit  # type: ignore[method-assign]
    try:
        yield
    finally:
        worker.run_in_child, execute.judge_one, execute.Dispatcher._commit = saved  # type: ignore[method-assign]
        for phases in per_task.values():
            for name in PHASES:
                into[name].append(phases.get(name, 0.0))


def split_lines(split: dict[str, list[float]], names: tuple[str, ...], whole_ms: float, rest: str) -> list[str]:
    """One line per phase (median ms a task), then what the phases leave of `whole_ms`."""
    out, total = [], 0.0
    for name in names:
        ms = statistics.median(split[name]) * 1000 if split[name] else 0.0
        total += ms
        out.append(f"    {name:<16} {ms:7.0f} ms")
    out.append(f"    {'rest':<16} {whole_ms - total:7.0f} ms  ({rest})")
    return out


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


def _kind(pid: int, me: int) -> str:
    """Which part of the lane a process is: the scheduler, a worker, a Playwright driver, or Chromium."""
    if pid == me:
        return "scheduler"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "other"
    if b"web_bench.webvoyager.worker" in argv:
        return "workers (python)"
    name = argv[0].rsplit(b"/", 1)[-1]
    if name == b"node":
        return "drivers (node)"
    return "chromium" if b"chrom" in argv[0] or any(a.startswith(b"--type=") for a in argv) else "other"


def peak_pss_mib(work: threading.Thread) -> tuple[float, float, dict[str, float]]:
    """(peak PSS of this process and its descendants, this process alone before the work, the peak's split by
    kind of process) in MiB."""
    me = os.getpid()
    base = _pss_kib(me) / 1024
    peak, split = 0.0, {}
    work.start()
    while work.is_alive():
        now: dict[str, float] = defaultdict(float)
        for pid in _tree(me):
            now[_kind(pid, me)] += _pss_kib(pid) / 1024
        if sum(now.values()) > peak:
            peak, split = sum(now.values()), dict(now)
        time.sleep(0.2)
    work.join()
    return peak, base, split


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
        bare_split: dict[str, list[float]] = defaultdict(list)
        split: dict[str, list[float]] = defaultdict(list)
        for n in range(args.rounds):
            bare += [bare_task(chromium, stand_in, "https://www.allrecipes.com/", bare_split) for _ in ids]
            with lane_split(split):
                lane.append(lane_run(Path(tmp) / "runs", data, f"bench-{n}", list(ids), 1) / len(ids))
        bare_ms, lane_ms = statistics.median(bare) * 1000, statistics.median(lane) * 1000
        ratio = lane_ms / bare_ms
        print(f"overhead per task ({len(ids)} tasks × {args.rounds} rounds, concurrency 1):")
        print(f"  bare Playwright: driver, launch, context, page, close {bare_ms:5.0f} ms")
        print(*split_lines(bare_split, ("driver", "launch", "context, page", "close"), bare_ms, "timer"), sep="\n")
        print(f"  whole lane task (zero-latency agent and judge)   {lane_ms:8.0f} ms")
        print(*split_lines(split, PHASES, lane_ms, "preflight, run start and finish, shared by the tasks"), sep="\n")
        print(f"  ratio lane ÷ bare                                 {ratio:8.2f}×")
        print(f"  harness overhead per task                         {lane_ms - bare_ms:8.0f} ms")
        work = threading.Thread(target=lane_run, args=(Path(tmp) / "runs", data, "bench-mem", EIGHT, 8))
        peak, base, kinds = peak_pss_mib(work)
        print("memory at --concurrency 8 (8 tasks):")
        print(f"  scheduler before the run (PSS)                    {base:8.0f} MiB")
        print(f"  peak PSS of the scheduler and its processes       {peak:8.0f} MiB")
        for kind, mib in sorted(kinds.items(), key=lambda kv: -kv[1]):
            print(f"    {kind:<18} {mib:7.0f} MiB")
        per_task = (peak - base) / 8
        print(f"  per concurrent task ((peak − scheduler) ÷ 8)      {per_task:8.0f} MiB")
    goal("WebVoyager lane task ÷ bare Playwright task", f"{ratio:.2f}× ({lane_ms:.0f} vs {bare_ms:.0f} ms)",
         f"≤ {GOAL_RATIO}×", ratio <= GOAL_RATIO, f"{ratio:.2f}× > {GOAL_RATIO}×")
    goal("WebVoyager memory per concurrent task (PSS)", f"{per_task:.0f} MiB", f"≤ {GOAL_MIB:.0f} MiB",
         per_task <= GOAL_MIB, f"{per_task:.0f} MiB > {GOAL_MIB:.0f} MiB")


if __name__ == "__main__":
    main()
