"""`farm view` at scale: the run page of a 100 000-unit run, against a plain `os.listdir` of the runs directory.

A synthetic run (500 tasks × 10 phones × 20 repeats, written as `Record`s through `RunStore`, with its task set so
search covers goals) is served by the viewer's own app (FastAPI TestClient: routing, DuckDB, template, the whole
answer). Timed: the first run page (reads records.jsonl into the run's DuckDB index), then, warm, the run page, a
filtered and searched page, page 50, a search over every try, and beside them the run list (its rows come from
the same index) and a unit page (its record found through the index: `farm.view.unit_lookup`). Each warm figure is
the median of REPEATS answers. Ratios are against `os.listdir`
of the runs directory, measured in the same process, so they carry over between machines better than seconds do;
the stylesheet served through the same client shows how much of a page is the HTTP round trip itself.

    .venv/bin/python bench/view_pages.py [UNITS]
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
from farm.results.record import CheckResult, Record, RunMetrics, Tokens  # noqa: E402
from farm.results.store import RunStore  # noqa: E402
from farm.view.app import create_app  # noqa: E402

UNITS = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
TASKS, PHONES = 500, 10
REPEATS = 20
CATEGORIES = ("read/system", "read/content", "read/shopping", "write", "impossible", "barrier", "web")
RUN = "bench-view"


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
        list_first = _once(_get(client, "/", RUN))
        list_warm = _median(_get(client, "/", RUN), 5)
        unit_first = _once(_get(client, f"{base}units/task-0000.SER00.a1", "task-0000"))
        unit_warm = _median(_get(client, f"{base}units/task-0000.SER00.a1", "task-0000"), 5)

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
        line("run list, first (the index already built)", list_first)
        line("run list, warm", list_warm)
        line("unit page, first (one scan of records.jsonl)", unit_first)
        line("unit page, warm", unit_warm)
        print(f"  ratios: page 50 / warm page {page50 / warm:.2f}, filtered / warm page {filtered / warm:.2f},"
              f" first / warm page {first / warm:.1f}")


if __name__ == "__main__":
    main()
