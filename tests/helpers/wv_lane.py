"""End-to-end WebVoyager runs for tests: verified data in a temporary directory, the stand-in sites, and the
loopback model stub as both agent and judge (the agent runs in worker processes, which inherit the EVAL_*
variables from this process)."""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from farm.llm.stub import ModelStub, StubReply, tool_results, user_texts
from tests.helpers.shared_data import shared_data
from web_bench.webvoyager.data_files import copy_from
from web_bench.webvoyager.lane import RunOutcome, run_webvoyager
from web_bench.webvoyager.options import RunOptions

REPO = Path(__file__).resolve().parents[2]
STAND_IN = REPO / "fixtures" / "webvoyager"
SIX = ["Allrecipes--0", "Allrecipes--1", "Amazon--0", "Amazon--1", "Apple--0", "Apple--1"]
KEY = "wv-test-key"
_START = re.compile(r"Start at (\S+)")
_SITE_WORDS = ("Allrecipes", "Amazon", "Apple")


@pytest.fixture(scope="session")
def wv_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The verified WebVoyager data files, copied from ../shared/data/webvoyager once per session."""
    dest = tmp_path_factory.mktemp("wv-data")
    copy_from(shared_data("webvoyager"), dest)
    return dest


def _is_judge(body: dict[str, Any]) -> bool:
    return not body.get("tools")


def _judged_line(body: dict[str, Any]) -> dict[str, Any]:
    text = "\n".join(user_texts(body))
    part = text.rsplit("results.ndjson", 1)[1]
    line = next(ln for ln in part.splitlines() if ln.strip().startswith("{"))
    parsed: dict[str, Any] = json.loads(line)
    return parsed


@dataclass
class Scenario:
    """What the stub answers: the agent opens the start page and reports the site name it saw; the judge
    passes an answer that names a site. `agent_override(task_start_url, body)` may replace an agent reply."""

    agent_override: Callable[[str, dict[str, Any]], StubReply | None] = lambda url, body: None
    judge_override: Callable[[dict[str, Any]], StubReply | None] = lambda body: None
    preflight_reply: StubReply | None = None
    """What the preflight request gets (default: a plain "ok")."""
    preflights: int = 0
    agent_requests: list[str] = field(default_factory=list)
    judged: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def respond(self, body: dict[str, Any]) -> StubReply:
        """The stub's responder."""
        if not body.get("tools") and "Reply with the single word" in "\n".join(user_texts(body)):
            with self.lock:
                self.preflights += 1
            return self.preflight_reply or StubReply(text="ok")
        if _is_judge(body):
            line = _judged_line(body)
            with self.lock:
                self.judged.append(line["task_id"])
            override = self.judge_override(body)
            if override is not None:
                return override
            answer = line.get("final_answer") or ""
            verdict = any(word in answer for word in _SITE_WORDS)
            return StubReply(text=json.dumps([{"task_id": line["task_id"], "pass": verdict,
                                               "reason": "names the site" if verdict else "no site named"}]))
        match = _START.search("\n".join(user_texts(body)))
        url = match.group(1) if match else ""
        with self.lock:
            self.agent_requests.append(url)
        override = self.agent_override(url, body)
        if override is not None:
            return override
        results = tool_results(body)
        if not results:
            return StubReply(tool_calls=[("browser_navigate", {"url": url})])
        seen = next((w for w in _SITE_WORDS if w in results[-1]), "nothing")
        return StubReply(text=f"The page is the {seen} home page.")


@contextmanager
def stub_models(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModelStub, Scenario]]:
    """The stub serving agent and judge, with the EVAL_* variables pointing at it (and no other model set)."""
    scenario = Scenario()
    with ModelStub(responder=scenario.respond) as stub:
        for name in [n for n in os.environ if n.startswith(("EVAL_", "FARM_LLM_"))]:
            monkeypatch.delenv(name)
        monkeypatch.setenv("EVAL_PROVIDER", "openai")
        monkeypatch.setenv("EVAL_MODEL", "stub-model")
        monkeypatch.setenv("EVAL_BASE_URL", stub.base_url_openai)
        monkeypatch.setenv("EVAL_API_KEY", KEY)
        monkeypatch.setenv("EVAL_PRICING_JSON", '{"input": 2, "output": 8, "cache_read": 0.5, "cache_write": 3}')
        yield stub, scenario


@pytest.fixture
def wv_stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModelStub, Scenario]]:
    """`stub_models` for one test."""
    with stub_models(monkeypatch) as pair:
        yield pair


def options(tmp_path: Path, data: Path, **fields: Any) -> RunOptions:
    """Run options for a test: headless, the stand-in sites, short limits, three tasks at once (tests whose
    assertions need the dispatch order pass `concurrency=1`)."""
    base: dict[str, Any] = {"run_id": "wv-t", "runs_dir": tmp_path / "runs", "data_dir": data, "ids": list(SIX),
                            "headed": False, "stand_in": STAND_IN, "timeout_ms": 60_000, "max_rounds": 6,
                            "preflight_timeout_ms": 10_000, "concurrency": 3}
    base.update(fields)
    return RunOptions.model_validate(base)


def run(tmp_path: Path, data: Path, **fields: Any) -> RunOutcome:
    """One `farm webvoyager run` as a library call."""
    return run_webvoyager(options(tmp_path, data, **fields))
