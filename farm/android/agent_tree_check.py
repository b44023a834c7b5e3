"""`farm agent check`: an `eval/<run>/` tree an agent app wrote, held to the contract (docs/agent-app.md).

The tree's own files (scores.jsonl, metrics.json, summary.md) are checked here, each attempt's run record by
`farm.android.agent_run_check`. A phone's tree is checked where the harness would read it: pulled (through the
harness's own pull) into a temporary folder first.
"""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from farm.android import agent_contract as ac
from farm.android.agent_run_check import (
    FIXES,
    MAX_JSON_BYTES,
    MAX_SCORE_LINE_BYTES,
    MAX_SCORES_BYTES,
    MAX_TASKS,
    TreeReport,
    check_transcript,
    json_object,
    read_bounded,
    single_component,
    validate_into,
)
from farm.errors import FarmError

if TYPE_CHECKING:
    from farm.config import FarmConfig


def check_scores(report: TreeReport, root: Path) -> list[ac.ScoreLine]:
    """scores.jsonl, line by line."""
    raw = read_bounded(report, root / "scores.jsonl", "scores.jsonl", MAX_SCORES_BYTES,
                       "write one JSON line per task: without this file every task is an infrastructure error",
                       required=True)
    lines: list[ac.ScoreLine] = []
    seen: dict[str, int] = {}
    for number, text in enumerate((raw or b"").split(b"\n"), 1):
        if not text.strip():
            continue
        if len(text) > MAX_SCORE_LINE_BYTES:
            report.add("scores.jsonl", number, "-", f"line over {MAX_SCORE_LINE_BYTES // 1024 // 1024} MB: the pull "
                       "keeps it as an error record", "keep a line short (the whole story belongs in <id>/run/)")
            continue
        data = json_object(report, text, "scores.jsonl", number)
        line = validate_into(report, ac.ScoreLine, data, "scores.jsonl", number) if data is not None else None
        if not isinstance(line, ac.ScoreLine):
            continue
        report.tasks += 1
        if line.id in seen:
            report.add("scores.jsonl", number, "id", f"{line.id!r} already on line {seen[line.id]}",
                       "write one line per task")
            continue
        seen[line.id] = number
        lines.append(line)
        for name in ("partition", "expect"):
            if getattr(line, name) is None:
                report.add("scores.jsonl", number, name, "missing: the record has no " + name, FIXES[name],
                           warning=True)
        ran = line.outcome not in ("skipped", "error")
        if ran and not line.tokens.model_dump(exclude_none=True):
            report.add("scores.jsonl", number, "tokens", "no token counts: reports show tokens and cost unknown",
                       "write input, cacheRead, cacheWrite and output", warning=True)
        if ran and not line.metrics.model_dump(exclude_none=True):
            report.add("scores.jsonl", number, "metrics", "no 运行小结: the report's time table leaves it out",
                       "write firstFeedbackMs, roundTrips, modelMs, screenReadMs, actionMs, otherMs, totalMs",
                       warning=True)
    return lines


def check_metrics(report: TreeReport, root: Path, lines: list[ac.ScoreLine]) -> None:
    """metrics.json: the same 运行小结 per task as the scores lines."""
    raw = read_bounded(report, root / "metrics.json", "metrics.json", MAX_JSON_BYTES,
                       "write {task id: metrics} (farm reads the scores lines' metrics; people read this file)",
                       required=False)
    data = json_object(report, raw, "metrics.json", 0) if raw is not None else None
    parsed = validate_into(report, ac.MetricsFile, data, "metrics.json", 0) if data is not None else None
    if not isinstance(parsed, ac.MetricsFile):
        return
    for line in lines:
        mine = parsed.root.get(line.id)
        if mine is None and line.outcome != "skipped":
            report.add("metrics.json", 0, line.id, "no entry for this task", "write its scores line's metrics",
                       warning=True)
        elif mine is not None and mine.model_dump() != line.metrics.model_dump():
            report.add("metrics.json", 0, line.id, "differs from its scores.jsonl metrics (farm reads those)",
                       "write the same object in both", warning=True)


def check_summary(report: TreeReport, root: Path) -> None:
    """summary.md: people write re-judgements under `## 人工改判`, which the reports read."""
    from farm.scoring.overrides import SECTION, parse_summary_section

    raw = read_bounded(report, root / "summary.md", "summary.md", MAX_JSON_BYTES,
                       f"write the summary with an empty `## {SECTION}` section: without it re-judgements go to "
                       "overrides.yaml only", required=False)
    if raw is None:
        return
    text = raw.decode("utf-8", "replace")
    if not any(ln.startswith("#") and SECTION in ln for ln in text.splitlines()):
        report.add("summary.md", 0, "-", f"no `## {SECTION}` section", "end the file with that heading, nothing "
                   "under it: people write re-judgements there", warning=True)
    try:
        parse_summary_section(text)
    except FarmError as exc:
        where, _, msg = exc.message.partition(": ")
        line = int(where.rsplit(":", 1)[-1]) if where.rsplit(":", 1)[-1].isdigit() else 0
        report.add("summary.md", line, SECTION, f"{msg}: farm report refuses the run",
                   "leave the section empty; people write `- <id>: fail → pass, 证据: 「…」` lines")


def check_tree(root: Path, *, shown_as: str | None = None, refused: list[str] | None = None,
               on_phone: bool = False) -> TreeReport:
    """Check one eval tree on disk; `refused` are the entries a pull left out (each a violation); `on_phone`: the
    tree is a copy of the phone's own (nothing in it is farm's)."""
    if not root.is_dir():
        raise FarmError(f"{root}: not a directory", hint="pass a pulled eval tree (e.g. runs/<run>/android/<serial>/"
                                                         "units/<unit>.try1/) or any folder with scores.jsonl")
    report = TreeReport(root=shown_as or str(root))
    for entry in refused or []:
        report.add(entry.split(": ", 1)[0], 0, "-", f"refused by the pull ({entry.split(': ', 1)[-1]})",
                   "write plain files and directories with plain names, within the pull's size caps")
    lines = check_scores(report, root)
    check_metrics(report, root, lines)
    check_summary(report, root)
    _check_units_file(report, root, {line.id for line in lines})
    named = set()
    for line in lines[:MAX_TASKS]:
        named.add(line.id)
        if line.outcome in ("skipped", "error"):
            continue
        if not single_component(line.id):
            report.add("scores.jsonl", 0, "id", f"{line.id[:60]!r} is not one path component",
                       "use the bundle's task id")
            continue
        check_transcript(report, root, line, on_phone=on_phone)
    for child in sorted(islice(root.iterdir(), MAX_TASKS)):
        if child.is_dir() and not child.is_symlink() and child.name not in named:
            report.add(child.name, 0, "-", "a directory no scores line names", "write its task's scores line, or "
                       "leave only task directories in the tree", warning=True)
    return report


def _check_units_file(report: TreeReport, root: Path, have: set[str]) -> None:
    """A pulled try's `units.json` (the harness's) names the tasks the job ran: each needs its line."""
    try:
        units = json.loads((root / "units.json").read_text(encoding="utf-8"))["units"]
        wanted = [str(u["task_id"]) for u in units]
    except (OSError, ValueError, KeyError, TypeError):
        return
    for task_id in wanted:
        if task_id not in have:
            report.add("scores.jsonl", 0, "-", f"no line for task {task_id!r}, which this job ran",
                       "write a line for every task of the bundle (skipped ones too)")


def check_device(cfg: FarmConfig, *, serial: str, run: str, profile: str | None, workdir: Path) -> TreeReport:
    """Pull the phone's `eval/<run>/` into `workdir` (through the harness's own pull) and check it there."""
    from adbutils import AdbError

    from farm.android import devices
    from farm.android.pull import pull_tree
    from farm.names import check_name

    check_name(run, "--run")
    _name, prof = cfg.profile(profile)
    phone = devices.select(devices.discover(cfg), [serial], False)[0]
    if phone.state != "device":
        raise FarmError(f"{serial}: adb state is {phone.state}", hint="reconnect the phone")
    remote = prof.eval_dir(run)
    device = phone.device()
    try:
        if not device.sync.exists(remote):
            raise FarmError(f"{serial}: {remote}: no such run on the phone", hint="check --run and --profile")
        pulled = pull_tree(device, remote, workdir, cfg.pull)
    except (AdbError, OSError) as exc:
        raise FarmError(f"{serial}: cannot reach the phone ({exc})") from None
    return check_tree(workdir, shown_as=f"{serial}:{remote}", refused=pulled.refused, on_phone=True)
