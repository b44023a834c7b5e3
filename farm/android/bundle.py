"""The task bundle pushed to the phone (`-e evalTasks`) (bundleVersion 1)."""

from __future__ import annotations

import json

from pydantic import JsonValue

from farm.android.executor import ResolvedTask

BUNDLE_VERSION = 1


def bundle_json(run: str, tasks: list[ResolvedTask]) -> str:
    """`{"bundleVersion": 1, "run": …, "tasks": [task objects, placeholders resolved]}`.

    Each task object is the task file's JSON plus `directory` (its place in the task set), which
    the app needs for `evalSet` selection.
    """
    objects: list[JsonValue] = []
    for rt in tasks:
        obj = rt.task.model_dump(mode="json", by_alias=True, exclude_none=True)
        obj["directory"] = rt.directory
        objects.append(obj)
    return json.dumps({"bundleVersion": BUNDLE_VERSION, "run": run, "tasks": objects}, ensure_ascii=False)


def bundle_device_path(files_dir: str, run: str) -> str:
    """Where the bundle goes: next to, not inside, the app's `eval/<run>/`."""
    return f"{files_dir}/eval-tasks/{run}.json"
