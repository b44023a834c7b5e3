"""Human re-judgement (seed 003 「怎么人工改判」): `overrides.yaml` or the 人工改判 section of summary.md.

An override names a task, the verdict it changes from and to and/or a new failure category
(perception, route, barrier, app_state…), and evidence quoted from that task's run record: text
the screen showed (text and content-desc of a screen read) or the final answer — never a check
detail, an id or anything else a file happens to contain. Evidence is found with the checks'
shared matcher. An override without such evidence is refused and listed with its reason; so is
one whose `from` is not the initial verdict (or category).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from farm.android.pull_limits import MAX_FINAL_JSON_BYTES, read_at_most, size_text
from farm.errors import FarmError
from farm.scoring.evidence import Evidence
from farm.scoring.text import find
from farm.scoring.transcript import read_screen_reads
from farm.scoring.visible import screen_text
from farm.yaml_strict import strict_load

Verdict = Literal["pass", "fail"]
FailureCategory = Literal["perception", "route", "barrier", "app_state", "clarification", "infrastructure"]
CATEGORIES: tuple[str, ...] = get_args(FailureCategory)
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
    from_: Verdict | None = Field(default=None, alias="from")
    """Initial verdict being changed (checked when given)."""
    to: Verdict | None = None
    """New verdict; null keeps the verdict (a category-only re-judgement)."""
    category: FailureCategory | None = None
    """New failure category of a failed attempt; null keeps it."""
    from_category: FailureCategory | None = Field(default=None, alias="fromCategory")
    """Initial failure category being changed (checked when given)."""
    evidence: str = ""
    """Text quoted from the run record (answer or screen read)."""
    device: str | None = None
    """Serial the override applies to; all phones of the run when omitted."""
    source: str = ""
    """Where the override was written (file and line)."""

    @field_validator("from_", "to", mode="before")
    @classmethod
    def _word(cls, value: object) -> str | None:
        return None if value is None else verdict_word(str(value))

    @model_validator(mode="after")
    def _changes_something(self) -> OverrideSpec:
        if self.to is None and self.category is None:
            raise ValueError("an override needs `to` (pass/fail) or `category` (" + ", ".join(CATEGORIES) + ")")
        return self

    @field_validator("evidence")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip().strip(_QUOTES).strip()


def load_overrides_yaml(path: Path) -> list[OverrideSpec]:
    """Read `overrides.yaml` (a list, or `{overrides: [...]}`); FarmError on a bad file."""
    try:
        data = strict_load(path.read_text(encoding="utf-8"), path)
    except OSError as exc:
        raise FarmError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise FarmError(f"{path}: not UTF-8 text", hint="a YAML list of {id, from, to, evidence}") from None
    except (yaml.YAMLError, RecursionError):
        # PyYAML's composer recurses once per nesting level: a deep document is as invalid here as a broken one.
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
        if fields["from"] in CATEGORIES and fields["to"] in CATEGORIES:
            fields = {"id": fields["id"], "fromCategory": fields["from"], "category": fields["to"],
                      "evidence": fields["evidence"]}
        try:
            out.append(OverrideSpec.model_validate({**fields, "source": f"{source}:{number}"}))
        except ValidationError as exc:
            msg = exc.errors()[0]["msg"]
            raise FarmError(f"{source}:{number}: {msg}", hint="- <id>: fail → pass, 证据: 「…」") from None
    return out


class EvidenceTexts(list[str]):
    """The texts an override may quote, and what the caps kept out of the run record (`unread`, one line each with
    the counts): `decide` names them when the quote is not found, as the quote may lie in what was not read."""

    def __init__(self, texts: list[str], unread: list[str]) -> None:
        super().__init__(texts)
        self.unread = unread


def evidence_texts(task_run_dir: Path, answer: str | None) -> list[str]:
    """What an override may quote: the final answer and the visible text of every screen in the run record.

    Screens are the observations of `steps.jsonl` and the screens kept in `final.json`'s evidence
    (reads, the hand-over screen, the harness's fresh looks) — their text and content-desc only. Both files are
    read within the caps of `farm.android.pull_limits`; what they kept out is listed (`EvidenceTexts`).
    """
    texts = [answer] if answer else []
    if not task_run_dir.is_dir():
        return texts
    found = read_screen_reads(task_run_dir / "steps.jsonl")
    screens = [read.text for read in found.reads]
    unread = list(found.unread)
    final = task_run_dir / "final.json"
    if final.is_file():
        data = read_at_most(final, MAX_FINAL_JSON_BYTES)
        if data is None:
            unread.append(f"final.json larger than {size_text(MAX_FINAL_JSON_BYTES)}: not read")
        try:
            raw = json.loads(data.decode("utf-8", errors="replace")) if data is not None else None
            ev = Evidence.model_validate(raw["evidence"]) if isinstance(raw, dict) and "evidence" in raw else None
        except (ValueError, ValidationError):
            ev = None
        if ev is not None:
            screens += [read.text for read in ev.screen_reads] + [look.text for look in ev.fresh_looks]
            if ev.hand_over is not None:
                screens.append(ev.hand_over.screen)
            if ev.answer and ev.answer not in texts:
                texts.append(ev.answer)
    texts += [screen_text(s) for s in screens if s]
    return EvidenceTexts(texts, unread) if unread else texts


@dataclass(frozen=True)
class Decision:
    """The outcome of one override on one attempt."""

    spec: OverrideSpec
    device: str
    initial: Verdict
    applied: bool
    note: str
    category: str | None = None
    """Failure category to apply (null: unchanged); set only when applied and the final verdict is fail."""


def decide(
    spec: OverrideSpec, device: str, initial_passed: bool, texts: list[str], initial_category: str | None = None
) -> Decision:
    """Apply the rules: `from` must be the initial verdict (or category), something must change, and the
    evidence must be screen text or the final answer of the run record (shared matcher)."""
    initial: Verdict = "pass" if initial_passed else "fail"

    def refused(why: str) -> Decision:
        return Decision(spec, device, initial, False, f"refused: {why}")

    if spec.from_ is not None and spec.from_ != initial:
        return refused(f"initial verdict is {initial}, not {spec.from_}")
    final = spec.to or initial
    if spec.category is not None:
        if final == "pass":
            return refused("a passed attempt has no failure category")
        if spec.from_category is not None and spec.from_category != initial_category:
            return refused(f"initial category is {initial_category or 'none'}, not {spec.from_category}")
    changes = final != initial or (spec.category is not None and spec.category != initial_category)
    if not changes:
        return refused("no change")
    if not spec.evidence:
        return refused("no evidence quoted")
    if not any(find(text, spec.evidence) for text in texts):
        unread = texts.unread if isinstance(texts, EvidenceTexts) else []
        return refused("evidence is not screen text or the final answer of this task's run record"
                       + (f" (not searched: {'; '.join(unread)})" if unread else ""))
    note = f"applied ({spec.source})" if spec.source else "applied"
    return Decision(spec, device, initial, True, note, spec.category if final == "fail" else None)
