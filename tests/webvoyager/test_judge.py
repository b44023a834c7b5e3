"""The reference and evidence judges against the real openai/anthropic SDKs and the loopback model stub."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from farm.llm.client import ModelClient
from farm.llm.model_config import Provider
from farm.llm.stub import ModelStub, StubReply, StubRequest, StubUsage
from tests.helpers.llm import MakeClient, stub_clients
from tests.helpers.shared_data import shared_data
from web_bench.webvoyager import judge as judges
from web_bench.webvoyager.judge_evidence import EVIDENCE_PROMPT_SHA256, judge_evidence
from web_bench.webvoyager.judge_reference import judge_reference, upstream_result_line
from web_bench.webvoyager.model import AgentResult, AgentStatus, BrowserObservation, JudgeVerdict, WvTask
from web_bench.webvoyager.model_setup import WvPrice
from web_bench.webvoyager.prompt import JudgePrompt, load_reference_prompt

PROVIDERS: list[Provider] = ["openai", "anthropic"]
KEY_ENV = "WV_JUDGE_TEST_KEY"
CANARY_KEY = "sk-judge-canary-3e8d1f0a9b"
TASK_ID = "Allrecipes--7"



# -- builders and fixtures ------------------------------------------------------------------------

def wv_task(task_id: str = TASK_ID) -> WvTask:
    return WvTask(task_id=task_id, confirmed_task="Find a vegetarian lasagna recipe with at least 4.5 stars.",
                  website="https://www.allrecipes.com/", site="Allrecipes")


def agent_result(
    status: AgentStatus = "completed", *, answer: str | None = "Vegetarian Lasagna, 4.7 stars, 512 reviews.",
    error: str | None = None, attempt: int = 1, duration_ms: float | None = 61234.6,
) -> AgentResult:
    return AgentResult(task_id=TASK_ID, attempt=attempt, status=status, final_answer=answer, error=error, steps=12,
                       model_rounds=9, model_steps=8, started_at="2026-09-16T08:00:00Z", duration_ms=duration_ms)


def observation(seq: int, text: str = "Vegetarian Lasagna ★4.7 (512)", *, is_error: bool = False) -> BrowserObservation:
    return BrowserObservation(seq=seq, tool="browser_snapshot", url=f"https://www.allrecipes.com/p/{seq}",
                              captured_at=f"2026-09-16T08:00:{seq:02d}Z", text=text, is_error=is_error)


def verdict_json(passed: Any = True, task_id: str = TASK_ID, reason: str = "The recipe meets every criterion.") -> str:
    return json.dumps([{"task_id": task_id, "pass": passed, "reason": reason}])


@pytest.fixture
def stub() -> Iterator[ModelStub]:
    with ModelStub() as running:
        yield running


@pytest.fixture
def client_for(stub: ModelStub, monkeypatch: pytest.MonkeyPatch) -> Iterator[MakeClient]:
    """`client_for(provider, **config)`: a real SDK client of the stub (fast backoff, the key from the environment)."""
    with stub_clients(stub, monkeypatch, key_env=KEY_ENV, key=CANARY_KEY, model_suffix="-judge",
                      defaults={"max_retries": 1, "backoff_max_s": 0.02}) as build:
        yield build


@pytest.fixture
def prompt() -> JudgePrompt:
    return load_reference_prompt(shared_data("webvoyager", "judge-prompt.md"))


def run_reference(client: ModelClient, prompt: JudgePrompt, log: Path, result: AgentResult | None = None
                  ) -> JudgeVerdict:
    return judge_reference(wv_task(), result or agent_result(), client=client, prompt=prompt, price=None,
                           log_path=log)


def run_evidence(client: ModelClient, log: Path, observations: list[BrowserObservation], **bounds: int
                 ) -> JudgeVerdict:
    return judge_evidence(wv_task(), agent_result(), observations, client=client, price=None, log_path=log,
                          **bounds)


def sent_text(request: StubRequest) -> str:
    """The one user message of a judge request; fails unless the request is exactly that (no tools, images,
    system prompt or history)."""
    body = request.body
    assert "tools" not in body and "tool_choice" not in body
    assert "system" not in body
    assert request.image_count() == 0
    assert len(body["messages"]) == 1 and body["messages"][0]["role"] == "user"
    texts = request.user_texts()
    assert len(texts) == 1
    return texts[0]


def split_reference(text: str, prompt: JudgePrompt) -> tuple[list[Any], list[str]]:
    """(WebVoyager_data.json array, results.ndjson lines) after the verbatim prompt."""
    assert text.startswith(prompt.text)
    rest = text[len(prompt.text):]
    layout = r"\n\n## WebVoyager_data\.json\n\n```json\n(.*)\n```\n\n## results\.ndjson\n\n```\n(.*)\n```\n"
    found = re.fullmatch(layout, rest, flags=re.DOTALL)
    assert found, rest
    return json.loads(found.group(1)), found.group(2).split("\n")


def log_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# -- upstream result line -------------------------------------------------------------------------

def test_result_line_keeps_completed_fields() -> None:
    assert upstream_result_line(agent_result()) == {
        "task_id": TASK_ID, "status": "completed", "final_answer": "Vegetarian Lasagna, 4.7 stars, 512 reviews.",
        "error": None, "steps": 12, "duration_ms": 61235,
    }


def test_result_line_maps_step_limit_to_error() -> None:
    line = upstream_result_line(agent_result("step_limit", error="50 model rounds used"))
    assert (line["status"], line["error"]) == ("error", "step_limit")


def test_result_line_null_answer_is_empty_string_and_unknown_duration_stays_null() -> None:
    line = upstream_result_line(agent_result("timeout", answer=None, error="600 s", duration_ms=None))
    assert (line["status"], line["final_answer"], line["error"], line["duration_ms"]) == ("timeout", "", "600 s", None)


# -- reference judge: the request -----------------------------------------------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
def test_reference_request_is_prompt_verbatim_one_task_one_line(
    provider: Provider, stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    stub.script([StubReply(text=verdict_json())])
    run_reference(client_for(provider), prompt, tmp_path / "judge-reference.ndjson")
    (request,) = stub.requests
    data, lines = split_reference(sent_text(request), prompt)
    assert data == [{"task_id": TASK_ID, "confirmed_task": wv_task().confirmed_task,
                     "website": "https://www.allrecipes.com/"}]
    assert len(lines) == 1 and json.loads(lines[0]) == upstream_result_line(agent_result())


def test_reference_request_carries_no_session_or_observation_text(
    stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    stub.script([StubReply(text=verdict_json())])
    result = agent_result().model_copy(update={"final_screenshot": "final-0123456789abcdef.png", "model": "agent-m"})
    run_reference(client_for("openai"), prompt, tmp_path / "j.ndjson", result)
    text = sent_text(stub.requests[0])
    assert "final-0123456789abcdef.png" not in text and "agent-m" not in text


def test_reference_answer_with_fences_inside_stays_one_line(
    stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    stub.script([StubReply(text=verdict_json())])
    answer = "Recipe:\n```\nlasagna\n```\n4.7 stars"
    run_reference(client_for("openai"), prompt, tmp_path / "j.ndjson", agent_result(answer=answer))
    text = sent_text(stub.requests[0])
    line = text.rsplit("## results.ndjson\n\n````\n", 1)[1].removesuffix("\n````\n")
    assert "\n" not in line and json.loads(line)["final_answer"] == answer


# -- reference judge: verdicts --------------------------------------------------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("passed", [True, False])
def test_reference_verdict_follows_the_reply(
    provider: Provider, passed: bool, stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    stub.script([StubReply(text=verdict_json(passed, reason="Because."))])
    verdict = run_reference(client_for(provider), prompt, tmp_path / "j.ndjson", agent_result(attempt=2))
    assert (verdict.passed, verdict.reason, verdict.judge_error) == (passed, "Because.", None)
    assert (verdict.mode, verdict.attempt, verdict.prompt_sha256) == ("reference", 2, prompt.sha256)
    assert verdict.model == f"{provider}-judge"
    assert [(c.role, c.outcome, c.step) for c in verdict.model_calls] == [("judge", "ok", 1)]
    assert verdict.usage.request_count == 1
    assert verdict.usage.tokens is not None and verdict.usage.tokens.output == 5


def test_reference_verdict_is_priced_and_summed(
    stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    stub.script([StubReply(text=verdict_json(), usage=StubUsage(input=1_000_000, cached=0, output=500_000))])
    price = WvPrice(input=2.0, output=8.0, cache_read=0.5, cache_write=3.0)
    verdict = judge_reference(wv_task(), agent_result(), client=client_for("openai"), prompt=prompt, price=price,
                              log_path=tmp_path / "j.ndjson")
    assert verdict.model_calls[0].cost_usd == pytest.approx(6.0)
    assert verdict.usage.cost_usd == pytest.approx(6.0)


def test_reference_unknown_price_leaves_cost_null(
    stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    stub.script([StubReply(text=verdict_json())])
    verdict = run_reference(client_for("openai"), prompt, tmp_path / "j.ndjson")
    assert verdict.usage.cost_usd is None and verdict.usage.unpriced_calls == 1


def test_reference_accepts_a_json_fence(
    stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    stub.script([StubReply(text=f"```json\n{verdict_json(False)}\n```")])
    assert run_reference(client_for("openai"), prompt, tmp_path / "j.ndjson").passed is False


@pytest.mark.parametrize("status", ["error", "timeout", "step_limit"])
def test_reference_judges_unfinished_results(
    status: AgentStatus, stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    stub.script([StubReply(text=verdict_json(True))])
    result = agent_result(status, error="browser crashed after answering")
    verdict = run_reference(client_for("anthropic"), prompt, tmp_path / "j.ndjson", result)
    assert verdict.passed is True
    (line,) = split_reference(sent_text(stub.requests[0]), prompt)[1]
    assert json.loads(line)["status"] == ("timeout" if status == "timeout" else "error")


# -- reference judge: replies that must not become a verdict ---------------------------------------

BAD_REPLIES = {
    "two items": (json.dumps([{"task_id": TASK_ID, "pass": True, "reason": "a"},
                              {"task_id": "Allrecipes--8", "pass": False, "reason": "b"}]), "2 items"),
    "wrong task_id": (verdict_json(task_id="Allrecipes--8"), "does not match"),
    "pass as string": (verdict_json("true"), 'pass is the string "true"'),
    "prose before": ("Here is my judgment:\n" + verdict_json(), "not valid JSON"),
    "prose after": (verdict_json() + "\nHope this helps.", "text after the JSON"),
    "object not array": (json.dumps({"task_id": TASK_ID, "pass": True, "reason": "a"}), "not an array"),
    "empty array": ("[]", "0 items"),
    "duplicate pass key": (f'[{{"task_id": "{TASK_ID}", "pass": true, "pass": false, "reason": "a"}}]',
                           "more than once"),
    "extra key": (json.dumps([{"task_id": TASK_ID, "pass": True, "reason": "a", "score": 1}]), "unexpected key"),
    "empty reason": (verdict_json(reason=""), "reason"),
    "empty reply": ("", "empty reply"),
    "unclosed fence": ("```json\n" + verdict_json(), "not valid JSON"),
}


@pytest.mark.parametrize("name", list(BAD_REPLIES))
def test_reference_invalid_reply_leaves_task_unjudged(
    name: str, stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    reply, says = BAD_REPLIES[name]
    stub.script([StubReply(text=reply)])
    verdict = run_reference(client_for("openai"), prompt, tmp_path / "j.ndjson")
    assert verdict.passed is None and verdict.reason is None
    assert verdict.judge_error is not None and says in verdict.judge_error
    assert len(stub.requests) == 1  # the reference judge never asks twice


@pytest.mark.parametrize(("provider", "stop"), [("openai", "length"), ("anthropic", "max_tokens")])
def test_reference_truncated_reply_is_unjudged_even_if_it_parses(
    provider: Provider, stop: str, stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    stub.script([StubReply(text=verdict_json(False), stop_reason=stop)])
    verdict = run_reference(client_for(provider), prompt, tmp_path / "j.ndjson")
    assert verdict.passed is None
    assert verdict.judge_error is not None and f"truncated reply (stop reason {stop})" in verdict.judge_error


@pytest.mark.parametrize("provider", PROVIDERS)
def test_reference_server_error_after_retries_is_unjudged_not_failed(
    provider: Provider, stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    stub.script([StubReply.server_error(500), StubReply.server_error(500)])
    verdict = run_reference(client_for(provider), prompt, tmp_path / "j.ndjson")
    assert verdict.passed is None and verdict.error_kind == "service_unavailable"
    assert verdict.judge_error is not None and "500" in verdict.judge_error
    assert [(c.outcome, c.retry) for c in verdict.model_calls] == [("server", False), ("server", True)]
    assert verdict.usage.request_count == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_reference_quota_is_unjudged_with_quota_kind(
    provider: Provider, stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    stub.script([StubReply.quota(429, 2056)])
    verdict = run_reference(client_for(provider), prompt, tmp_path / "j.ndjson")
    assert (verdict.passed, verdict.error_kind) == (None, "quota")
    assert len(stub.requests) == 1  # quota is never retried


@pytest.mark.parametrize("provider", PROVIDERS)
def test_reference_non_model_response_is_unjudged(
    provider: Provider, stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    stub.script([StubReply(raw_body=b"<html>proxy error</html>", content_type="text/html")])
    verdict = run_reference(client_for(provider), prompt, tmp_path / "j.ndjson")
    assert verdict.passed is None and verdict.judge_error is not None
    assert verdict.error_kind == "model_error"


# -- the judge log --------------------------------------------------------------------------------

def test_log_records_request_response_and_verdict(
    stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    reply = verdict_json(True)
    stub.script([StubReply(text=reply)])
    log = tmp_path / "judge-reference.ndjson"
    verdict = run_reference(client_for("anthropic"), prompt, log)
    lines = log_lines(log)
    assert [line["kind"] for line in lines] == ["request", "response", "verdict"]
    assert {line["prompt_sha256"] for line in lines} == {prompt.sha256}
    request, response, last = lines
    assert request["messages"] == [{"role": "user", "text": sent_text(stub.requests[0])}]
    assert request["model"] == "anthropic-judge"
    assert (response["raw"], response["stop"]) == (reply, "end_turn")
    assert response["usage"]["output"] == 5
    assert JudgeVerdict.model_validate(last["verdict"]) == verdict


def test_log_records_the_error_and_never_the_key(
    stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    stub.script([StubReply(status=401, error_message=f"bad key {CANARY_KEY}")])
    log = tmp_path / "judge-reference.ndjson"
    verdict = run_reference(client_for("openai"), prompt, log)
    assert verdict.error_kind == "auth"
    assert [line["kind"] for line in log_lines(log)] == ["request", "error", "verdict"]
    text = log.read_text(encoding="utf-8")
    assert CANARY_KEY not in text and CANARY_KEY not in verdict.model_dump_json()


def test_log_appends_after_a_torn_line(
    stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    log = tmp_path / "judge-reference.ndjson"
    log.write_text('{"kind": "request", "at": "2026', encoding="utf-8")
    stub.script([StubReply(text=verdict_json())])
    run_reference(client_for("openai"), prompt, log)
    rows = log.read_text(encoding="utf-8").splitlines()
    assert rows[0] == '{"kind": "request", "at": "2026'
    assert [json.loads(r)["kind"] for r in rows[1:]] == ["request", "response", "verdict"]


def test_entry_points_are_importable_from_judge(
    stub: ModelStub, client_for: MakeClient, prompt: JudgePrompt, tmp_path: Path,
) -> None:
    stub.script([StubReply(text=verdict_json(False)), StubReply(text=json.dumps({"pass": False, "reason": "r",
                                                                                "cited": []}))])
    client = client_for("openai")
    reference = judges.judge_reference(wv_task(), agent_result(), client=client, prompt=prompt, price=None,
                                       log_path=tmp_path / "judge-reference.ndjson")
    evidence = judges.judge_evidence(wv_task(), agent_result(), [observation(1)], client=client, price=None,
                                     log_path=tmp_path / "judge-evidence.ndjson")
    assert (reference.mode, reference.passed, evidence.mode, evidence.passed) == ("reference", False, "evidence", False)


# -- evidence judge -------------------------------------------------------------------------------

def evidence_reply(passed: bool, cited: list[int], reason: str = "Seen on the recipe page.") -> str:
    return json.dumps({"pass": passed, "reason": reason, "cited": cited})


@pytest.mark.parametrize("provider", PROVIDERS)
def test_evidence_pass_citing_a_real_observation(
    provider: Provider, stub: ModelStub, client_for: MakeClient, tmp_path: Path,
) -> None:
    stub.script([StubReply(text=evidence_reply(True, [2, 1]))])
    verdict = run_evidence(client_for(provider), tmp_path / "judge-evidence.ndjson", [observation(1), observation(2)])
    assert (verdict.mode, verdict.passed, verdict.cited) == ("evidence", True, [2, 1])
    assert verdict.prompt_sha256 == EVIDENCE_PROMPT_SHA256
    text = sent_text(stub.requests[0])
    assert "[2] browser_snapshot url=https://www.allrecipes.com/p/2 captured_at=2026-09-16T08:00:02Z" in text
    assert "Vegetarian Lasagna, 4.7 stars, 512 reviews." in text


def test_evidence_fail_needs_no_citation(stub: ModelStub, client_for: MakeClient, tmp_path: Path) -> None:
    stub.script([StubReply(text=evidence_reply(False, []))])
    verdict = run_evidence(client_for("openai"), tmp_path / "j.ndjson", [observation(1)])
    assert (verdict.passed, verdict.cited, len(stub.requests)) == (False, [], 1)


def test_evidence_pass_citing_an_error_observation_twice_is_unjudged(
    stub: ModelStub, client_for: MakeClient, tmp_path: Path,
) -> None:
    stub.script([StubReply(text=evidence_reply(True, [2])), StubReply(text=evidence_reply(True, [2]))])
    observations = [observation(1), observation(2, "Access denied", is_error=True)]
    verdict = run_evidence(client_for("anthropic"), tmp_path / "j.ndjson", observations)
    assert verdict.passed is None and verdict.error_kind == "model_error"
    assert verdict.judge_error is not None and "after one repair" in verdict.judge_error
    assert "non-error observation" in verdict.judge_error
    assert len(stub.requests) == 2 and [c.step for c in verdict.model_calls] == [1, 2]
    repair = sent_text(stub.requests[1])
    assert "cites only error observation(s) 2" in repair and evidence_reply(True, [2]) in repair


def test_evidence_repair_that_fixes_the_reply_gives_the_verdict(
    stub: ModelStub, client_for: MakeClient, tmp_path: Path,
) -> None:
    stub.script([StubReply(text=evidence_reply(True, [2])), StubReply(text=evidence_reply(True, [1]))])
    observations = [observation(1), observation(2, "Robot check", is_error=True)]
    log = tmp_path / "judge-evidence.ndjson"
    verdict = run_evidence(client_for("openai"), log, observations)
    assert (verdict.passed, verdict.cited, verdict.judge_error) == (True, [1], None)
    assert verdict.usage.request_count == 2
    assert [line["kind"] for line in log_lines(log)] == ["request", "response", "request", "response", "verdict"]


def test_evidence_pass_citing_nothing_asks_for_repair(stub: ModelStub, client_for: MakeClient, tmp_path: Path) -> None:
    stub.script([StubReply(text=evidence_reply(True, [])), StubReply(text=evidence_reply(False, []))])
    verdict = run_evidence(client_for("openai"), tmp_path / "j.ndjson", [observation(1)])
    assert verdict.passed is False
    assert "a PASS must cite at least one non-error observation, but it cites none" in sent_text(stub.requests[1])


def test_evidence_citing_a_missing_observation_asks_for_repair(
    stub: ModelStub, client_for: MakeClient, tmp_path: Path,
) -> None:
    stub.script([StubReply(text=evidence_reply(False, [9])), StubReply(text=evidence_reply(False, [1]))])
    verdict = run_evidence(client_for("openai"), tmp_path / "j.ndjson", [observation(1)])
    assert (verdict.passed, verdict.cited) == (False, [1])
    assert "cited observation(s) 9 do not exist" in sent_text(stub.requests[1])


def test_evidence_invalid_json_asks_for_repair(stub: ModelStub, client_for: MakeClient, tmp_path: Path) -> None:
    stub.script([StubReply(text="PASS, see observation 1"), StubReply(text=evidence_reply(True, [1]))])
    verdict = run_evidence(client_for("anthropic"), tmp_path / "j.ndjson", [observation(1)])
    assert verdict.passed is True
    assert "not valid JSON" in sent_text(stub.requests[1])


def test_evidence_citation_numbers_must_be_integers(stub: ModelStub, client_for: MakeClient, tmp_path: Path) -> None:
    bad = json.dumps({"pass": True, "reason": "r", "cited": ["1", True]})
    stub.script([StubReply(text=bad), StubReply(text=bad)])
    verdict = run_evidence(client_for("openai"), tmp_path / "j.ndjson", [observation(1)])
    assert verdict.passed is None and verdict.judge_error is not None and "integers" in verdict.judge_error


def test_evidence_api_failure_is_unjudged_without_repair(
    stub: ModelStub, client_for: MakeClient, tmp_path: Path,
) -> None:
    stub.script([StubReply.server_error(503)] * 2)
    verdict = run_evidence(client_for("openai"), tmp_path / "j.ndjson", [observation(1)])
    assert verdict.passed is None and verdict.error_kind == "service_unavailable"
    assert len(stub.requests) == 2 and {c.step for c in verdict.model_calls} == {1}


def test_evidence_texts_are_bounded_per_observation_and_in_total(
    stub: ModelStub, client_for: MakeClient, tmp_path: Path,
) -> None:
    stub.script([StubReply(text=evidence_reply(False, []))])
    letters = "QRSTU"  # observation n shows only letter n, 500 times
    observations = [observation(n, letters[n - 1] * 500) for n in range(1, 6)]
    run_evidence(client_for("openai"), tmp_path / "j.ndjson", observations,
                 max_observation_chars=200, max_total_chars=500)
    text = sent_text(stub.requests[0])
    assert all(f"[{n}] browser_snapshot" in text for n in range(1, 6))  # every observation stays citable
    # The total is handed out from the last observation back: 200 + 200 + 100, then nothing.
    assert "U" * 200 in text and "U" * 201 not in text
    assert "T" * 200 in text and "T" * 201 not in text
    assert "S" * 100 in text and "S" * 101 not in text
    assert "R" * 10 not in text and "Q" * 10 not in text
    assert text.count("past the total bound") == 2
