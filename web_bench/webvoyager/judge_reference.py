"""`--judge reference`: the upstream judge-prompt.md, verbatim, applied to one task and one result.

One independent request per task: no tools, no agent history, no screenshot, no session or browser text.
The model receives exactly what the prompt announces — `WebVoyager_data.json` holding this one task and
`results.ndjson` holding this one result line in the upstream run.ts shape — and must answer with a
single-item JSON array `[{"task_id", "pass", "reason"}]`. Error, timeout and step-limit results are judged
too: the prompt lets a valid answer pass whatever the status.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, TypedDict

from farm.llm.client import ModelClient
from web_bench.webvoyager.judge import (
    JudgeSession,
    PromptText,
    ReplyInvalid,
    check_verdict_object,
    fence,
    parse_json,
    reply_body,
)
from web_bench.webvoyager.model import AgentResult, AgentStatus, JudgeVerdict, WvTask
from web_bench.webvoyager.model_setup import WvPrice

UpstreamStatus = Literal["completed", "error", "timeout"]

# run.ts knows three statuses; our step limit is an error there, with the cause as the error text.
_UPSTREAM_STATUS: dict[AgentStatus, UpstreamStatus] = {
    "completed": "completed",
    "error": "error",
    "timeout": "timeout",
    "step_limit": "error",
}


class UpstreamResultLine(TypedDict):
    """One `results.ndjson` line as the upstream run.ts writes it."""

    task_id: str
    status: UpstreamStatus
    final_answer: str
    error: str | None
    steps: int
    duration_ms: int | None


def upstream_result_line(result: AgentResult) -> UpstreamResultLine:
    """The result as one upstream `results.ndjson` line.

    Mapping: `completed`/`error`/`timeout` keep their status and error; `step_limit` becomes status `error`
    with error `"step_limit"` (run.ts has no such status); a missing final answer is `""` (run.ts writes a
    string); `steps` is every tool call; `duration_ms` is the agent time in whole milliseconds, null when
    it is unknown (never 0).
    """
    error = "step_limit" if result.status == "step_limit" else result.error
    return UpstreamResultLine(
        task_id=result.task_id,
        status=_UPSTREAM_STATUS[result.status],
        final_answer=result.final_answer or "",
        error=error,
        steps=result.steps,
        duration_ms=None if result.duration_ms is None else round(result.duration_ms),
    )


def reference_message(prompt: PromptText, task: WvTask, result: AgentResult) -> str:
    """The one user message: the prompt verbatim, then the two files it names, each holding this task only."""
    data = [{"task_id": task.task_id, "confirmed_task": task.confirmed_task, "website": task.website}]
    data_json = json.dumps(data, ensure_ascii=False, indent=2)
    # json.dumps escapes newlines inside strings, so the result is one line, as ndjson requires.
    line = json.dumps(upstream_result_line(result), ensure_ascii=False)
    return (
        f"{prompt.text}\n\n"
        f"## WebVoyager_data.json\n\n{fence(data_json, 'json')}\n\n"
        f"## results.ndjson\n\n{fence(line)}\n"
    )


def parse_reference_reply(body: str, task_id: str) -> tuple[bool, str]:
    """(pass, reason) from the reply body (fence already removed); ReplyInvalid unless it is exactly a
    one-item array whose object has this task_id, a boolean pass and a string reason, and nothing else."""
    value = parse_json(body)
    if not isinstance(value, list):
        raise ReplyInvalid("reply is a JSON object or value, not an array")
    if len(value) != 1:
        raise ReplyInvalid(f"reply array has {len(value)} items, expected exactly 1")
    item = check_verdict_object(value[0], ("task_id", "pass", "reason"), "the array item")
    if item["task_id"] != task_id:
        raise ReplyInvalid(f"task_id {json.dumps(item['task_id'])} does not match {json.dumps(task_id)}")
    passed, reason = item["pass"], item["reason"]
    assert isinstance(passed, bool) and isinstance(reason, str)  # checked by check_verdict_object
    return passed, reason


def judge_reference(
    task: WvTask,
    result: AgentResult,
    *,
    client: ModelClient,
    prompt: PromptText,
    price: WvPrice | None,
    log_path: Path,
) -> JudgeVerdict:
    """Judge one agent attempt with the reference prompt; never raises for a judge problem (API failure,
    quota, truncated or malformed reply): the verdict is then `pass: null` with `judge_error`."""
    if result.task_id != task.task_id:
        raise ValueError(f"result of {result.task_id} given for task {task.task_id}")  # a harness bug
    session = JudgeSession(mode="reference", client=client, price=price, log_path=log_path,
                           prompt_sha256=prompt.sha256)
    turn = session.ask(reference_message(prompt, task, result))
    if isinstance(turn, str):
        return session.failed(result, turn)
    try:
        passed, reason = parse_reference_reply(reply_body(turn), task.task_id)
    except ReplyInvalid as exc:
        return session.verdict(result, judge_error=f"invalid judge reply: {exc}", error_kind="model_error")
    return session.verdict(result, passed=passed, reason=reason)
