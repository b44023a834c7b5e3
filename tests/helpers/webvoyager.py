"""Builders of the WebVoyager lane tests: tasks, agent results, verdicts, task views, and the files of one
attempt directory (`task.json`, `trace.ndjson`, `session.json`, `result.json`, `judge-<mode>.ndjson`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from pathlib import Path

from pydantic import JsonValue

from farm.manifest import CodeFingerprint, LaneEntry, Manifest, utc_now
from farm.results.record import Tokens
from farm.results.store import RunStore
from web_bench.webvoyager.dataset import task_sha256, tasks_sha256
from web_bench.webvoyager.model import (
    AgentResult,
    AgentStatus,
    ErrorKind,
    JudgeVerdict,
    ModelCall,
    Site,
    TaskView,
    UsageTotals,
    WvTask,
)
from web_bench.webvoyager.revisions import commit
from web_bench.webvoyager.run import LANE_DIR
from web_bench.webvoyager.run_tree import RunTree, WvManifest, create_manifest

STARTED_AT = "2026-09-16T08:00:00Z"
"""Fixed start time of every built attempt (tests stay deterministic)."""
FINISHED_AT = "2026-09-16T08:01:00Z"
"""Fixed end time of every built attempt."""

_SITES: dict[str, Site] = {"Allrecipes": "Allrecipes", "Apple": "Apple", "Amazon": "Amazon"}
_WEBSITES = {"Allrecipes": "https://www.allrecipes.com/", "Apple": "https://www.apple.com/",
             "Amazon": "https://www.amazon.com/"}


def site_of(task_id: str) -> Site:
    """The site of an `Allrecipes--0` style id."""
    return _SITES[task_id.split("--", 1)[0]]


def make_task(task_id: str = "Allrecipes--0", *, text: str | None = None, website: str | None = None) -> WvTask:
    """A task of the id's site; the text defaults to one naming the id (so two ids never share a text)."""
    site = site_of(task_id)
    return WvTask(task_id=task_id, confirmed_task=text if text is not None else f"Find the answer for {task_id}.",
                  website=website or _WEBSITES[site], site=site)


def make_tasks(ids: Sequence[str]) -> list[WvTask]:
    """`make_task` for each id, in order."""
    return [make_task(task_id) for task_id in ids]


def make_call(role: str = "agent", *, step: int | None = 1, retry: bool = False, input_new: int = 100,
              output: int = 20, cost_usd: float | None = 0.0001) -> ModelCall:
    """One successful model request with usage."""
    return ModelCall.model_validate({
        "role": role, "step": step, "retry": retry, "started_at": STARTED_AT, "duration_ms": 500.0,
        "outcome": "ok", "status": 200, "model": "stub-model", "usage_expected": True, "cost_usd": cost_usd,
        "usage": Tokens(input_new=input_new, cache_read=0, cache_write=0, output=output),
    })


def _totals(calls: Sequence[ModelCall]) -> UsageTotals:
    # Every built call reports usage and a price, so the totals are simple sums.
    tokens = Tokens.total(c.usage for c in calls if c.usage is not None)
    cost = sum(c.cost_usd or 0.0 for c in calls)
    return UsageTotals(tokens=tokens if calls else None, tokens_observed=tokens if calls else Tokens(),
                       cost_usd=cost if calls else None, cost_observed_usd=cost, request_count=len(calls),
                       retry_count=sum(1 for c in calls if c.retry))


def make_agent_result(task_id: str = "Allrecipes--0", *, attempt: int = 1, status: AgentStatus = "completed",
                      final_answer: str | None = "The answer.", error_kind: ErrorKind | None = None,
                      steps: int = 3, calls: int = 2) -> AgentResult:
    """A finished agent attempt with `calls` model requests (one per step) and `steps` tool calls."""
    model_calls = [make_call(step=n) for n in range(1, calls + 1)]
    failed = status != "completed"
    return AgentResult(
        task_id=task_id, attempt=attempt, status=status, final_answer=final_answer,
        error=f"{status}: built failure" if failed else None, error_kind=error_kind, steps=steps,
        model_rounds=calls, model_steps=calls, started_at=STARTED_AT, finished_at=FINISHED_AT, duration_ms=60000.0,
        model="stub-model", model_calls=model_calls, usage=_totals(model_calls),
    )


def make_verdict(attempt: int = 1, *, passed: bool | None = True, mode: str = "reference",
                 judge_error: str | None = None, error_kind: ErrorKind | None = None) -> JudgeVerdict:
    """A judge verdict on `attempt`; `passed=None` gives an unjudged verdict with a `judge_error`."""
    calls = [make_call("judge", step=1)]
    return JudgeVerdict.model_validate({
        "mode": mode, "pass": passed, "reason": "built verdict", "attempt": attempt,
        "judge_error": judge_error if judge_error is not None or passed is not None else "format error",
        "error_kind": error_kind, "prompt_sha256": "0" * 64, "model": "stub-model", "model_calls": calls,
        "usage": _totals(calls), "judged_at": FINISHED_AT,
    })


def make_view(task_id: str = "Allrecipes--0", *, attempt: int = 1, status: AgentStatus = "completed",
              passed: bool | None = True, judged: bool = True, agent: AgentResult | None = None,
              superseded: Sequence[int] = ()) -> TaskView:
    """A task view: the attempt (built unless given) and, when `judged`, a verdict `passed` on it."""
    result = agent or make_agent_result(task_id, attempt=attempt, status=status)
    verdict = make_verdict(result.attempt, passed=passed) if judged else None
    return TaskView(task_id=task_id, site=site_of(task_id), agent=result, judge=verdict,
                    superseded_attempts=list(superseded))


def _dump(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def write_attempt_files(directory: Path, task: WvTask, result: AgentResult | None = None, *,
                        session: JsonValue = None, trace: Sequence[JsonValue] | None = None,
                        judge: JudgeVerdict | None = None, omit: Collection[str] = ()) -> Path:
    """Write one attempt directory the way a finished worker leaves it and return it.

    `task.json`, `trace.ndjson` (one JSON line per event; `trace=[]` writes an empty file), `session.json`
    (built events unless given), `result.json` (built unless given) and, with `judge`, `judge-<mode>.ndjson`.
    Names in `omit` are not written.
    """
    directory.mkdir(parents=True, exist_ok=True)
    result = result or make_agent_result(task.task_id)
    events: list[JsonValue] = list(trace) if trace is not None else [
        {"event": "request", "step": 1, "at": STARTED_AT},
        {"event": "response", "step": 1, "at": FINISHED_AT},
    ]
    files: dict[str, str] = {
        "task.json": task.model_dump_json(indent=2) + "\n",
        "trace.ndjson": "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events),
        "session.json": _dump(session if session is not None else {
            "task_id": task.task_id, "events": [{"role": "user", "text": task.confirmed_task},
                                                {"role": "assistant", "text": result.final_answer}]}),
        "result.json": result.model_dump_json(indent=2) + "\n",
    }
    if judge is not None:
        files[f"judge-{judge.mode}.ndjson"] = judge.model_dump_json(by_alias=True) + "\n"
    for name, text in files.items():
        if name not in omit:
            (directory / name).write_text(text, encoding="utf-8")
    return directory


def make_manifest(tasks: Sequence[WvTask], *, run_id: str = "wv-test", **fields: object) -> WvManifest:
    """A manifest selecting `tasks` in order (reference judge, stub models); `fields` override any field."""
    shas = {t.task_id: task_sha256(t) for t in tasks}
    ids = [t.task_id for t in tasks]
    base: dict[str, object] = {
        "run_id": run_id, "created_at": STARTED_AT, "task_ids": ids, "task_sha256": shas,
        "set_sha256": tasks_sha256(tasks), "judge_mode": "reference", "judge_prompt_sha256": "0" * 64,
        "agent": {"provider": "stub", "model": "stub-model", "protocol": "openai-completions"},
        "judge": {"provider": "stub", "model": "stub-model", "protocol": "openai-completions"},
        "pricing": {"agent": {"input": 0.3, "output": 1.2}}, "code": CodeFingerprint(git_commit="0" * 40),
    }
    return WvManifest.model_validate({**base, **fields})


def build_run(root: Path, tasks: Sequence[WvTask], *, judged: bool = True, passed: bool | None = True) -> RunTree:
    """A finished run tree of `tasks`: manifest, attempt-1 files (with the judge file when `judged`) and one
    agent revision plus, when `judged`, one judge revision per task."""
    tree = RunTree(root)
    create_manifest(tree, make_manifest(tasks))
    for task in tasks:
        view = make_view(task.task_id, judged=judged, passed=passed)
        write_attempt_files(tree.task_dir(task.task_id), task, view.agent, judge=view.judge)
        commit(tree, view.model_copy(update={"judge": None}), "agent")
        if judged:
            commit(tree, view, "judge")
    return tree


def tree_digest(root: Path) -> dict[str, str]:
    """Relative path → SHA-256 of every file under `root` (directories appear as `path/` → ""): equal digests
    mean nothing was changed, added or removed."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_dir():
            out[rel + "/"] = ""
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def joined_run(runs_dir: Path, run_id: str, tasks: Sequence[WvTask]) -> RunTree:
    """`runs_dir/run_id/`: a farm run whose only lane is WebVoyager (joined through the run store, as the lane
    joins it), holding `build_run`'s finished tree of `tasks` and no report yet."""
    RunStore.join(runs_dir, run_id, LaneEntry(lane="webvoyager", outputs=[f"{LANE_DIR}/report.md"]),
                  new=lambda: Manifest(run_id=run_id, created_at=utc_now()))
    return build_run(runs_dir / run_id / LANE_DIR, tasks)
