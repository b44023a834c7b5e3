"""The shared ground of `farm agent check` (findings, bounded reads) and its check of one attempt's run record
(`<id>/run/`: final.json, steps.jsonl and the screenshots it names).

A violation is something the harness cannot use as the app meant it (an attempt it cannot re-score, a screenshot
named but absent); a warning is something the reports or the viewer will lack (screenshots, screen text, tokens).
Everything read is bounded: files by size, steps by count, the findings kept by number.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from farm.android import agent_contract as ac
from farm.android import pull_limits
from farm.android.pull_limits import TooLong, bounded_lines
from farm.scoring.transcript import HARNESS_LOOK_FILE, HarnessLook

_MB = 1024 * 1024
MAX_SCORES_BYTES = 8 * _MB
"""Largest scores.jsonl checked (a run of thousands of tasks with long answers stays far below)."""
MAX_SCORE_LINE_BYTES = 1 * _MB
"""Longest scores.jsonl line (the pull's line cap, `farm.android.pull_limits`: a longer line is an error record)."""
MAX_JSON_BYTES = 8 * _MB
"""Largest metrics.json, final.json or summary.md read (the viewer's bound for final.json)."""
MAX_STEPS_BYTES = 64 * _MB
"""Largest steps.jsonl read (the pull's default per-file cap)."""
MAX_LINE_BYTES = 4 * _MB
"""Longest steps.jsonl line parsed (the viewer's bound: a longer line is not shown)."""
MAX_STEPS = 2000
"""Steps checked per task (the viewer shows no more)."""
MAX_TASKS = 5000
"""Task directories checked per tree."""
MAX_KEPT = 1000
"""Problems kept in the report; the rest are counted."""
_IMAGE_MAGIC = {".png": (b"\x89PNG",), ".jpg": (b"\xff\xd8\xff",), ".jpeg": (b"\xff\xd8\xff",),
                ".gif": (b"GIF8",), ".webp": (b"RIFF",)}
_SHOT = re.compile(ac.SCREENSHOT_NAME)
DOC = "docs/agent-app.md"

# How to fix a field, by its path in the file (the first key that matches wins).
FIXES = {
    "id": "write the task id from the bundle",
    "outcome": "use succeeded, failed, confirmation, takeover, skipped or error",
    "partition": "copy the task's partition from the bundle (tune or holdout)",
    "expect": "copy the task's expect from the bundle",
    "endReason": "use answer, give_up, confirm, takeover, max_steps, timeout, repeat or error",
    "execution": "use live (simulated is for the virtual phone only)",
    "tokens": "write counts from 0 to 10^12, or null when unknown",
    "costUsd": "write USD from the evalPrice* extras, or null when unknown",
    "metrics": "write milliseconds from 0 to 1e11 (counts from 0), or null when unknown",
    "steps": "write the number of actions taken",
    "evidence": "write the evidence object of docs/agent-app.md (no freshLooks, probes, appChoices or judgeVerdicts)",
    "observation": "write {\"text\": screen text, \"screenshot\": file name} for every step",
    "step": "number the steps from 1",
}


@dataclass(frozen=True)
class Problem:
    """One finding: `file:line:field: problem — fix` (line 0 = the whole file, field `-` = the whole line)."""

    file: str
    line: int
    field: str
    problem: str
    fix: str
    warning: bool = False

    def text(self) -> str:
        """The one line printed for it."""
        return f"{self.file}:{self.line}:{self.field}: {self.problem} — {self.fix}"


@dataclass
class TreeReport:
    """What checking one tree found."""

    root: str
    """The tree as the user named it (a directory, or `serial:remote path`)."""
    problems: list[Problem] = field(default_factory=list)
    """Violations, in file order (at most MAX_KEPT)."""
    warnings: list[Problem] = field(default_factory=list)
    """What reports and the viewer will lack (at most MAX_KEPT)."""
    more_problems: int = 0
    """Violations found past MAX_KEPT."""
    more_warnings: int = 0
    """Warnings found past MAX_KEPT."""
    tasks: int = 0
    """Scores lines read."""

    def add(self, file: str, line: int, where: str, problem: str, fix: str, *, warning: bool = False) -> None:
        """Keep one finding (or count it, past the bound)."""
        kept = self.warnings if warning else self.problems
        if len(kept) < MAX_KEPT:
            kept.append(Problem(file, line, where or "-", problem, fix, warning))
        elif warning:
            self.more_warnings += 1
        else:
            self.more_problems += 1

    @property
    def violations(self) -> int:
        """Every violation found, kept or counted."""
        return len(self.problems) + self.more_problems


def fix_for(loc: str) -> str:
    """How to fix the field at `loc` (a dotted path in the file)."""
    for key, fix in FIXES.items():
        if loc == key or loc.startswith(key + "."):
            return fix
    return f"see {DOC}"


def validate_into(report: TreeReport, model: type[BaseModel], data: object, file: str, line: int) -> BaseModel | None:
    """`data` as `model`, each error a violation at its field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors(include_url=False)[:20]:
            loc = ".".join(str(p) for p in err["loc"]) or "-"
            got = f" (got {json.dumps(err['input'], ensure_ascii=False)[:40]})" if err["type"] != "missing" else ""
            report.add(file, line, loc, f"{err['msg']}{got}", fix_for(loc))
        return None


def read_bounded(report: TreeReport, path: Path, file: str, bound: int, fix: str, *, required: bool) -> bytes | None:
    """A file's bytes when it is a regular file within `bound`; else a finding (violation or warning)."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        report.add(file, 0, "-", "not a regular file", "write a plain file")
        return None
    if not path.exists():
        report.add(file, 0, "-", "missing", fix, warning=not required)
        return None
    size = path.stat().st_size
    if size > bound:
        report.add(file, 0, "-", f"{size / _MB:.1f} MB, over the {bound // _MB} MB farm agent check reads",
                   "keep it smaller (long texts belong in <id>/run/, one file per attempt)")
        return None
    return path.read_bytes()


def json_object(report: TreeReport, raw: bytes, file: str, line: int) -> dict[str, Any] | None:
    """`raw` parsed as one JSON object (pydantic's parser: depth-limited, no NaN); else a violation."""
    try:
        data = from_json(raw)
    except ValueError as exc:
        report.add(file, line, "-", f"not JSON ({str(exc)[:80]})", "write one JSON object (UTF-8, no NaN)")
        return None
    if not isinstance(data, dict):
        report.add(file, line, "-", f"a JSON {type(data).__name__}, not an object", "write one JSON object")
        return None
    return data


def single_component(name: str) -> bool:
    """Whether a task id names one directory of the tree (as the harness takes it, `with_evidence`)."""
    return name not in ("", ".", "..") and "/" not in name and "\\" not in name and "\0" not in name


def check_transcript(report: TreeReport, root: Path, line: ac.ScoreLine, *, on_phone: bool = False) -> None:
    """`<id>/run/`: final.json (what the host re-scores) and steps.jsonl (what the viewer and checks read)."""
    base = f"{line.id}/run"
    run = root / line.id / "run"
    if not run.is_dir() or run.is_symlink():
        report.add(base, 0, "-", "missing: the host cannot re-score the attempt, its record becomes an "
                   "infrastructure error", "write <id>/run/final.json and steps.jsonl for every task that ran")
        return
    raw = read_bounded(report, run / "final.json", f"{base}/final.json", MAX_JSON_BYTES,
                       "write final.json when the attempt ends: without it the record is an error (no transcript "
                       "to score)", required=True)
    data = json_object(report, raw, f"{base}/final.json", 0) if raw is not None else None
    final = validate_into(report, ac.AgentFinal, data, f"{base}/final.json", 0) if data is not None else None
    if isinstance(final, ac.AgentFinal) and final.evidence is None:
        if final.end_reason is None and not final.answer:
            report.add(f"{base}/final.json", 0, "endReason", "no endReason and no answer: the host scores the "
                       "end as unknown (never a pass)", FIXES["endReason"])
        report.add(f"{base}/final.json", 0, "evidence", "no evidence: asked_user and confirmation_shows checks "
                   "see no questions and no card", "write evidence.asks and evidence.confirmations", warning=True)
    if (run / HARNESS_LOOK_FILE).exists() and (on_phone or not _farms_look(run / HARNESS_LOOK_FILE)):
        # On the phone only the app can have written it; in a pulled tree a valid one is farm's own look.
        report.add(f"{base}/{HARNESS_LOOK_FILE}", 0, "-", "written by the app: farm deletes it when it pulls the tree "
                   "and writes its own look (only the harness looks)", f"do not write {HARNESS_LOOK_FILE}")
    check_steps(report, run, base)


def _farms_look(path: Path) -> bool:
    """Whether `path` is a look farm wrote (a valid `HarnessLook`, within the JSON bound)."""
    try:
        if path.stat().st_size > MAX_JSON_BYTES:
            return False
        HarnessLook.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return False
    return True


def check_steps(report: TreeReport, run: Path, base: str) -> None:
    """steps.jsonl, line by line, and the screenshots it names."""
    file = f"{base}/steps.jsonl"
    path = run / "steps.jsonl"
    if not path.is_file() or path.is_symlink():
        report.add(file, 0, "-", "missing: the viewer shows no steps; answer_grounded and takeovers have no "
                   "screen reads", "append one line per step", warning=True)
        return
    if path.stat().st_size > MAX_STEPS_BYTES:
        report.add(file, 0, "-", f"over the {MAX_STEPS_BYTES // _MB} MB farm agent check reads",
                   "keep screen texts compact; screenshots go in files")
        return
    lacking: dict[str, list[int]] = {"observation.screenshot": [], "observation.text": [], "tokens": []}
    total = 0
    with path.open("rb") as handle:
        # Bounded reads: a line past MAX_LINE_BYTES is skipped in 64 KiB pieces, never held whole.
        for number, raw in enumerate(bounded_lines(handle, MAX_LINE_BYTES), 1):
            if total >= MAX_STEPS:
                report.add(file, number, "-", f"more than {MAX_STEPS} steps: the rest are not checked or shown",
                           "keep attempts within the task's maxSteps", warning=True)
                break
            if isinstance(raw, TooLong):
                report.add(file, number, "-", f"line over {MAX_LINE_BYTES // _MB} MB: the viewer does not show it",
                           "keep one step's screen text compact")
                continue
            if not raw.strip():
                continue
            total += 1
            if len(raw) > pull_limits.MAX_LINE_BYTES:
                report.add(file, number, "-", f"line over {pull_limits.size_text(pull_limits.MAX_LINE_BYTES)}: the "
                           "host's re-scoring skips it (its screen is no evidence)", "keep one step's screen text "
                           "compact", warning=True)
            data = json_object(report, raw, file, number)
            step = validate_into(report, ac.AgentStep, data, file, number) if data is not None else None
            if not isinstance(step, ac.AgentStep):
                continue
            _check_screenshot(report, run, file, number, step.observation.screenshot, lacking)
            if step.observation.text is None:
                lacking["observation.text"].append(number)
            if step.tokens is None:
                lacking["tokens"].append(number)
    _lacks(report, file, total, lacking)


def _check_screenshot(report: TreeReport, run: Path, file: str, number: int, shot: str | None,
                      lacking: dict[str, list[int]]) -> None:
    if shot is None:
        lacking["observation.screenshot"].append(number)
        return
    suffix = Path(shot).suffix.lower()
    if suffix not in _IMAGE_MAGIC and not _SHOT.match(shot):
        return  # a note saying why there is none (`screenshot omitted: cap`): shown as it is
    if not _SHOT.match(shot):
        report.add(file, number, "observation.screenshot", f"{shot[:60]!r} is not a plain file name",
                   "name it like shot-<hash>.png, next to steps.jsonl")
        return
    image = run / shot
    if image.is_symlink() or not image.is_file():
        report.add(file, number, "observation.screenshot", f"{shot} is not a file next to steps.jsonl",
                   "save the image in <id>/run/ before naming it")
        return
    with image.open("rb") as handle:
        head = handle.read(12)
    if not any(head.startswith(magic) for magic in _IMAGE_MAGIC[suffix]):
        report.add(file, number, "observation.screenshot", f"{shot} is not a {suffix[1:].upper()} image",
                   "write the image bytes the suffix says")


_LACKS = {
    "observation.screenshot": ("no screenshot", "the viewer shows 'no screenshot kept'",
                               "save a PNG or JPEG of the screen next to steps.jsonl and name it"),
    "observation.text": ("no screen text", "the viewer shows 'screen text not recorded'; grounding, takeovers and "
                         "re-judgement have nothing to read", "write the screen text the agent read"),
    "tokens": ("no tokens", "the viewer shows no tokens for the step", "write the model call's token counts"),
}


def _lacks(report: TreeReport, file: str, total: int, lacking: dict[str, list[int]]) -> None:
    for key, numbers in lacking.items():
        if numbers:
            what, effect, fix = _LACKS[key]
            report.add(file, numbers[0], key, f"{what} ({len(numbers)} of {total} steps): {effect}", fix,
                       warning=True)


