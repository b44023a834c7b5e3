"""Result revisions: every change of a task's view (agent attempt, verdict, re-run, recovery, backfill, reset)
is one file `ROOT/result-revisions/NNNNNNNN.json`, created exclusively and never rewritten, chained by the
SHA-256 of the previous revision. `results.ndjson` gets the same view as one appended line.

Write order (`commit`): the revision file first — it is the commit point — then the `results.ndjson` line. A
crash between the two leaves a revision whose line is missing: `read_state` reports the task in
`results_behind` and `recover` appends the line. Whenever the two disagree the revision wins. Both writes are
whole (the revision through a temp file and a hard link, the line with fsync), so the only partial file a
crash can leave is a torn last line of `results.ndjson`, which readers skip and count.

A revision's `sha256` is the SHA-256 of `canonical_json` of its body (every field but `sha256`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from farm.errors import FarmError
from farm.fsutil import atomic_write_text, create_new_text
from farm.manifest import utc_now
from web_bench.webvoyager.model import TaskView
from web_bench.webvoyager.run_tree import RunTree, append_line, sha256_json

Reason = Literal["agent", "judge", "rerun", "recovery", "backfill", "reset"]
_NAME = re.compile(r"(\d{8})\.json")
_DAMAGED = "the run is damaged: restore the file from a backup, or start a new output directory"


class Revision(BaseModel):
    """One revision file."""

    model_config = ConfigDict(extra="forbid")

    seq: int = Field(ge=1)
    """1-based position in the chain (= the file name)."""
    task_id: str
    """Task whose view changed."""
    reason: Reason
    """What changed it."""
    written_at: str
    """UTC ISO time of the revision."""
    prev_sha256: str | None
    """`sha256` of revision `seq - 1`; null for the first."""
    view: TaskView
    """The task's view from now on."""
    sha256: str
    """SHA-256 of the canonical JSON of every other field."""


@dataclass
class ChainState:
    """The current views and what reading the tree found."""

    views: dict[str, TaskView] = field(default_factory=dict)
    """Task id → current view, in the order tasks first appeared in the chain."""
    revisions: int = 0
    """Revisions in the chain."""
    head_sha256: str | None = None
    """`sha256` of the last revision."""
    results_torn: int = 0
    """`results.ndjson` lines that could not be read (a torn last line after a crash), skipped."""
    results_behind: list[str] = field(default_factory=list)
    """Tasks whose last `results.ndjson` line is missing or differs from their revision (the revision wins)."""


def revision_path(tree: RunTree, seq: int) -> Path:
    """`result-revisions/NNNNNNNN.json`."""
    return tree.revisions_dir / f"{seq:08d}.json"


def view_json(view: TaskView) -> dict[str, JsonValue]:
    """The view as JSON, with the files' key names (`pass`)."""
    return view.model_dump(mode="json", by_alias=True)


def _seqs(directory: Path) -> list[int]:
    if not directory.is_dir():
        return []
    seqs: list[int] = []
    for entry in directory.iterdir():
        if entry.name.startswith("."):
            continue  # a temp file a crash left behind; the revision it was for was never created
        match = _NAME.fullmatch(entry.name)
        if match is None or not entry.is_file():
            raise FarmError(f"{entry}: unexpected entry in the revision chain", hint=_DAMAGED)
        seqs.append(int(match.group(1)))
    seqs.sort()
    for expected, seq in enumerate(seqs, start=1):
        if seq != expected:
            raise FarmError(f"{directory / f'{expected:08d}.json'}: revision missing from the chain", hint=_DAMAGED)
    return seqs


def _load(path: Path, seq: int) -> Revision:
    """Read one revision and check its own hash and its number (the link is checked by the caller)."""
    try:
        raw = json.loads(path.read_bytes())
    except (OSError, ValueError):
        raise FarmError(f"{path}: revision is unreadable or truncated", hint=_DAMAGED) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("sha256"), str):
        raise FarmError(f"{path}: revision has no sha256", hint=_DAMAGED)
    body = {k: v for k, v in raw.items() if k != "sha256"}
    if sha256_json(body) != raw["sha256"]:
        raise FarmError(f"{path}: revision content does not match its sha256 (edited)", hint=_DAMAGED)
    try:
        rev = Revision.model_validate(raw)
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"])
        raise FarmError(f"{path}: invalid revision ({where})", hint=_DAMAGED) from None
    if rev.seq != seq:
        raise FarmError(f"{path}: holds revision {rev.seq} (moved or reordered)", hint=_DAMAGED)
    if rev.view.task_id != rev.task_id:
        raise FarmError(f"{path}: view is of {rev.view.task_id}, revision of {rev.task_id}", hint=_DAMAGED)
    return rev


def read_chain(tree: RunTree) -> list[Revision]:
    """Every revision in order, each verified (a gap, an edit, a broken link or an unreadable file is a FarmError
    naming the file)."""
    _check_no_interrupted_rebuild(tree)
    chain: list[Revision] = []
    prev: str | None = None
    for seq in _seqs(tree.revisions_dir):
        rev = _load(revision_path(tree, seq), seq)
        if rev.prev_sha256 != prev:
            raise FarmError(f"{revision_path(tree, seq)}: prev_sha256 does not match revision {seq - 1} "
                            "(broken chain)", hint=_DAMAGED)
        chain.append(rev)
        prev = rev.sha256
    return chain


def _last_lines(tree: RunTree) -> tuple[dict[str, dict[str, JsonValue]], int]:
    """Last readable `results.ndjson` view per task, and the count of unreadable lines."""
    last: dict[str, dict[str, JsonValue]] = {}
    bad = 0
    if not tree.results.is_file():
        return last, bad
    with tree.results.open("rb") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                view = TaskView.model_validate_json(line)
            except ValidationError:
                bad += 1  # a torn line from a crash mid-append: the revisions hold the truth
                continue
            last[view.task_id] = view_json(view)
    return last, bad


def read_state(tree: RunTree) -> ChainState:
    """The verified chain's current views, and how `results.ndjson` compares with it."""
    state = ChainState()
    for rev in read_chain(tree):
        state.views[rev.task_id] = rev.view
        state.revisions, state.head_sha256 = rev.seq, rev.sha256
    lines, state.results_torn = _last_lines(tree)
    state.results_behind = [
        task_id for task_id, view in state.views.items() if lines.get(task_id) != view_json(view)
    ] + [task_id for task_id in lines if task_id not in state.views]
    return state


def current(tree: RunTree) -> dict[str, TaskView]:
    """Task id → current view, from the verified revision chain."""
    return read_state(tree).views


def recover(tree: RunTree) -> list[str]:
    """Append the revision's view for every task whose `results.ndjson` line is missing or stale (a crash
    between the two writes); returns those task ids."""
    state = read_state(tree)
    fixed = [task_id for task_id in state.results_behind if task_id in state.views]
    for task_id in fixed:
        append_line(tree.results, state.views[task_id].model_dump_json(by_alias=True))
    return fixed


def _revision_text(seq: int, view: TaskView, reason: Reason, prev: str | None) -> tuple[str, Revision]:
    body: dict[str, JsonValue] = {"seq": seq, "task_id": view.task_id, "reason": reason, "written_at": utc_now(),
                                  "prev_sha256": prev, "view": view_json(view)}
    sha = sha256_json(body)
    rev = Revision.model_validate({**body, "sha256": sha})
    return json.dumps({**body, "sha256": sha}, ensure_ascii=False, indent=2) + "\n", rev


def commit(tree: RunTree, view: TaskView, reason: Reason) -> Revision:
    """Record a new view of one task: the next revision (exclusive create), then its `results.ndjson` line."""
    tree.task_dir(view.task_id)  # refuses an id that cannot name a task directory
    _check_no_interrupted_rebuild(tree)  # never start a fresh chain beside a staged one
    seqs = _seqs(tree.revisions_dir)
    prev: str | None = None
    if seqs:
        # Only the head is verified here (the whole chain is verified on every read): it gives the link.
        prev = _load(revision_path(tree, seqs[-1]), seqs[-1]).sha256
    text, rev = _revision_text(len(seqs) + 1, view, reason, prev)
    create_new_text(revision_path(tree, rev.seq), text, what="result revision (is another scheduler writing here?)")
    append_line(tree.results, view.model_dump_json(by_alias=True))
    return rev


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")


def _check_no_interrupted_rebuild(tree: RunTree) -> None:
    if tree.revisions_dir.exists():
        return
    staged = sorted(tree.root.glob(".result-revisions.new-*"))
    if staged:
        raise FarmError(f"{staged[-1]}: a rebuild of the revision chain was interrupted",
                        hint=f"rename it to {tree.revisions_dir.name} and run the command again")


def rebuild(tree: RunTree, views: list[TaskView], reason: Reason, *, keep_old: bool = False) -> list[Revision]:
    """Replace the chain by a new one holding `views` in the given order (one revision each), and rewrite
    `results.ndjson` to those views in that order. With `keep_old` the old chain and the old `results.ndjson`
    move to `result-revisions.old-<time>/`; else the old chain is deleted.

    The new chain is built in a staging directory and renamed into place, so readers see the old chain or the
    new one; a crash between moving the old one away and renaming the new one in is named by the next read.
    """
    ids = [v.task_id for v in views]
    if len(set(ids)) != len(ids):
        raise FarmError("rebuild: a task appears twice in the new chain", hint="pass one view per task")
    stamp = _stamp()
    staging = tree.root / f".result-revisions.new-{stamp}-{os.getpid()}"
    staged_tree = RunTree(tree.root)
    staged_tree.revisions_dir = staging
    chain: list[Revision] = []
    prev: str | None = None
    staging.mkdir(parents=True)
    for seq, view in enumerate(views, start=1):
        tree.task_dir(view.task_id)
        text, rev = _revision_text(seq, view, reason, prev)
        create_new_text(revision_path(staged_tree, seq), text, what="result revision")
        chain.append(rev)
        prev = rev.sha256
    aside = tree.root / (f"result-revisions.old-{stamp}" if keep_old else f".result-revisions.del-{stamp}")
    if tree.revisions_dir.exists():
        tree.revisions_dir.rename(aside)
    if keep_old and tree.results.is_file():
        aside.mkdir(exist_ok=True)
        shutil.copy2(tree.results, aside / "results.ndjson")  # the old line history goes with the old chain
    staging.rename(tree.revisions_dir)
    atomic_write_text(tree.results, "".join(v.model_dump_json(by_alias=True) + "\n" for v in views))
    if not keep_old and aside.exists():
        shutil.rmtree(aside)
    return chain

