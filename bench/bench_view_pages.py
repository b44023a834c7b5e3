"""`farm view` at scale: the run page of a 100 000-unit run, against a plain `os.listdir` of the runs directory;
and the nights of a label (14 nights of 1 000 units) as their matrix and two of them side by side.

A synthetic run (500 tasks × 10 phones × 20 repeats, written as `Record`s through `RunStore`, with its task set so
search covers goals) is served by the viewer's own app (FastAPI TestClient: routing, DuckDB, template, the whole
answer). Timed: the first run page (reads records.jsonl into the run's DuckDB index), then, warm, the run page (its
headline, the first page of its task × phone grid, its failures grouped and its first 100 units), a filtered and
searched page, page 50, a search over every try, another page of the grid, the failures grouped by category, one
grid cell's units, and beside them the run list (its rows come from the same index) and a unit page (its record
found through the index: `farm.view.unit_lookup`). Each warm figure is the median of REPEATS answers. Ratios are
against `os.listdir` of the runs directory, measured in the same process, so they carry over between machines
better than seconds do; the stylesheet served through the same client shows how much of a page is the HTTP round
trip itself.

The nights (their own runs directory: NIGHTS runs labelled `bench-nights`, NIGHT_TASKS tasks on NIGHT_PHONES
phones each, every 9th unit of a night failing in turn) are timed as the nights page, first (reads every night:
`farm history`'s own reading, timed apart, then each night's unit keys and phone tallies) and warm, two nights'
units paired side by side, and one unit's trajectory (25 steps) beside another's.

Goal (issue 28): each page answers well under a second, warm: ≤ 1 s.

    .venv/bin/python bench/bench_view_pages.py [UNITS]
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastapi.testclient import TestClient  # noqa: E402

from farm import manifest as mf  # noqa: E402
from farm.report.history_data import load_history  # noqa: E402
from farm.results.record import CheckResult, Record, RunMetrics, Tokens  # noqa: E402
from farm.results.store import RunStore  # noqa: E402
from farm.view.app import create_app  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from goals import goal  # noqa: E402

UNITS = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
TASKS, PHONES = 500, 10
REPEATS = 20
CATEGORIES = ("read/system", "read/content", "read/shopping", "write", "impossible", "barrier", "web")
RUN = "bench-view"
NIGHTS, NIGHT_TASKS, NIGHT_PHONES, NIGHT_STEPS = 14, 100, 10, 25
GOAL_S = 1.0
"""Warm answer of each page, seconds."""


def _records(n: int) -> Iterator[Record]:
    """Unit i: task i % TASKS on phone (i // TASKS) % PHONES, repeat i // (TASKS × PHONES) + 1; every 5th fails
    (its answer_regex check says what it looked for), every 13th is an infrastructure error, every 17th skipped."""
    for i in range(n):
        task, phone, repeat = i % TASKS, (i // TASKS) % PHONES, i // (TASKS * PHONES) + 1
        outcome = "skipped" if i % 17 == 3 else "error" if i % 13 == 4 else "failed" if i % 5 == 0 else "succeeded"
        ran = outcome in ("succeeded", "failed")
        yield Record(
            run=RUN, lane="android", device=f"SER{phone:02d}", task_id=f"task-{task:04d}", repeat=repeat,
            category=CATEGORIES[task % len(CATEGORIES)], partition="tune", expect="succeeded",
            outcome=outcome,
            end_reason="answer" if ran else "error" if outcome == "error" else None, passed=outcome == "succeeded",
            checks=[CheckResult(type="answer_regex", passed=outcome == "succeeded",
                                detail=f"looked for {task * 7}; answer said {task * 7 + (outcome == 'failed')}")]
            if ran else [],
            answer=f"The value is {task * 7 + (outcome == 'failed')}" if ran else None,
            reasons=[] if outcome == "succeeded" else [f"{outcome} on unit {i}"],
            metrics=RunMetrics(total_ms=1000.0 + i % 5000, model_ms=600.0), steps=5,
            tokens=Tokens(input_new=2000 + i % 300, cache_read=500, output=80), cost_usd=0.002,
            execution="simulated", executor="host", split="tune")


def _build(runs: Path, tasks: Path, n: int) -> Path:
    entries = []
    for t in range(TASKS):
        path = tasks / CATEGORIES[t % len(CATEGORIES)] / f"task-{t:04d}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps({"id": f"task-{t:04d}", "goal": f"Find item {t} in the catalogue"}).encode()
        path.write_bytes(data)
        entries.append(mf.TaskEntry(id=f"task-{t:04d}", sha256=hashlib.sha256(data).hexdigest()))
    manifest = mf.Manifest(run_id=RUN, created_at=mf.utc_now(), label="bench", status="finished", tasks=entries,
                           phones=[mf.PhoneEntry(serial=f"SER{p:02d}", model="Pixel 7") for p in range(PHONES)],
                           lanes=[mf.LaneEntry(lane="android", detail={"executor": "host", "split": "tune"})])
    store = RunStore.create(runs, manifest)
    store.append(_records(n))
    return store.run_dir


def _night_records(night: int) -> Iterator[Record]:
    for t in range(NIGHT_TASKS):
        for p in range(NIGHT_PHONES):
            failed = (t * NIGHT_PHONES + p + night) % 9 == 0
            yield Record(
                run=f"night-{night:02d}", lane="android", device=f"SER{p:02d}", task_id=f"task-{t:04d}",
                category=CATEGORIES[t % len(CATEGORIES)], partition="tune", expect="succeeded",
                outcome="failed" if failed else "succeeded", end_reason="answer", passed=not failed,
                checks=[CheckResult(type="answer_regex", passed=not failed, detail=f"looked for {t}")],
                answer=f"The value is {t}", reasons=["answer did not match"] if failed else [],
                evidence=f"android/SER{p:02d}/task-{t:04d}/run", execution="simulated", executor="host",
                split="tune")


def _build_nights(runs: Path) -> None:
    """NIGHTS runs labelled `bench-nights`; task-0000 on SER00 keeps a run record of NIGHT_STEPS steps."""
    for night in range(NIGHTS):
        run = f"night-{night:02d}"
        manifest = mf.Manifest(run_id=run, created_at=f"2026-11-{night + 1:02d}T03:00:00Z", label="bench-nights",
                               status="finished",
                               phones=[mf.PhoneEntry(serial=f"SER{p:02d}", model="Pixel 7",
                                                     adb_server=f"10.0.0.{p % 3}:5037")
                                       for p in range(NIGHT_PHONES)])
        store = RunStore.create(runs, manifest)
        store.append(_night_records(night))
        folder = store.run_dir / "android" / "SER00" / "task-0000" / "run"
        folder.mkdir(parents=True)
        steps = [{"step": n, "observation": {"text": f"[1] Button \"item {n}\"", "package": "com.shop"},
                  "action": {"tool": "tap", "args": {"x": 100 + n + (night if n > 20 else 0), "y": 200}},
                  "result": {"ok": True, "text": "tapped"}, "timings": {"modelMs": 800}} for n in range(NIGHT_STEPS)]
        (folder / "steps.jsonl").write_text("\n".join(json.dumps(s) for s in steps) + "\n", encoding="utf-8")


def _once(call: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def _median(call: Callable[[], object], times: int = REPEATS) -> float:
    return statistics.median(_once(call) for _ in range(times))


def _get(client: TestClient, url: str, must: str) -> Callable[[], object]:
    def call() -> object:
        answer = client.get(url)
        assert answer.status_code == 200 and must in answer.text, (url, answer.status_code)
        return answer
    return call


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        runs, tasks = Path(tmp) / "runs", Path(tmp) / "tasks"
        t0 = time.perf_counter()
        run_dir = _build(runs, tasks, UNITS)
        made = time.perf_counter() - t0
        size = (run_dir / "records.jsonl").stat().st_size / 1e6
        client = TestClient(create_app(runs, tasks_dir=tasks), base_url="http://127.0.0.1")
        base = f"/runs/{RUN}/"
        listdir = _median(lambda: os.listdir(runs), 200)
        static = _median(_get(client, "/static/viewer.css", "farm view"))
        first = _once(_get(client, base, "Units 1–100 of"))
        warm = _median(_get(client, base, "Units 1–100 of"))
        filtered_url = f"{base}?verdict=fail&category=write&q=catalogue+looked"
        filtered = _median(_get(client, filtered_url, "matching"))
        page50 = _median(_get(client, f"{base}?page=50", "Units 4901–5000 of"))
        searched = _median(_get(client, f"{base}?tries=all&q=item+123+catalogue", "matching"))
        # The page's task × phone grid and grouped failures: another grid page (tasks ranked by failures over the
        # whole run), failures grouped another way, and one cell's units (a task on a phone: REPEATS units).
        grid_page = _median(_get(client, f"{base}?gpage=5", "grid page 5 of"))
        grouped = _median(_get(client, f"{base}?group=category", "Failures by category"))
        cell_url = f"{base}?task=task-0001&phone=Pixel+7+%C2%B7+SER03#units"
        cell = _median(_get(client, cell_url, f"of {UNITS // (TASKS * PHONES)} matching"))
        list_first = _once(_get(client, "/", RUN))
        list_warm = _median(_get(client, "/", RUN), 5)
        unit_first = _once(_get(client, f"{base}units/task-0000.SER00.a1", "task-0000"))
        unit_warm = _median(_get(client, f"{base}units/task-0000.SER00.a1", "task-0000"), 5)
        paired_url = f"/side?a={RUN}&b={RUN}&changed=0"
        paired_first = _once(_get(client, paired_url, "pairs"))
        paired_warm = _median(_get(client, paired_url, "pairs"), 3)

        def line(what: str, seconds: float) -> None:
            print(f"  {what:<52} {seconds * 1000:10.2f} ms   {seconds / listdir:12,.0f} × listdir")

        print(f"run of {UNITS:,} units ({size:.0f} MB records.jsonl, written through RunStore in {made:.1f} s)")
        print(f"  {'os.listdir of the runs directory (median of 200)':<52} {listdir * 1000:10.4f} ms")
        line("the stylesheet through the same client (HTTP floor)", static)
        line("run page, first (builds the DuckDB index)", first)
        line("run page, warm", warm)
        line("filtered page (fail · write · 2 words searched)", filtered)
        line("page 50 (units 4 901–5 000)", page50)
        line("search over every try (3 words)", searched)
        line("grid page 5 (tasks 201–250 × 10 phones), warm", grid_page)
        line("failures grouped by category, warm", grouped)
        line("one grid cell's units (a task on a phone), warm", cell)
        line("run list, first (the index already built)", list_first)
        line("run list, warm", list_warm)
        line("unit page, first (one scan of records.jsonl)", unit_first)
        line("unit page, warm", unit_warm)
        line("every unit paired with a run's (side-by-side list), first", paired_first)
        line("every unit paired with a run's (side-by-side list), warm", paired_warm)
        print(f"  ratios: page 50 / warm page {page50 / warm:.2f}, filtered / warm page {filtered / warm:.2f},"
              f" first / warm page {first / warm:.1f}")

        nights_dir = Path(tmp) / "nights"
        _build_nights(nights_dir)
        nights = TestClient(create_app(nights_dir), base_url="http://127.0.0.1")
        matrix = "/nights?label=bench-nights"
        nights_first = _once(_get(nights, matrix, "Tasks × nights"))
        history_read = _once(lambda: load_history(nights_dir, label="bench-nights"))
        nights_warm = _median(_get(nights, matrix, "Tasks × nights"), 5)
        pairs_url = "/side?a=night-12&b=night-13"
        pairs_first = _once(_get(nights, pairs_url, "passed in A only"))
        pairs_warm = _median(_get(nights, pairs_url, "passed in A only"), 5)
        side_url = "/side?a=night-12&ua=task-0000.SER00.a1&b=night-13&ub=task-0000.SER00.a1"
        side_warm = _median(_get(nights, side_url, "They part at"), 5)
        print(f"{NIGHTS} nights of {NIGHT_TASKS * NIGHT_PHONES:,} units (label bench-nights)")
        line("nights page, first (reads every night)", nights_first)
        line("  of which farm history's own reading (load_history)", history_read)
        line("nights page, warm", nights_warm)
        line("two nights' units paired, first (builds 2 indexes)", pairs_first)
        line("two nights' units paired, warm", pairs_warm)
        line(f"two units side by side ({NIGHT_STEPS} steps each), warm", side_warm)

        def target(measure: str, seconds: float) -> None:
            figure = f"{seconds * 1000:,.0f} ms ({seconds / listdir:,.0f}× listdir)"
            goal(measure, figure, f"≤ {GOAL_S:g} s warm", seconds <= GOAL_S,
                 "" if seconds <= GOAL_S else f"{seconds:.2f} s > {GOAL_S:g} s")

        target(f"view: run page of {UNITS:,} units", warm)
        target(f"view: filtered and searched page of {UNITS:,} units", filtered)
        target(f"view: task × phone grid page of {UNITS:,} units", grid_page)
        target(f"view: failures grouped, {UNITS:,} units", grouped)
        target(f"view: a grid cell's units in {UNITS:,}", cell)
        target(f"view: unit page in a run of {UNITS:,} units", unit_warm)
        target(f"view: {UNITS:,} units paired for side by side", paired_warm)
        target(f"view: nights page ({NIGHTS} nights)", nights_warm)
        target("view: two units side by side", side_warm)


if __name__ == "__main__":
    main()
