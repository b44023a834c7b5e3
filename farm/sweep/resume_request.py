"""What a resume continues: the options a stopped run or sweep was started with (its journal's, else its
manifest's), turned back into its request, and the farm.yaml it read."""

from __future__ import annotations

import json
from pathlib import Path

from farm import manifest as mf
from farm.android.options import AgentOptions, HostSettings
from farm.config import FarmConfig, load_config
from farm.sweep.journal import read_meta
from farm.sweep.request import SweepRequest
from farm.taskset.select import TaskSelection


def saved_request(run_dir: Path) -> str | None:
    """The options a stopped run was started with, as JSON: its journal's, else (a start stopped before its journal
    was written) its manifest's; None when neither holds any."""
    saved = read_meta(run_dir).get("request")
    if saved is not None:
        return saved
    lanes = mf.load(run_dir).lanes if mf.manifest_path(run_dir).is_file() else []
    found = next((lane.detail["request"] for lane in lanes if lane.detail.get("request")), None)
    return None if found is None else json.dumps(found, sort_keys=True)


def _path(value: object) -> Path | None:
    return Path(value) if isinstance(value, str) and value else None


def resume_config(text: str, given: Path | None) -> FarmConfig:
    """The farm.yaml a resume reads: `--config` when given, else the one the stopped run read (the defaults when it
    read none, whatever farm.yaml is in the working directory now); a run saved before its config was kept: the
    default lookup."""
    data = json.loads(text)
    if given is not None or "config" not in data:
        return load_config(given)
    saved = _path(data["config"])
    return load_config(saved) if saved is not None else FarmConfig()


def resumed_config(run_dir: Path, given: Path | None) -> FarmConfig:
    """The farm.yaml `--resume` of `run_dir` reads (see `resume_config`): for what the command does around the
    sweep (its notifiers) as the sweep itself does; `load_config(given)` when the run saved no options."""
    saved = saved_request(run_dir) if run_dir.is_dir() else None
    return resume_config(saved, given) if saved is not None else load_config(given)


def request_from(text: str, given: SweepRequest) -> SweepRequest:
    """The stopped sweep's own options (a resume continues them; the command line only names the run). Paths, the
    deadline, the watchdog and the threshold the command line gives win over the saved ones; saved paths are
    absolute (a resume may run from another directory)."""
    data = json.loads(text)
    return SweepRequest(
        kind=data.get("kind", "sweep"), all_phones=data.get("all_phones", True),
        deadline_s=given.deadline_s if given.deadline_s is not None else data.get("deadline_s"),
        agent=AgentOptions.model_validate(data["agent"]), spread=data["spread"], repeats=data["repeats"],
        executor=data["executor"], profile=data.get("profile"),
        host=HostSettings.model_validate(data["host"]) if data.get("host") else None,
        serials=list(data.get("serials") or []), label=data.get("label"), batch=int(data.get("batch") or 1),
        selection=TaskSelection.model_validate(data["selection"]) if data.get("selection") else None,
        max_tries=data["max_tries"], quarantine_after=data["quarantine_after"],
        fail_under=given.fail_under if given.fail_under is not None else data.get("fail_under"),
        run_id=given.run_id, resume=True, tasks_dir=given.tasks_dir or _path(data.get("tasks_dir")),
        runs_dir=given.runs_dir, config=given.config or _path(data.get("config")),
        probes_dir=given.probes_dir or _path(data.get("probes_dir")),
        idle_timeout_s=given.idle_timeout_s if given.idle_timeout_s is not None else data.get("idle_timeout_s"),
        command=given.command, show_progress=given.show_progress, recheck_s=given.recheck_s,
        min_free_mb=given.min_free_mb, wait=given.wait,
    )
