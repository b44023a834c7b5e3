"""`--judge evidence`: the project's strict evidence judge (kept for older runs; not upstream judge.ts).

The judge sees the task, the agent's result and its numbered browser observations (sequence number, URL,
capture time, text cut to a bound per observation and in total) and answers with one JSON object
`{"pass", "reason", "cited"}`. A PASS must cite at least one existing observation that is not an error.
An invalid reply (format, truncation or citations) gets ONE repair request saying what was wrong; a reply
still invalid after it, or a failed request, leaves the task unjudged (`pass: null`, `judge_error`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from farm.llm.client import ModelClient
from web_bench.webvoyager.judge import JudgeSession, ReplyInvalid, check_verdict_object, fence, parse_json, reply_body
from web_bench.webvoyager.model import AgentResult, BrowserObservation, JudgeVerdict, WvTask
from web_bench.webvoyager.model_setup import WvPrice

EVIDENCE_PROMPT = """\
You are a strict evaluator of a web browsing agent. You receive a task, the agent's result and the numbered \
browser observations the agent made (tool results with their URL and capture time).

Decide whether the agent completed the task. PASS only when the final answer gives the specific information \
the task asks for AND the observations show that information on a page; an answer the observations do not \
support is a FAIL, however plausible. Error observations (failed tool calls, blocked or challenge pages) \
prove nothing. A missing or generic answer is a FAIL.

Reply with one JSON object and nothing else:
{"pass": true or false, "reason": "one sentence", "cited": [observation numbers supporting the verdict]}
A PASS must cite at least one observation that is not marked as an error."""
"""The evidence judge's instructions (part of the project, hashed into every verdict)."""

EVIDENCE_PROMPT_SHA256 = hashlib.sha256(EVIDENCE_PROMPT.encode("utf-8")).hexdigest()
"""SHA-256 of `EVIDENCE_PROMPT`, recorded as the verdict's prompt_sha256."""

OBSERVATION_CHARS = 4_000
"""Default bound on one observation's text."""
TOTAL_OBSERVATION_CHARS = 60_000
"""Default bound on all observation texts together."""
REPAIR_QUOTE_CHARS = 2_000
"""How much of an invalid reply the repair request quotes back."""


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters cut]"


def observation_budgets(observations: Sequence[BrowserObservation], per_obs: int, total: int) -> list[int]:
    """Characters of text each observation may show. The total is handed out from the last observation
    backwards: the pages the agent ended on are the likeliest evidence for its final answer."""
    budgets = [0] * len(observations)
    left = total
    for i in range(len(observations) - 1, -1, -1):
        budgets[i] = min(per_obs, len(observations[i].text), left)
        left -= budgets[i]
    return budgets


def render_observations(observations: Sequence[BrowserObservation], per_obs: int, total: int) -> str:
    """Numbered observations, every header kept (so any of them can be cited), texts within the bounds."""
    if not observations:
        return "(the agent made no browser observations)"
    blocks = []
    for obs, budget in zip(observations, observation_budgets(observations, per_obs, total), strict=True):
        flag = " ERROR" if obs.is_error else ""
        header = f"[{obs.seq}]{flag} {obs.tool} url={obs.url or 'unknown'} captured_at={obs.captured_at}"
        if budget == 0 and obs.text:
            body = f"[text omitted: {len(obs.text)} characters past the total bound]"
        else:
            body = _cut(obs.text, budget)
        blocks.append(f"{header}\n{fence(body)}")
    return "\n\n".join(blocks)


def evidence_message(
    task: WvTask, result: AgentResult, observations: Sequence[BrowserObservation], per_obs: int, total: int,
) -> str:
    """The judge's one user message: instructions, task, result and observations."""
    task_json = json.dumps(
        {"task_id": task.task_id, "confirmed_task": task.confirmed_task, "website": task.website},
        ensure_ascii=False, indent=2,
    )
    result_json = json.dumps(
        {"status": result.status, "final_answer": result.final_answer, "error": result.error},
        ensure_ascii=False, indent=2,
    )
    return (
        f"{EVIDENCE_PROMPT}\n\n## Task\n\n{fence(task_json, 'json')}\n\n"
        f"## Agent result\n\n{fence(result_json, 'json')}\n\n"
        f"## Browser observations\n\n{render_observations(observations, per_obs, total)}\n"
    )


def parse_evidence_reply(body: str, observations: Sequence[BrowserObservation]) -> tuple[bool, str, list[int]]:
    """(pass, reason, cited) from the reply body (fence removed); ReplyInvalid unless it is exactly the object
    asked for, every cited number is an observation, and a PASS cites one that is not an error."""
    item = check_verdict_object(parse_json(body), ("pass", "reason", "cited"), "the reply")
    raw_cited = item["cited"]
    if not isinstance(raw_cited, list) or not all(type(n) is int for n in raw_cited):
        raise ReplyInvalid("cited must be an array of observation numbers (integers)")
    cited: list[int] = []
    for n in raw_cited:
        assert isinstance(n, int)
        if n not in cited:
            cited.append(n)
    by_seq = {obs.seq: obs for obs in observations}
    unknown = [n for n in cited if n not in by_seq]
    if unknown:
        raise ReplyInvalid(f"cited observation(s) {', '.join(map(str, unknown))} do not exist "
                           f"(numbers run {_seq_range(observations)})")
    passed, reason = item["pass"], item["reason"]
    assert isinstance(passed, bool) and isinstance(reason, str)  # checked by check_verdict_object
    if passed and not any(not by_seq[n].is_error for n in cited):
        why = "cites none" if not cited else f"cites only error observation(s) {', '.join(map(str, cited))}"
        raise ReplyInvalid(f"a PASS must cite at least one non-error observation, but it {why}")
    return passed, reason, cited


def _seq_range(observations: Sequence[BrowserObservation]) -> str:
    if not observations:
        return "nowhere: there are none"
    seqs = sorted(obs.seq for obs in observations)
    return f"{seqs[0]}..{seqs[-1]}"


def repair_message(original: str, reply_text: str | None, problem: str) -> str:
    """The repair request: the original message again, what was wrong, and the invalid reply quoted."""
    quoted = _cut(reply_text or "", REPAIR_QUOTE_CHARS) or "(empty)"
    return (
        f"{original}\n## Your previous reply was invalid\n\n"
        f"Problem: {problem}.\n\nYour previous reply:\n\n{fence(quoted)}\n\n"
        "Reply again with only the JSON object described above, fixing the problem."
    )


def judge_evidence(
    task: WvTask,
    result: AgentResult,
    observations: Sequence[BrowserObservation],
    *,
    client: ModelClient,
    price: WvPrice | None,
    log_path: Path,
    max_observation_chars: int = OBSERVATION_CHARS,
    max_total_chars: int = TOTAL_OBSERVATION_CHARS,
) -> JudgeVerdict:
    """Judge one attempt against its browser observations, with at most one repair request; never raises
    for a judge problem (the verdict is then `pass: null` with `judge_error`)."""
    if result.task_id != task.task_id:
        raise ValueError(f"result of {result.task_id} given for task {task.task_id}")  # a harness bug
    session = JudgeSession(mode="evidence", client=client, price=price, log_path=log_path,
                           prompt_sha256=EVIDENCE_PROMPT_SHA256)
    message = evidence_message(task, result, observations, max_observation_chars, max_total_chars)
    problems: list[str] = []
    reply_text: str | None = None
    for request in (1, 2):
        turn = session.ask(message if request == 1 else repair_message(message, reply_text, problems[-1]))
        if isinstance(turn, str):
            return session.failed(result, turn)
        reply_text = turn.text
        try:
            passed, reason, cited = parse_evidence_reply(reply_body(turn), observations)
        except ReplyInvalid as exc:
            problems.append(str(exc))
            continue
        return session.verdict(result, passed=passed, reason=reason, cited=cited)
    return session.verdict(
        result, judge_error=f"invalid judge reply after one repair: {problems[1]} (first reply: {problems[0]})",
        error_kind="model_error",
    )
