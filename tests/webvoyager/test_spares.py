"""Spare workers: started before their attempt, each one then makes exactly one attempt in its own Chromium, as a
worker started for the attempt would; a spare that is gone is never used, and none outlives the scheduler."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from farm.llm.model_config import LLMConfig
from farm.llm.stub import ModelStub, StubReply
from web_bench.webvoyager.agent import AgentSettings
from web_bench.webvoyager.model import AgentResult, WvTask
from web_bench.webvoyager.spares import SPARE_FLAG, Spares
from web_bench.webvoyager.standin import DEFAULT_STAND_IN
from web_bench.webvoyager.trace import read_trace
from web_bench.webvoyager.worker import run_in_child

KEY_ENV = "WV_SPARE_TEST_KEY"
RECIPE = "https://www.allrecipes.com/recipe/vegetarian-four-cheese-lasagna/"


def _task(n: int) -> WvTask:
    return WvTask(task_id=f"Allrecipes--{n}", site="Allrecipes", website="https://www.allrecipes.com/",
                  confirmed_task=f"Find a lasagna recipe ({n}).")


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelStub]:
    # Spares inherit this process's environment, as the workers they stand in for do.
    monkeypatch.setenv(KEY_ENV, "sk-spare-test")
    with ModelStub() as server:
        yield server


def _settings(stub: ModelStub) -> AgentSettings:
    llm = LLMConfig(provider="openai", model="stub-model", base_url=stub.base_url_openai, api_key_env=KEY_ENV,
                    timeout_s=30.0)
    return AgentSettings(llm=llm, timeout_ms=60_000, stand_in=str(DEFAULT_STAND_IN))


def _answer(text: str) -> list[StubReply]:
    return [StubReply(tool_calls=[("browser_navigate", {"url": RECIPE})]), StubReply(text=text)]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie has exited; only its parent's wait is missing.
    with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
        return fh.read().rsplit(")", 1)[1].split()[0] == "Z"


def test_each_spare_makes_one_attempt_as_a_started_worker_would(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([*_answer("4.7 stars, 312 reviews"), *_answer("4.8 stars, 90 reviews")])
    spares = Spares("openai", 2)
    try:
        first = spares.waiting[0]
        one = run_in_child(_task(0), 1, tmp_path / "a0", _settings(stub), cancel=threading.Event(), spares=spares)
        assert first.poll() == 0  # the spare made the attempt and exited
        two = run_in_child(_task(1), 1, tmp_path / "a1", _settings(stub), cancel=threading.Event(), spares=spares)
        assert spares.waiting == []  # two attempts wanted, two spares started, none left over
    finally:
        spares.close()
    assert (one.status, one.final_answer, one.steps) == ("completed", "4.7 stars, 312 reviews", 1)
    assert (two.status, two.final_answer) == ("completed", "4.8 stars, 90 reviews")
    assert one.duration_basis == two.duration_basis == "worker"
    for n, result in enumerate((one, two)):
        attempt_dir = tmp_path / f"a{n}"
        assert AgentResult.model_validate_json((attempt_dir / "result.json").read_bytes()) == result
        assert [e.kind for e in read_trace(attempt_dir / "trace.ndjson")][-1] == "run_end"
        assert (attempt_dir / "session.json").is_file() and (attempt_dir / "worker.log").is_file()


def test_a_spare_that_died_is_not_used_and_the_attempt_starts_its_own_worker(stub: ModelStub, tmp_path: Path) -> None:
    stub.script(_answer("4.7 stars"))
    spares = Spares("openai", 1)
    try:
        dead = spares.waiting[0]
        os.killpg(dead.pid, signal.SIGKILL)
        dead.wait()
        result = run_in_child(_task(0), 1, tmp_path / "a0", _settings(stub), cancel=threading.Event(), spares=spares)
        assert spares.waiting == []  # the one attempt wanted was made: no spare is started for nothing
    finally:
        spares.close()
    assert (result.status, result.final_answer) == ("completed", "4.7 stars")


def test_a_spare_with_no_attempt_exits_quietly_and_close_ends_the_waiting_ones(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "web_bench.webvoyager.worker", SPARE_FLAG, "openai"],
                          input=b"", capture_output=True, timeout=120, check=False)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    spares = Spares("openai", 3, keep=2)
    waiting = list(spares.waiting)
    assert len(waiting) == 2
    spares.close()
    assert all(p.returncode is not None for p in waiting)
    assert spares.hand_over(tmp_path) is None and spares.waiting == []  # closed: nothing starts again


def test_spares_end_by_themselves_when_the_scheduler_is_killed(tmp_path: Path) -> None:
    code = ("import json, sys, time; from web_bench.webvoyager.spares import Spares; "
            "s = Spares('openai', 2, keep=2); print(json.dumps([p.pid for p in s.waiting]), flush=True); "
            "time.sleep(600)")
    scheduler = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    assert scheduler.stdout is not None
    pids = json.loads(scheduler.stdout.readline())
    assert len(pids) == 2
    scheduler.kill()
    scheduler.wait()
    deadline = time.monotonic() + 60
    while not all(_gone(pid) for pid in pids):
        assert time.monotonic() < deadline, "a spare outlived its scheduler"
        time.sleep(0.1)


def test_an_interrupted_spare_records_an_interrupted_attempt(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([StubReply(tool_calls=[("browser_navigate", {"url": RECIPE})]), StubReply.slow(60.0)])
    cancel = threading.Event()
    trace = tmp_path / "a0" / "trace.ndjson"

    def interrupt_once_waiting() -> None:
        deadline = time.monotonic() + 60
        while not (trace.exists() and trace.read_text(encoding="utf-8").count('"model_request"') >= 2):
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        cancel.set()

    spares = Spares("openai", 1)
    watcher = threading.Thread(target=interrupt_once_waiting)
    watcher.start()
    try:
        result = run_in_child(_task(0), 1, tmp_path / "a0", _settings(stub), cancel=cancel, spares=spares)
    finally:
        watcher.join()
        spares.close()
    assert (result.status, result.error_kind, result.steps) == ("error", "interrupted", 1)
    assert [e.kind for e in read_trace(trace)][-1] == "run_end"
