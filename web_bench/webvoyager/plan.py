"""What a WebVoyager run will do, decided before any credential is read: which tasks get a new agent
attempt, which only a judge verdict, and which are already done. `--dry-run` prints this and stops."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from web_bench.webvoyager.model import JudgeMode, TaskView, WvTask

WorkKind = Literal["quota_retry", "service_retry", "rerun", "judge", "new"]
"""Why a task is queued, in the order they run: quota-interrupted tasks first (from scratch), then tasks a
service outage stopped, then explicit re-runs, then verdicts still owed, then tasks that never ran."""
_ORDER: tuple[WorkKind, ...] = ("quota_retry", "service_retry", "rerun", "judge", "new")


class WorkItem(BaseModel):
    """One queued piece of work."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    """Task id."""
    kind: WorkKind
    """Why it is queued."""
    attempt: int = Field(ge=1)
    """The agent attempt to create (agent work) or to judge (`judge`)."""
    reason: str = ""
    """Why, in words (from recovery.json or the view)."""

    @property
    def runs_agent(self) -> bool:
        """Whether the item starts a new agent attempt (else it only judges)."""
        return self.kind != "judge"


class Plan(BaseModel):
    """The queue of a run, in dispatch order."""

    model_config = ConfigDict(extra="forbid")

    items: list[WorkItem] = Field(default_factory=list)
    """Work in dispatch order."""
    done: list[str] = Field(default_factory=list)
    """Tasks already finished and judged (or `--judge none`): skipped."""

    def agent_items(self) -> list[WorkItem]:
        """Items that start an agent attempt."""
        return [i for i in self.items if i.runs_agent]

    def judge_items(self) -> list[WorkItem]:
        """Items that only judge."""
        return [i for i in self.items if not i.runs_agent]


def needs_verdict(view: TaskView, judge_mode: JudgeMode) -> bool:
    """Whether the view still owes a verdict under `judge_mode` (an unjudged verdict is owed again)."""
    if judge_mode == "none":
        return False
    return view.judge is None or view.judge.passed is None or view.judge.mode != judge_mode


def plan_work(
    tasks: Sequence[WvTask],
    views: Mapping[str, TaskView],
    *,
    judge_mode: JudgeMode,
    quota_retry: Mapping[str, str] = {},
    service_retry: Mapping[str, str] = {},
    rerun_ids: Sequence[str] = (),
    judge_only: bool = False,
) -> Plan:
    """The queue over `tasks` (selection order) given the current views and recovery lists (task → reason).

    A finished task is never run again unless it is named in `rerun_ids`; a normal failure is not retried.
    `judge_only` plans verdicts only.
    """
    buckets: dict[WorkKind, list[WorkItem]] = {kind: [] for kind in _ORDER}
    done: list[str] = []
    reruns = set(rerun_ids)
    for task in tasks:
        view = views.get(task.task_id)
        next_attempt = view.agent.attempt + 1 if view is not None else 1
        item: WorkItem | None = None
        if not judge_only:
            if task.task_id in quota_retry:
                item = WorkItem(task_id=task.task_id, kind="quota_retry", attempt=next_attempt,
                                reason=quota_retry[task.task_id])
            elif task.task_id in service_retry:
                item = WorkItem(task_id=task.task_id, kind="service_retry", attempt=next_attempt,
                                reason=service_retry[task.task_id])
            elif task.task_id in reruns:
                item = WorkItem(task_id=task.task_id, kind="rerun", attempt=next_attempt, reason="--rerun-ids")
            elif view is None:
                item = WorkItem(task_id=task.task_id, kind="new", attempt=1)
        if item is None and view is not None and needs_verdict(view, judge_mode):
            owed = view.judge.judge_error if view.judge is not None and view.judge.judge_error else "no verdict yet"
            item = WorkItem(task_id=task.task_id, kind="judge", attempt=view.agent.attempt, reason=owed)
        if item is None:
            if view is not None:
                done.append(task.task_id)
            continue
        buckets[item.kind].append(item)
    return Plan(items=[i for kind in _ORDER for i in buckets[kind]], done=done)
