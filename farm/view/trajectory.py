"""A unit's trajectory: its run record's steps.jsonl and final.json as models the viewer shows.

Both executors' transcripts are read: the host executor's (`farm.scoring.transcript.StepLine`) and whatever
an on-device agent wrote (the contract's `farm.android.agent_contract.AgentStep`, or other keys with less
detail). Every line is read on its own: a torn last line, a line that is not JSON, a line too large to show, a
screenshot that is missing — each becomes a problem named on the page, never an error page. Text is cut to sizes
a browser shows comfortably; the files keep it all.

final.json is read by who wrote it: the host executor's own (`FinalFile`, its evidence trusted whole), or an
on-device agent's (`AgentFinal`): its `evidence` shown without the fields only the harness fills, beside the
harness's own look after the attempt (`harness-look.json`), and its verdict words shown, never trusted.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import from_json

from farm.scoring.evidence import Evidence
from farm.scoring.transcript import HARNESS_LOOK_FILE, HARNESS_ONLY, FinalFile, HarnessLook, look_fields
from farm.view.files import IMAGE_TYPES, Refused, inside
from farm.view.tap_marks import ImageSize, Mark, image_size, mark_for
from farm.view.units import Unit

MAX_LINE_BYTES = 4 * 1024 * 1024
"""A steps.jsonl line longer than this is not parsed (named as a problem; the file keeps it)."""
MAX_TEXT_CHARS = 100_000
"""Characters of one text (a screen, a result, arguments) shown; the rest is named, not shown."""
MAX_STEPS = 2000
"""Steps shown per unit."""
MAX_FINAL_BYTES = 8 * 1024 * 1024
"""A final.json larger than this is not parsed."""
MAX_LOOK_BYTES = 8 * 1024 * 1024
"""A harness-look.json larger than this is not parsed."""
_SHOT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")
_TIMING_NAMES = {"screenReadMs": "screen read", "modelMs": "model", "actionMs": "action", "otherMs": "other"}


class Timing(BaseModel):
    """One part of a step's time."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """What the time was spent on (screen read, model, action, other, or the transcript's own key)."""
    ms: float
    """Milliseconds."""


class StepView(BaseModel):
    """One step as the viewer shows it."""

    model_config = ConfigDict(extra="forbid")

    number: int
    """Step number as the transcript gives it (its line number when it gives none)."""
    line: int
    """Line of steps.jsonl."""
    at: str = ""
    """When the step began: `+1.2 s` after the start, or the timestamp the transcript wrote."""
    screenshot: str | None = None
    """File name of the step's screenshot next to steps.jsonl, when that file is there to show."""
    screenshot_note: str | None = None
    """Why no screenshot is shown: the attempt's cap, a missing file, none taken."""
    shot_size: ImageSize | None = None
    """The screenshot's size in pixels, from its header (null when unreadable: then no mark is drawn)."""
    mark: Mark | None = None
    """Where the step's action touched the screenshot (a tap's point, a swipe's line)."""
    mark_note: str | None = None
    """Why a position the call gives is not drawn (outside the screenshot, not numbers)."""
    observation: str | None = None
    """The screen text the agent saw."""
    observation_note: str | None = None
    """What is missing from `observation` (cut, or not recorded by the agent)."""
    package: str = ""
    """Foreground package."""
    tool: str | None = None
    """The tool called."""
    args: str = ""
    """Its arguments as JSON text (or as the agent wrote them, when they did not parse)."""
    message: str | None = None
    """Free text the model wrote with the call."""
    ok: bool | None = None
    """Whether the action was performed; null when the transcript does not say."""
    result: str = ""
    """What the agent was told."""
    error: str | None = None
    """The step's error."""
    timings: list[Timing] = Field(default_factory=list)
    """Where the step's time went."""
    tokens: dict[str, int] = Field(default_factory=dict)
    """Token counts of the model call behind the step, by kind."""
    problem: str | None = None
    """What is wrong with this line (not JSON, too large); the other fields are then empty."""


class Trajectory(BaseModel):
    """A unit's steps, its final evidence and what could not be read."""

    model_config = ConfigDict(extra="forbid")

    run: str
    """Run id."""
    unit: Unit
    """The unit (its record holds the verdict and the checks)."""
    steps: list[StepView] = Field(default_factory=list)
    """In file order."""
    evidence: Evidence | None = None
    """The evidence the checks used: a host executor's final.json's, or an on-device agent's final.json `evidence`
    (without the fields only the harness fills) with the harness's own look after the attempt."""
    evidence_from: Literal["host", "app"] | None = None
    """Who wrote `evidence`: the host executor (farm), or the agent app on the phone."""
    phone_final: dict[str, str] = Field(default_factory=dict)
    """What an on-device agent's final.json says (outcome, answer, reason…), as text; its verdict is not trusted."""
    problems: list[str] = Field(default_factory=list)
    """What could not be read, one line each."""


def _cut(text: str, what: str) -> tuple[str, str | None]:
    if len(text) <= MAX_TEXT_CHARS:
        return text, None
    return text[:MAX_TEXT_CHARS], f"{what}: {len(text) - MAX_TEXT_CHARS:,} more characters not shown"


def _lines(handle: IO[bytes]) -> Iterator[tuple[int, bytes | None, int]]:
    """(line number, the line or None when longer than MAX_LINE_BYTES, its size), never holding a long line."""
    number = 0
    while True:
        chunk = handle.readline(MAX_LINE_BYTES + 1)
        if not chunk:
            return
        number += 1
        if len(chunk) <= MAX_LINE_BYTES or chunk.endswith(b"\n"):
            yield number, chunk, len(chunk)
            continue
        size = len(chunk)
        while True:
            more = handle.readline(1 << 20)
            size += len(more)
            if not more or more.endswith(b"\n"):
                break
        yield number, None, size


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _json_text(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _screenshot(run_dir: Path, evidence: str, value: object) -> tuple[str | None, str | None]:
    if value is None:
        return None, "no screenshot kept"
    if not isinstance(value, str):
        return None, "screenshot: not a file name"
    if _SHOT_NAME.fullmatch(value) and Path(value).suffix.lower() in IMAGE_TYPES:
        try:
            if inside(run_dir, f"{evidence}/{value}").is_file():
                return value, None
        except Refused:
            return None, f"screenshot {value}: leaves the run directory, not shown"
        except OSError:
            pass
        return None, f"screenshot file missing: {value}"
    # Not a file name: what the transcript says instead (e.g. `screenshot omitted: cap`).
    return None, value[:300]


def _timings(value: object) -> list[Timing]:
    if not isinstance(value, dict):
        return []
    return [Timing(name=_TIMING_NAMES.get(k, str(k)), ms=float(v)) for k, v in value.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)]


def _tokens(value: object) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool)}


def _at(item: dict[str, Any]) -> str:
    at_ms = item.get("atMs")
    if isinstance(at_ms, int | float) and not isinstance(at_ms, bool) and math.isfinite(at_ms):
        return f"+{at_ms / 1000:.1f} s"
    return str(item.get("at"))[:40] if isinstance(item.get("at"), str) else ""


def step_view(item: dict[str, Any], line: int, run_dir: Path, evidence: str,
              sizes: dict[str, ImageSize | None] | None = None) -> StepView:
    """One parsed steps.jsonl line as a StepView, whichever executor wrote it; `sizes` caches screenshots' sizes
    by file name (an attempt shows one screen on many steps)."""
    number = item.get("step")
    view = StepView(number=number if isinstance(number, int) and not isinstance(number, bool) else line,
                    line=line, at=_at(item))
    obs = item.get("observation")
    shot: object = item.get("screenshot")
    if isinstance(obs, dict):
        text = _text(obs.get("text"))
        view.package = _text(obs.get("package")) or ""
        shot = obs.get("screenshot", shot)
        if text is None and isinstance(obs.get("chars"), int):
            view.observation_note = f"screen text not recorded by the agent ({obs['chars']:,} characters)"
    else:
        text = _text(obs) or _text(item.get("screen"))
    if text is not None:
        view.observation, view.observation_note = _cut(text, "screen")
    elif view.observation_note is None:
        view.observation_note = "screen text not recorded"
    view.screenshot, view.screenshot_note = _screenshot(run_dir, evidence, shot)
    if view.screenshot is not None:
        cache = sizes if sizes is not None else {}
        if view.screenshot not in cache:
            cache[view.screenshot] = image_size(run_dir / evidence / view.screenshot)
        view.shot_size = cache[view.screenshot]
    action = item.get("action")
    args: object = None
    message: object = item.get("message") or item.get("thought")
    if isinstance(action, dict):
        tool = action.get("tool") or action.get("type") or action.get("name")
        view.tool = tool if isinstance(tool, str) else None
        raw = action.get("raw")
        args = action.get("args", action.get("arguments"))
        view.args = _cut(raw if isinstance(raw, str) else _json_text(args) if args not in (None, {}) else "",
                         "arguments")[0]
        message = action.get("message") or message
        # Drawn only over a screenshot that is shown: a mark needs the image it is laid on.
        if view.screenshot is not None:
            view.mark, view.mark_note = mark_for(view.tool, args, view.shot_size)
    elif isinstance(action, str):
        view.tool = action
    if isinstance(message, str):
        view.message = _cut(message, "message")[0]
    result = item.get("result")
    if isinstance(result, dict):
        ok = result.get("ok")
        view.ok = ok if isinstance(ok, bool) else None
        view.result = _cut(_text(result.get("text")) or "", "result")[0]
        view.error = _text(result.get("error"))
    elif isinstance(result, str):
        view.result = _cut(result, "result")[0]
    elif isinstance(result, bool):
        view.ok = result
    view.timings = _timings(item.get("timings"))
    view.tokens = _tokens(item.get("tokens"))
    return view


def read_steps(run_dir: Path, evidence: str) -> tuple[list[StepView], list[str]]:
    """The steps of the run record `evidence` (relative to `run_dir`) and the problems met reading them."""
    problems: list[str] = []
    try:
        path = inside(run_dir, f"{evidence}/steps.jsonl")
        handle = path.open("rb")
    except Refused:
        return [], [f"{evidence}/steps.jsonl: leaves the run directory, not read"]
    except OSError:
        return [], [f"{evidence}: no steps.jsonl (no step was recorded)"]
    steps: list[StepView] = []
    sizes: dict[str, ImageSize | None] = {}
    with handle:
        for number, raw, size in _lines(handle):
            if len(steps) >= MAX_STEPS:
                problems.append(f"steps.jsonl: only the first {MAX_STEPS} steps are shown")
                break
            if raw is None:
                note = f"steps.jsonl:{number}: {size / 1e6:.1f} MB, too large to show here (open steps.jsonl)"
                steps.append(StepView(number=number, line=number, problem=note))
                problems.append(note)
                continue
            if not raw.strip():
                continue
            try:
                item = from_json(raw)
            except ValueError:
                torn = not raw.endswith(b"\n")
                note = (f"steps.jsonl:{number}: torn last line (the attempt was cut short), skipped" if torn
                        else f"steps.jsonl:{number}: not JSON, skipped")
                problems.append(note)
                if not torn:
                    steps.append(StepView(number=number, line=number, problem=note))
                continue
            if not isinstance(item, dict):
                note = f"steps.jsonl:{number}: not a step (a JSON {type(item).__name__}), skipped"
                problems.append(note)
                steps.append(StepView(number=number, line=number, problem=note))
                continue
            steps.append(step_view(item, number, run_dir, evidence, sizes))
    return steps, problems


@dataclass(frozen=True)
class FinalView:
    """What a run record's final.json (and the harness's look beside it) gives the page."""

    evidence: Evidence | None = None
    """The evidence to show (see `Trajectory.evidence`)."""
    source: Literal["host", "app"] | None = None
    """Who wrote it: the host executor, or an agent app (any final.json not in the host executor's shape)."""
    said: dict[str, str] = field(default_factory=dict)
    """The final.json's own words (outcome, answer, reason…) when it is not the host executor's."""
    problems: list[str] = field(default_factory=list)
    """What could not be read or was left out, one line each."""


def _read_bounded(run_dir: Path, rel: str, limit: int) -> tuple[bytes | None, str | None]:
    """(the bytes of run file `rel`, or the problem reading it); (None, None) when the file is not there."""
    try:
        path = inside(run_dir, rel)
        size = path.stat().st_size
    except Refused:
        return None, f"{rel}: leaves the run directory, not read"
    except OSError:
        return None, None
    if size > limit:
        return None, f"{rel}: {size / 1e6:.1f} MB, too large to show here"
    try:
        return path.read_bytes(), None
    except OSError as exc:
        return None, f"{rel}: cannot be read ({exc.strerror})"


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


def read_look(run_dir: Path, evidence: str) -> tuple[HarnessLook | None, str | None]:
    """The harness's own look after an on-device agent's attempt (`harness-look.json`), or the problem reading it;
    (None, None) when the harness took none (the task had no check that needs one)."""
    rel = f"{evidence}/{HARNESS_LOOK_FILE}"
    data, problem = _read_bounded(run_dir, rel, MAX_LOOK_BYTES)
    if data is None:
        return None, problem
    try:
        return HarnessLook.model_validate_json(data), None
    except ValidationError as exc:
        return None, f"{rel}: not the harness's look ({_first_error(exc)})"


def _app_evidence(run_dir: Path, evidence: str, written: dict[str, Any]) -> tuple[Evidence | None, list[str]]:
    """An app's final.json `evidence` as the host scores it: the fields only the harness fills are dropped (an
    app could otherwise show a fresh look of its own making), and the harness's own look is added."""
    try:
        found = Evidence.model_validate(written)
    except ValidationError as exc:
        return None, [f"{evidence}/final.json: evidence unreadable ({_first_error(exc)}); farm cannot score the "
                      "attempt from it (an infrastructure error)"]
    problems: list[str] = []
    # The same rule and words as the re-scoring (`farm.scoring.transcript.read_phone_evidence`).
    ignored = [camel for name, camel in HARNESS_ONLY.items() if written.get(camel) or written.get(name)]
    if ignored:
        problems.append(f"the app wrote {', '.join(ignored)} in final.json; ignored — only the harness looks, "
                        "probes and judges")
    found = found.model_copy(update={name: type(getattr(found, name))() for name in HARNESS_ONLY})
    look, problem = read_look(run_dir, evidence)
    if problem is not None:
        problems.append(problem)
    if look is not None:
        found = found.model_copy(update=look_fields(look))
        if look.error is not None:
            problems.append(f"the harness could not look at the phone after the attempt: {look.error}")
    return found, problems


def read_final(run_dir: Path, evidence: str, *, app: bool = False) -> FinalView:
    """A run record's final.json: the host executor's evidence, or an agent app's (`app`: the record says an
    on-device agent wrote it, so it is never taken for the host executor's, whatever its shape)."""
    rel = f"{evidence}/final.json"
    data, problem = _read_bounded(run_dir, rel, MAX_FINAL_BYTES)
    if data is None:
        return FinalView(problems=[problem or f"{evidence}: no final.json (the attempt did not finish)"])
    if not app:
        try:
            return FinalView(FinalFile.model_validate_json(data).evidence, "host")
        except ValidationError:
            pass
    try:
        raw = from_json(data)
    except ValueError:
        return FinalView(problems=[f"{rel}: not JSON"])
    if not isinstance(raw, dict):
        return FinalView(problems=[f"{rel}: not a JSON object"])
    said = {k: _cut(v if isinstance(v, str) else _json_text(v), k)[0]
            for k in ("outcome", "passed", "answer", "reason", "endReason", "failureCategory", "takeoverKind")
            if (v := raw.get(k)) not in (None, "")}
    written = raw.get("evidence")
    if written is None:
        # Without evidence the host rebuilds it from these words and steps.jsonl (docs/agent-app.md §4.5).
        return FinalView(said=said)
    if not isinstance(written, dict):
        # The re-scoring ignores it too and rebuilds the evidence (`farm.scoring.transcript.read_phone_evidence`).
        return FinalView(said=said, problems=[f"{rel}: evidence is not an object, ignored (farm rebuilds the "
                                              "evidence from the other keys and steps.jsonl)"])
    found, problems = _app_evidence(run_dir, evidence, written)
    return FinalView(found, "app" if found is not None else None, said, problems)


def load_trajectory(run_dir: Path, run: str, unit: Unit) -> Trajectory:
    """Everything the unit page shows; a unit without a run record has its verdict and no steps."""
    traj = Trajectory(run=run, unit=unit)
    if unit.evidence_note:
        traj.problems.append(unit.evidence_note)
    if unit.evidence is None:
        return traj
    traj.steps, problems = read_steps(run_dir, unit.evidence)
    final = read_final(run_dir, unit.evidence, app=unit.record.executor == "instrument")
    traj.evidence, traj.evidence_from, traj.phone_final = final.evidence, final.source, final.said
    traj.problems += problems + final.problems
    return traj
