"""The host executor on a used-up quota or a refused key, end to end: a virtual phone, the model policy, the real
SDKs against the loopback model stub. A quota error inside an HTTP 200 (an OpenAI-style `insufficient_quota`
body) stops dispatch in one line naming the provider and the reason; it is not a bad response, it is not retried,
the phone is not blamed, and no later job makes a request while the quota is gone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from farm.android.executor import ExecutorOutcome, PhoneJob, ResolvedTask, TestStatus
from farm.android.host_executor import HostExecutor
from farm.android.options import AgentOptions, HostSettings, RunOptions
from farm.config import SIM_PROFILE
from farm.llm.stub import ModelStub, StubReply
from tests.helpers.host import host_phone, task_spec

KEY_ENV = "FARM_TEST_MODEL_KEY"
TASK = "calculator-multiply"
QUOTA_200 = json.dumps({"error": {
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "type": "insufficient_quota", "param": None, "code": "insufficient_quota",
}}).encode()
"""What an OpenAI-compatible gateway sends with HTTP 200 once the quota is gone."""


class Notes:
    """A progress sink that keeps what the executor said."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.finished: list[tuple[str, TestStatus]] = []

    def task_started(self, task_id: str) -> None:
        """Ignore."""

    def task_finished(self, task_id: str, status: TestStatus) -> None:
        self.finished.append((task_id, status))

    def note(self, text: str) -> None:
        self.lines.append(text)


def _task(sim: Any) -> ResolvedTask:
    phone = host_phone(sim)
    try:
        spec = task_spec(TASK, phone)
    finally:
        phone.close()
    return ResolvedTask(task=spec.task, directory=spec.directory, sha256="0" * 64, apps=dict(spec.apps),
                        probes=dict(spec.probes), markers=list(spec.markers))


def _job(sim: Any, raw: Path, task: ResolvedTask) -> PhoneJob:
    import adbutils

    options = RunOptions(agent=AgentOptions(split="tune"), profile_name="sim", profile=SIM_PROFILE)
    return PhoneJob(device=adbutils.AdbClient(port=sim.adb_port).device(sim.serial), serial=sim.serial,
                    label="virtual", run_id=raw.name, tasks=[task], options=options, raw_dir=raw,
                    device_eval_dir=f"/sdcard/eval/{raw.name}", device_bundle_path="/sdcard/tasks.json")


def _executor(stub: ModelStub, provider: str) -> HostExecutor:
    return HostExecutor(None, HostSettings(policy="model", provider=provider, model="stub-model",
                                           base_url=stub.base_url(provider), api_key_env=KEY_ENV))


def _scores(raw: Path) -> list[dict[str, Any]]:
    path = raw / "scores.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _run(executor: HostExecutor, sim: Any, raw: Path, task: ResolvedTask, notes: Notes) -> ExecutorOutcome:
    return executor.run(_job(sim, raw, task), notes)


def test_a_quota_error_inside_a_200_stops_dispatch_instead_of_failing_the_phone(
    virtual_phone: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key")
    task = _task(virtual_phone)
    with ModelStub() as stub:
        # One step on the phone, then the gateway answers 200 with the quota error (and would answer again).
        stub.script([StubReply(text="next: launch", tool_calls=[("launch", {"capability": "calculator"})]),
                     StubReply(raw_body=QUOTA_200), StubReply(raw_body=QUOTA_200)])
        executor = _executor(stub, "openai")
        notes = Notes()
        try:
            first = _run(executor, virtual_phone, tmp_path / "try1", task, notes)
            asked = len(stub.requests)
            later = _run(executor, virtual_phone, tmp_path / "try2", task, Notes())
            asked_later = len(stub.requests) - asked
        finally:
            executor.close()
        port = stub.port
    # One line naming the provider (its API and endpoint) and the provider's own reason.
    line = first.stop_dispatch
    assert line is not None and "\n" not in line
    assert line.startswith(f"model provider openai at 127.0.0.1:{port}: quota: ")
    assert "insufficient_quota" in line and "exceeded your current quota" in line
    assert [n for n in notes.lines if "stopping dispatch" in n] == [
        f"stopping dispatch: {line}; the unit is kept for --resume"]
    # The quota is never retried: the launch step, then the one refused request.
    assert asked == 2
    # The try is the provider's, recorded as such (an infrastructure error saying quota), not a bad response.
    (score,) = _scores(tmp_path / "try1")
    assert (score["id"], score["outcome"]) == (TASK, "error")
    assert score["failureCategory"] == "infrastructure" and "quota (HTTP 200)" in score["reason"]
    assert "bad_response" not in json.dumps(score)
    # A later job (the next unit, on this phone or another) starts no task and sends no request.
    assert asked_later == 0
    assert (later.stop_dispatch, later.unfinished, later.finished) == (line, [TASK], [])
    assert _scores(tmp_path / "try2") == []


@pytest.mark.parametrize(("provider", "reply", "kind"), [
    ("anthropic", StubReply.quota(status=200, code="insufficient_quota"), "quota"),
    ("openai", StubReply.quota(status=200, code=2056), "quota"),
    ("anthropic", StubReply.quota(status=429, code=2056), "quota"),
    ("openai", StubReply(status=401, error_message="Incorrect API key provided"), "auth"),
])
def test_every_quota_and_key_refusal_stops_dispatch(
    provider: str, reply: StubReply, kind: str, virtual_phone: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key")
    task = _task(virtual_phone)
    with ModelStub(default=reply) as stub:
        executor = _executor(stub, provider)
        try:
            outcome = _run(executor, virtual_phone, tmp_path / "try1", task, Notes())
        finally:
            executor.close()
        requests = len(stub.requests)
    assert outcome.stop_dispatch is not None and f": {kind}: " in outcome.stop_dispatch
    assert outcome.stop_dispatch.startswith(f"model provider {provider} at 127.0.0.1:")
    assert requests == 1


def test_a_model_that_stays_down_does_not_stop_dispatch(
    virtual_phone: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 5xx past the retries is the unit's infrastructure error as before (retried on another phone), not a stop.
    monkeypatch.setenv(KEY_ENV, "test-key")
    monkeypatch.setenv("FARM_LLM_MAX_RETRIES", "1")
    task = _task(virtual_phone)
    with ModelStub(default=StubReply.server_error(503)) as stub:
        executor = _executor(stub, "openai")
        try:
            outcome = _run(executor, virtual_phone, tmp_path / "try1", task, Notes())
            again = _run(executor, virtual_phone, tmp_path / "try2", task, Notes())
        finally:
            executor.close()
    assert outcome.stop_dispatch is None and again.stop_dispatch is None
    assert _scores(tmp_path / "try2")[0]["outcome"] == "error"


def test_the_preflight_refuses_a_used_up_quota_before_any_phone_is_touched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from farm.errors import FarmError

    monkeypatch.setenv(KEY_ENV, "test-key")
    with ModelStub(models_reply=StubReply.quota(status=429, code="insufficient_quota")) as stub, \
            pytest.raises(FarmError, match="quota or balance is used up"):
        _executor(stub, "openai")


def test_farm_run_stops_on_a_used_up_quota_and_resume_finishes_the_units(
    virtual_phone: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from farm.results.store import read_records
    from farm.sweep.dev_run import run, run_request
    from tests.helpers.host import CALCULATOR_PLAN, screen_reading_model

    monkeypatch.setenv(KEY_ENV, "test-key")
    agent = AgentOptions(split="tune", set_prefix=TASK)
    with ModelStub(default=StubReply(raw_body=QUOTA_200)) as stub:
        settings = HostSettings(policy="model", provider="openai", model="stub-model", base_url=stub.base_url_openai,
                                api_key_env=KEY_ENV)
        req: dict[str, Any] = {"agent": agent, "serials": [virtual_phone.serial], "executor": "host",
                               "host": settings, "runs_dir": tmp_path / "runs", "show_progress": False}
        stopped = run(run_request(run_id="r-quota", **req))
        asked = len(stub.requests)
        records = stopped.run_dir / "records.jsonl"
        kept = [r for r in read_records(records) if r.task_id == TASK] if records.exists() else []
        # The quota is back: the resume runs the unit the stop kept.
        stub.default = None
        stub.responder = screen_reading_model(CALCULATOR_PLAN)
        resumed = run(run_request(run_id="r-quota", resume=True, **req))
    assert asked == 1
    assert stopped.interrupted and not stopped.quarantined
    assert any("quota" in note and "insufficient_quota" in note for note in stopped.notes)
    assert kept == []
    (record,) = [r for r in read_records(resumed.run_dir / "records.jsonl") if r.task_id == TASK]
    assert (record.outcome, record.passed) == ("succeeded", True)
