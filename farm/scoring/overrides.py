"""Human re-judgement (seed 003 「怎么人工改判」): `overrides.yaml` or the 人工改判 section of summary.md.

An override names a task, the verdict it changes from and to, and evidence quoted from the run
record (the final answer or a screen read under `<id>/run/`). An override whose evidence text does
not occur in that record is refused and listed; so is one whose `from` is not the initial verdict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from farm.errors import FarmError

Verdict = Literal["pass", "fail"]
_WORDS: dict[str, Verdict] = {
    "pass": "pass",
    "passed": "pass",
    "通过": "pass",
    "true": "pass",
    "fail": "fail",
    "failed": "fail",
    "没通过": "fail",
    "不通过": "fail",
    "未通过": "fail",
    "false": "fail",
}
_QUOTES = "「」『』“”\"'`"
SECTION = "人工改判"


def verdict_word(text: str) -> Verdict:
    """`pass`/`fail` from the words people write (通过, failed…); ValueError otherwise."""
    word = text.strip().strip(_QUOTES).lower()
    if word not in _WORDS:
        raise ValueError(f"unknown verdict {text!r} (use pass or fail)")
    return _WORDS[word]


class OverrideSpec(BaseModel):
    """One requested re-judgement."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str = Field(min_length=1)
    """Task id."""
    from_: Verdict = Field(alias="from")
    """Initial verdict being changed."""
    to: Verdict
    """New verdict."""
    evidence: str = ""
    """Text quoted from the run record (answer or screen read)."""
    device: str | None = None
    """Serial the override applies to; all phones of the run when omitted."""
    source: str = ""
    """Where the override was written (file and line)."""

    @field_validator("from_", "to", mode="before")
    @classmethod
    def _word(cls, value: object) -> str:
        return verdict_word(str(value))

    @field_validator("evidence")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip().strip(_QUOTES).strip()


def load_overrides_yaml(path: Path) -> list[OverrideSpec]:
    """Read `overrides.yaml` (a list, or `{overrides: [...]}`); FarmError on a bad file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FarmError(f"{path}: cannot read ({exc.strerror})") from None
    except yaml.YAMLError:
        raise FarmError(f"{path}: invalid YAML", hint="a list of {id, from, to, evidence}") from None
    if isinstance(data, dict):
        data = data.get("overrides", [])
    if data is None:
        return []
    if not isinstance(data, list):
        raise FarmError(f"{path}: expected a list of overrides", hint="a list of {id, from, to, evidence}")
    out = []
    for i, item in enumerate(data):
        try:
            out.append(OverrideSpec.model_validate({**item, "source": f"{path.name}[{i}]"}))
        except (ValidationError, TypeError) as exc:
            msg = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else "not a mapping"
            raise FarmError(f"{path}: overrides[{i}]: {msg}", hint="fields: id, from, to, evidence") from None
    return out


_LINE = re.compile(
    r"^\s*[-*]\s*`?(?P<id>[A-Za-z0-9][A-Za-z0-9_-]*)`?\s*[:：]\s*(?P<from>[^\s→>-]+)\s*(?:→|->)\s*"
    r"(?P<to>[^\s,;，；]+)[\s,;，；]*(?:证据|evidence)\s*[:：]\s*(?P<ev>.+?)\s*$",
    re.IGNORECASE,
)


def parse_summary_section(text: str, source: str = "summary.md") -> list[OverrideSpec]:
    """Overrides written under `## 人工改判`: `- <id>: <from> → <to>, 证据: 「…」` or a table row."""
    out: list[OverrideSpec] = []
    inside = False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("#"):
            inside = SECTION in line
            continue
        if not inside or not line.strip():
            continue
        fields: dict[str, str] | None = None
        m = _LINE.match(line)
        if m:
            fields = {"id": m["id"], "from": m["from"], "to": m["to"], "evidence": m["ev"]}
        elif line.strip().startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 4 and cells[0] and not set(cells[0]) <= set("-: ") and cells[0] not in ("id", "题"):
                fields = {"id": cells[0].strip("`"), "from": cells[1], "to": cells[2], "evidence": cells[3]}
        if fields is None:
            continue
        try:
            out.append(OverrideSpec.model_validate({**fields, "source": f"{source}:{number}"}))
        except ValidationError as exc:
            msg = exc.errors()[0]["msg"]
            raise FarmError(f"{source}:{number}: {msg}", hint="- <id>: fail → pass, 证据: 「…」") from None
    return out


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def evidence_texts(task_run_dir: Path, answer: str | None) -> list[str]:
    """Every text of a task's run record: the answer and all strings of `<id>/run/` files."""
    texts = [answer] if answer else []
    if not task_run_dir.is_dir():
        return texts
    for path in sorted(task_run_dir.rglob("*")):
        if not path.is_file() or path.is_symlink() or path.stat().st_size > 16 * 1024 * 1024:
            continue
        raw = path.read_text(encoding="utf-8", errors="replace")
        texts.append(raw)
        for line in raw.splitlines():
            try:
                texts.extend(_strings(json.loads(line)))
            except ValueError:
                continue
        try:
            texts.extend(_strings(json.loads(raw)))
        except ValueError:
            pass
    return texts


@dataclass(frozen=True)
class Decision:
    """The outcome of one override on one attempt."""

    spec: OverrideSpec
    device: str
    initial: Verdict
    applied: bool
    note: str


def decide(spec: OverrideSpec, device: str, initial_passed: bool, texts: list[str]) -> Decision:
    """Apply the rules: `from` must be the initial verdict and the evidence must be in the record."""
    initial: Verdict = "pass" if initial_passed else "fail"
    if spec.from_ != initial:
        return Decision(spec, device, initial, False, f"refused: initial verdict is {initial}, not {spec.from_}")
    if spec.from_ == spec.to:
        return Decision(spec, device, initial, False, "refused: no change")
    if not spec.evidence:
        return Decision(spec, device, initial, False, "refused: no evidence quoted")
    if not any(spec.evidence in text for text in texts):
        return Decision(spec, device, initial, False, "refused: evidence not found in the run record")
    return Decision(spec, device, initial, True, f"applied ({spec.source})" if spec.source else "applied")
