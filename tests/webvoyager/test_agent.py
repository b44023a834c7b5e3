"""One WebVoyager attempt end to end: real headless Chromium on the stand-in sites, the loopback model stub as
the agent's model with scripted tool calls, and the attempt's files on disk."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.llm.client import ModelCallError, make_client
from farm.llm.model_config import LLMConfig
from farm.llm.stub import ModelStub, StubReply
from farm.llm.types import Attempt
from web_bench.webvoyager.agent import AgentSettings, run_attempt
from web_bench.webvoyager.attempt import model_error_kind
from web_bench.webvoyager.model import AgentResult, WvTask
from web_bench.webvoyager.standin import DEFAULT_STAND_IN
from web_bench.webvoyager.trace import (
    GuardEvent,
    ModelRetry,
    RunEnd,
    RunStart,
    ToolResultEvent,
    TraceWriter,
    browser_observations,
    read_session,
    read_trace,
)
from web_bench.webvoyager.worker import write_worker_input

KEY = "sk-test-0123456789-secret"
RECIPE = "https://www.allrecipes.com/recipe/vegetarian-four-cheese-lasagna/"
TASK = WvTask(task_id="Allrecipes--0", site="Allrecipes", website="https://www.allrecipes.com/",
              confirmed_task="Provide a recipe for vegetarian lasagna with more than 100 reviews and a rating of "
                             "at least 4.5 stars suitable for 6 people.")


@pytest.fixture
def stub() -> Iterator[ModelStub]:
    with ModelStub() as server:
        yield server


def _llm(stub: ModelStub, **overrides: object) -> LLMConfig:
    # Small backoff so retry tests take milliseconds; the retry count is the seed's.
    fields: dict[str, object] = {"provider": "openai", "model": "stub-model", "base_url": stub.base_url_openai,
                                 "api_key_env": "WV_TEST_KEY", "max_retries": 5, "backoff_initial_s": 0.01,
                                 "backoff_max_s": 0.02, "timeout_s": 30.0}
    fields.update(overrides)
    return LLMConfig.model_validate(fields)


def _settings(stub: ModelStub, **overrides: object) -> AgentSettings:
    fields: dict[str, object] = {"llm": _llm(stub), "timeout_ms": 60_000, "stand_in": str(DEFAULT_STAND_IN)}
    fields.update(overrides)
    return AgentSettings.model_validate(fields)


def _run(stub: ModelStub, tmp_path: Path, settings: AgentSettings | None = None) -> AgentResult:
    settings = settings or _settings(stub)
    client = make_client(settings.llm, environ={"WV_TEST_KEY": KEY})
    try:
        return run_attempt(TASK, 1, tmp_path / "Allrecipes--0", settings, client=client)
    finally:
        client.close()


def _nav(url: str, text: str | None = None) -> StubReply:
    return StubReply(text=text, tool_calls=[("browser_navigate", {"url": url})])


def test_an_answered_task_completes_with_every_file(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([_nav(RECIPE), StubReply(tool_calls=[("browser_snapshot", {})]),
                 StubReply(text="Vegetarian Four Cheese Lasagna: 4.7 stars, 312 reviews, serves 6.")])
    result = _run(stub, tmp_path)
    attempt_dir = tmp_path / "Allrecipes--0"
    assert (result.status, result.error_kind) == ("completed", None)
    assert result.final_answer == "Vegetarian Four Cheese Lasagna: 4.7 stars, 312 reviews, serves 6."
    assert (result.steps, result.failed_steps, result.model_rounds, result.model_steps) == (2, 0, 3, 3)
    assert AgentResult.model_validate_json((attempt_dir / "result.json").read_bytes()) == result
    assert WvTask.model_validate_json((attempt_dir / "task.json").read_bytes()) == TASK
    assert result.final_screenshot is not None and result.final_screenshot.startswith("final-")
    png = (attempt_dir / result.final_screenshot).read_bytes()
    assert png.startswith(b"\x89PNG")
    assert result.final_screenshot == f"final-{hashlib.sha256(png).hexdigest()[:16]}.png"
    events = read_trace(attempt_dir / "trace.ndjson")
    assert events[0].kind == "run_start" and isinstance(events[-1], RunEnd)
    observations = browser_observations(attempt_dir / "trace.ndjson")
    assert [(o.seq, o.tool, o.url) for o in observations] == [(1, "browser_navigate", RECIPE),
                                                                (2, "browser_snapshot", RECIPE)]
    assert "312 reviews" in observations[1].text
    # The model read the stand-in page's facts.
    assert "Servings" in stub.requests[1].tool_results()[0]


def test_the_run_prompt_carries_the_task_and_the_rules(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([StubReply(text="done")])
    _run(stub, tmp_path)
    body = stub.requests[0].body
    system = body["messages"][0]["content"]
    assert TASK.confirmed_task in stub.requests[0].user_texts()[0] and TASK.website in stub.requests[0].user_texts()[0]
    for rule in ("only the browser_* tools", "Do not log in", "do not buy", "do not post", "captchas"):
        assert rule in system
    assert {t["function"]["name"] for t in body["tools"]} == {
        "browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_select_option",
        "browser_press_key", "browser_wait_for", "browser_navigate_back", "browser_take_screenshot"}


def test_session_and_trace_hold_text_but_no_image_and_no_key(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([_nav(RECIPE), StubReply(tool_calls=[("browser_take_screenshot", {})]), StubReply(text="ok")])
    _run(stub, tmp_path)
    attempt_dir = tmp_path / "Allrecipes--0"
    session = read_session(attempt_dir / "session.json")
    assert [m.role for m in session.messages] == ["system", "user", "assistant", "tool", "assistant", "tool",
                                                  "assistant"]
    assert session.messages[5].images == 1
    assert stub.requests[2].image_count() == 1  # the model did get the screenshot
    shot = next(e for e in read_trace(attempt_dir / "trace.ndjson")
                if isinstance(e, ToolResultEvent) and e.tool == "browser_take_screenshot")
    assert shot.image_bytes is not None and shot.image_bytes > 0
    for name in ("session.json", "trace.ndjson", "result.json", "task.json"):
        text = (attempt_dir / name).read_text(encoding="utf-8")
        assert KEY not in text and "base64" not in text and "/9j/" not in text


def test_running_out_of_model_rounds_is_a_step_limit_keeping_the_last_text(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([StubReply(text="Lasagna so far: 4.7 stars.", tool_calls=[("browser_navigate", {"url": RECIPE})]),
                 StubReply(tool_calls=[("browser_snapshot", {})]), StubReply(text="never asked for")])
    result = _run(stub, tmp_path, _settings(stub, max_rounds=2))
    assert (result.status, result.model_rounds, result.model_steps, result.steps) == ("step_limit", 2, 2, 2)
    assert result.final_answer == "Lasagna so far: 4.7 stars."
    assert stub.pending == 1


def test_a_tiny_time_limit_is_a_timeout(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([StubReply(text="too late")])
    result = _run(stub, tmp_path, _settings(stub, timeout_ms=1))
    assert (result.status, result.model_rounds, result.error_kind) == ("timeout", 0, None)
    assert result.final_screenshot is not None and (tmp_path / "Allrecipes--0" / "result.json").exists()


def test_the_time_limit_cuts_a_model_wait_short_and_keeps_the_last_text(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([StubReply(text="Found: 4.7 stars.", tool_calls=[("browser_navigate", {"url": RECIPE})]),
                 StubReply.slow(30.0)])
    began = time.monotonic()
    result = _run(stub, tmp_path, _settings(stub, timeout_ms=5000))
    assert time.monotonic() - began < 15
    assert (result.status, result.final_answer, result.model_rounds) == ("timeout", "Found: 4.7 stars.", 2)
    cut = result.model_calls[-1]
    # The abandoned request may have been billed: its missing usage makes the totals unknown, not zero.
    assert (cut.outcome, cut.usage, cut.usage_expected) == ("timeout", None, True)
    assert result.usage.tokens is None and result.usage.usage_missing_calls == 1


def test_a_quota_reply_ends_the_attempt_as_quota_without_a_retry(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([StubReply.quota()])
    result = _run(stub, tmp_path)
    assert (result.status, result.error_kind, result.model_rounds, result.retry_count) == ("error", "quota", 1, 0)
    assert len(stub.requests) == 1
    assert result.model_calls[0].outcome == "quota"


def test_server_errors_past_the_retries_are_service_unavailable_with_retries_traced(
    stub: ModelStub, tmp_path: Path,
) -> None:
    stub.script([StubReply.server_error(500)] * 6)
    result = _run(stub, tmp_path)
    assert (result.status, result.error_kind) == ("error", "service_unavailable")
    assert (result.model_rounds, result.retry_count, result.model_steps) == (6, 5, 1)
    retries = [e for e in read_trace(tmp_path / "Allrecipes--0" / "trace.ndjson") if isinstance(e, ModelRetry)]
    assert [(r.request, r.outcome, r.status) for r in retries] == [(n, "server", 500) for n in range(1, 6)]
    assert all(r.wait_ms > 0 for r in retries)


def test_a_refused_key_is_auth(tmp_path: Path) -> None:
    with ModelStub(api_key="the-right-key") as stub:
        stub.script([StubReply(text="never")])
        result = _run(stub, tmp_path)
    assert (result.status, result.error_kind, result.model_rounds) == ("error", "auth", 1)


def test_three_restricted_results_end_the_attempt_as_website_unavailable(stub: ModelStub, tmp_path: Path) -> None:
    blocked = "https://www.allrecipes.com/restricted/"
    stub.script([_nav(blocked), _nav(blocked), _nav(RECIPE), StubReply(text="never asked for")])
    result = _run(stub, tmp_path)
    assert (result.status, result.error_kind) == ("error", "website_unavailable")
    assert (result.restricted_results, result.restricted_origins) == (3, ["https://www.allrecipes.com"])
    assert (result.steps, result.failed_steps, result.model_rounds) == (3, 3, 3)
    results = stub.requests[2].tool_results()
    assert "restricting access" in results[0] and "not requested again" in results[1]
    guard = [e.action for e in read_trace(tmp_path / "Allrecipes--0" / "trace.ndjson") if isinstance(e, GuardEvent)]
    assert guard == ["restricted", "refused", "refused"]


def test_a_tool_outside_the_browser_contract_is_refused(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([StubReply(tool_calls=[("bash", {"command": "curl https://www.allrecipes.com"})]),
                 StubReply(text="gave up")])
    result = _run(stub, tmp_path)
    assert (result.status, result.steps, result.failed_steps) == ("completed", 1, 1)
    assert "not allowed" in stub.requests[1].tool_results()[0]


def test_headed_without_a_display_is_a_clear_error_before_any_file(
    stub: ModelStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    with pytest.raises(FarmError, match="DISPLAY"):
        _run(stub, tmp_path, _settings(stub, headed=True))
    assert not (tmp_path / "Allrecipes--0").exists()


def test_a_finished_attempt_is_never_overwritten(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([StubReply(text="first")])
    _run(stub, tmp_path)
    before = (tmp_path / "Allrecipes--0" / "result.json").read_bytes()
    with pytest.raises(FarmError, match="already finished"):
        _run(stub, tmp_path)
    assert (tmp_path / "Allrecipes--0" / "result.json").read_bytes() == before


def test_a_timeout_after_a_quota_signal_in_the_step_counts_as_quota() -> None:
    log = [Attempt(outcome="quota", status=429, duration_ms=1.0), Attempt(outcome="timeout", duration_ms=1.0)]
    assert model_error_kind(ModelCallError("x", kind="timeout", status=None, attempt_log=log)) == "quota"
    plain = ModelCallError("x", kind="timeout", status=None, attempt_log=[Attempt(outcome="timeout", duration_ms=1)])
    assert model_error_kind(plain) == "service_unavailable"
    refused = ModelCallError("x", kind="bad_response", status=200, attempt_log=[])
    assert model_error_kind(refused) == "model_error"


def _worker(attempt_dir: Path, stub: ModelStub, settings: AgentSettings) -> subprocess.Popen[bytes]:
    write_worker_input(attempt_dir, TASK, 1, settings)
    env = dict(os.environ, WV_TEST_KEY=KEY)
    return subprocess.Popen([sys.executable, "-m", "web_bench.webvoyager.worker", str(attempt_dir)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def test_the_worker_process_makes_the_attempt_and_writes_its_result(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([_nav(RECIPE), StubReply(text="4.7 stars, 312 reviews")])
    attempt_dir = tmp_path / "Allrecipes--0"
    proc = _worker(attempt_dir, stub, _settings(stub))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    result = AgentResult.model_validate_json((attempt_dir / "result.json").read_bytes())
    assert (result.status, result.final_answer, result.steps) == ("completed", "4.7 stars, 312 reviews", 1)
    assert KEY not in (attempt_dir / "worker.json").read_text(encoding="utf-8")


def test_sigterm_stops_the_worker_with_an_interrupted_result(stub: ModelStub, tmp_path: Path) -> None:
    stub.script([_nav(RECIPE), StubReply.slow(60.0)])
    attempt_dir = tmp_path / "Allrecipes--0"
    proc = _worker(attempt_dir, stub, _settings(stub))
    trace = attempt_dir / "trace.ndjson"
    deadline = time.monotonic() + 60
    while not (trace.exists() and trace.read_text().count('"model_request"') >= 2):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGTERM)  # as the parent stops it: the whole group, Chromium included
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    result = AgentResult.model_validate_json((attempt_dir / "result.json").read_bytes())
    assert (result.status, result.error_kind, result.steps) == ("error", "interrupted", 1)
    kinds = [e.kind for e in read_trace(trace)]
    assert "interrupted" in kinds and kinds[-1] == "run_end"
    assert (attempt_dir / "session.json").exists()


def test_a_trace_cut_mid_line_reads_up_to_the_cut(tmp_path: Path) -> None:
    path = tmp_path / "trace.ndjson"
    full = '{"at":"2026-01-01T00:00:00Z","kind":"interrupted","reason":"x"}\n'
    path.write_text(full + full[:25], encoding="utf-8")
    assert [e.kind for e in read_trace(path)] == ["interrupted"]


def test_a_corrupt_line_inside_a_trace_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "trace.ndjson"
    line = '{"at":"2026-01-01T00:00:00Z","kind":"interrupted","reason":"x"}\n'
    path.write_text(line + '{"kind":"nonsense"}\n' + line, encoding="utf-8")
    with pytest.raises(FarmError, match=r"trace.ndjson:2"):
        read_trace(path)


def test_a_quota_code_inside_a_streamed_200_reply_is_quota(tmp_path: Path) -> None:
    with ModelStub() as stub:
        stub.script([StubReply.quota(status=200, code=2056, as_event=True)])
        result = _run(stub, tmp_path, _settings(stub, llm=_llm(stub, provider="anthropic",
                                                               base_url=stub.base_url_anthropic)))
    assert (result.status, result.error_kind, result.model_rounds) == ("error", "quota", 1)


def test_observations_come_from_the_last_run_of_a_continued_trace(tmp_path: Path) -> None:
    path = tmp_path / "trace.ndjson"
    writer = TraceWriter(path)
    for run, url in ((1, "https://www.apple.com/old"), (2, "https://www.apple.com/iphone/")):
        writer.emit(RunStart(task_id="Apple--0", attempt=1, timeout_ms=1, max_rounds=1, headed=False,
                             har_mode="live", stand_in=True, system_prompt="s", prompt=f"run {run}"))
        writer.emit(ToolResultEvent(seq=1, call_id="c", tool="browser_navigate", url=url, captured_at="t",
                                    text="page", duration_ms=1.0))
    writer.close()
    assert [o.url for o in browser_observations(path)] == ["https://www.apple.com/iphone/"]
