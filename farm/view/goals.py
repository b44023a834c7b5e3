"""The goal of each task a run ran, for the run page's search: read from the task set, never guessed.

Records do not carry the goal; the manifest records each selected task's id and the SHA-256 of its file. A goal is
taken from a task file only when that file's bytes still hash to what the run recorded, so a task edited since the
run never lends the run its new wording: its goal is then unknown and search covers the rest of the row.

The task set is the one the viewer was given (`create_app(tasks_dir=…)`), else the one the run's farm.yaml named
(`config.tasks_dir` in the manifest: absolute, or relative to the directory above the runs directory, where
`runs/` and `tasks/` sit side by side in a farm's checkout).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from farm import manifest as mf
from farm.errors import FarmError
from farm.taskset.loader import read_task_json

MAX_TASK_FILES = 20_000
"""Task files looked at under one task-set root (the shipped set has a few hundred); the rest are not read."""


def task_roots(runs_dir: Path, manifest: mf.Manifest | None, tasks_dir: Path | None) -> list[Path]:
    """Where the run's task files may be: the viewer's task set, else the one its recorded farm.yaml named."""
    if tasks_dir is not None:
        return [tasks_dir]
    named = manifest.config.get("tasks_dir") if manifest is not None else None
    if not isinstance(named, str) or not named:
        return []
    path = Path(named)
    return [path] if path.is_absolute() else [runs_dir.resolve().parent / path]


def _files_by_id(root: Path) -> dict[str, list[Path]]:
    """Task id (the file's name) → its files under `root`. Listed on every read of a run's index (that is, when
    its records change): a task added after the viewer started is found too."""
    found: dict[str, list[Path]] = {}
    try:
        for n, path in enumerate(sorted(root.rglob("*.json"))):
            if n >= MAX_TASK_FILES:
                break
            found.setdefault(path.stem, []).append(path)
    except OSError:
        return {}
    return found


def run_goals(runs_dir: Path, manifest: mf.Manifest | None, tasks_dir: Path | None) -> dict[str, str]:
    """Task id → goal, for the run's tasks whose file in the task set is byte for byte the one the run ran."""
    if manifest is None or not manifest.tasks:
        return {}
    goals: dict[str, str] = {}
    for root in task_roots(runs_dir, manifest, tasks_dir):
        files = _files_by_id(root)
        for entry in manifest.tasks:
            if entry.id in goals:
                continue
            for path in files.get(entry.id, []):
                try:
                    data, raw = read_task_json(path)
                except FarmError:
                    continue
                if hashlib.sha256(data).hexdigest() == entry.sha256 and isinstance(raw, dict):
                    goal = raw.get("goal")
                    if isinstance(goal, str):
                        goals[entry.id] = goal
                    break
    return goals
