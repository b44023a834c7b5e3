"""The task file schema of seed 003: one JSON object per task, camelCase on disk."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from farm.taskset import placeholders

Category = Literal["read", "write", "irreversible", "impossible", "barrier"]
Partition = Literal["tune", "holdout"]
Expect = Literal["succeeded", "confirmation", "failed", "takeover"]
Channel = Literal["web", "app"]
Split = Literal["train", "test"]
# Obstacles a read task may hand over on; seed 003 names login forms and captchas.
# "verification" is the older name of "captcha" (a verification-code screen) and reads the same.
TakeoverKind = Literal["login", "captcha", "verification", "payment"]

REQUIRE_PREFIXES = ("installed:", "app:", "signedIn:", "login:", "site:")


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )


class AnswerContains(_Model):
    """The final answer contains a fixed text."""

    type: Literal["answer_contains"] = "answer_contains"
    """Discriminator."""
    text: str = Field(min_length=1)
    """Text the answer must contain (case-insensitive; placeholders allowed)."""


class AnswerRegex(_Model):
    """The final answer matches a regular expression (Python `re.search`)."""

    type: Literal["answer_regex"] = "answer_regex"
    """Discriminator."""
    pattern: str = Field(min_length=1)
    """Regex searched in the answer; `{probe:…}` values are inserted escaped."""

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        probe = placeholders.substitute_all(value, "0")
        try:
            re.compile(probe)
        except re.error as exc:
            raise ValueError(f"pattern does not compile: {exc}") from exc
        return value


class AnswerGrounded(_Model):
    """Values, quoted names and `label: value` pairs of the answer appeared in the last screen reads."""

    type: Literal["answer_grounded"] = "answer_grounded"
    """Discriminator."""
    min_items: int = Field(default=1, ge=1, strict=True)
    """How many grounded items the answer must contain (what the goal asks for)."""


class ScreenHas(_Model):
    """A fresh look at an app after the run finds a text (or the task's marker)."""

    type: Literal["screen_has"] = "screen_has"
    """Discriminator."""
    text: str | None = None
    """Text to find on screen; exactly one of `text` and `marker`."""
    marker: bool = Field(default=False, strict=True)
    """True: find the task's resolved `marker` instead of a fixed text."""
    package_name: str = Field(min_length=1)
    """App to open for the look: a package or `{app:<capability>}`."""

    @model_validator(mode="after")
    def _one_target(self) -> ScreenHas:
        if (self.text is None) == (not self.marker):
            raise ValueError("give exactly one of `text` or `marker: true`")
        return self


class ProbeHas(_Model):
    """A catalogue probe run after the task finds a text (or the marker) — checks without a package."""

    type: Literal["probe_has"] = "probe_has"
    """Discriminator."""
    probe: str = Field(min_length=1)
    """Probe name (`storage_root`) or `name:param`."""
    text: str | None = None
    """Text the probe output must contain; exactly one of `text` and `marker`."""
    marker: bool = Field(default=False, strict=True)
    """True: look for the task's resolved `marker`."""

    @model_validator(mode="after")
    def _one_target(self) -> ProbeHas:
        if (self.text is None) == (not self.marker):
            raise ValueError("give exactly one of `text` or `marker: true`")
        return self


class AskedUser(_Model):
    """Whether the agent asked the user (`ask_user`) during the run."""

    type: Literal["asked_user"] = "asked_user"
    """Discriminator."""
    expected: bool = Field(default=True, strict=True)
    """True: the task lacks something only the user knows; False: the agent should decide itself."""


class ConfirmationShows(_Model):
    """The confirmation card of an irreversible action shows what / to whom / content / amount."""

    type: Literal["confirmation_shows"] = "confirmation_shows"
    """Discriminator."""
    action: str = Field(min_length=1)
    """What is done (发送, 删除, 提交订单…)."""
    target: str | None = None
    """To whom / on what (文件传输助手, the shop)."""
    content: str | None = None
    """Content the card must show (the message text, the marker)."""
    amount: str | None = None
    """Amount the card must show (price, count)."""


StateOp = Literal["equals", "contains", "matches", "row", "changed", "increased", "decreased", "count_changed"]
BEFORE_OPS = frozenset({"changed", "increased", "decreased", "count_changed"})
"""Ops that compare the value after the attempt with the value read just before it started."""


class StateCheck(_Model):
    """The phone's state, read by the harness with a catalogue probe (`probes/`), holds what the task asks.

    The probe is read just before the agent starts and again after it ends. `field` and `where` pick one value
    out of a probe that gives rows (contacts, alarms, files…): the `field` of the one row whose fields contain
    every `where` value (as whole tokens); without `field`, the probe's value itself."""

    type: Literal["state"] = "state"
    """Discriminator."""
    probe: str = Field(min_length=1)
    """Probe name (`night_mode`) or `name:param` (`setting_global:wifi_on`, `files:Documents/a.txt`)."""
    op: StateOp
    """`equals` / `contains` (a whole token) / `matches` (full regex) on the value after; `row`: a row with the
    `where` fields exists after; `changed` (optionally from `before` to `value`), `increased`, `decreased`
    (numbers) compare before with after; `count_changed`: rows matching `where` after minus before = `by`."""
    value: str | None = None
    """What the value after must be (equals, contains, matches; `changed`: the value it must end as); may hold
    `{run}` and `{probe:…}` placeholders."""
    marker: bool = Field(default=False, strict=True)
    """True: `value` is the task's resolved marker."""
    before: str | None = None
    """`changed`: the value it must have started from (otherwise any different value)."""
    field: str | None = None
    """For a rows probe: which field of the selected row is the value."""
    where: dict[str, str] = Field(default_factory=dict)
    """For a rows probe: field → text a row's field must contain as a whole token (`{marker}` for the marker)."""
    by: int | None = Field(default=None, strict=True)
    """`count_changed`: the change in the number of matching rows (1: one added, -1: one deleted)."""

    @model_validator(mode="after")
    def _shape(self) -> StateCheck:
        if self.marker and self.value is not None:
            raise ValueError("give `value` or `marker: true`, not both")
        has_value = self.value is not None or self.marker
        if self.op in ("equals", "contains", "matches") and not has_value:
            raise ValueError(f"op {self.op} needs `value` (or `marker: true`)")
        if self.op in ("row", "count_changed") and not self.where:
            raise ValueError(f"op {self.op} needs `where` (the fields a matching row has)")
        if self.op in ("row", "count_changed") and self.field is not None:
            raise ValueError(f"op {self.op} counts rows: `field` is for the other ops")
        if (self.op == "count_changed") != (self.by is not None):
            raise ValueError("`by` goes with op count_changed, and count_changed needs it")
        if self.before is not None and self.op != "changed":
            raise ValueError("`before` goes with op changed")
        if self.op in ("increased", "decreased") and has_value:
            raise ValueError(f"op {self.op} compares before with after: no `value`")
        if self.op == "matches" and self.value is not None:
            try:
                re.compile(self.value)
            except re.error as exc:
                raise ValueError(f"value is not a regex: {exc}") from None
        if self.field is not None and not self.where:
            raise ValueError("`field` picks from the row `where` selects: give `where` too")
        return self


Check = Annotated[
    AnswerContains | AnswerRegex | AnswerGrounded | ScreenHas | ProbeHas | AskedUser | ConfirmationShows
    | StateCheck,
    Field(discriminator="type"),
]
CHECK_TYPES = (
    "answer_contains",
    "answer_regex",
    "answer_grounded",
    "screen_has",
    "probe_has",
    "asked_user",
    "confirmation_shows",
    "state",
)


class Task(_Model):
    """One evaluation task (`tasks/<directory>/<id>.json`)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    """Unique id, equal to the file name without `.json`."""
    goal: str = Field(min_length=1)
    """What the user says, as a real person would say it."""
    apps: list[str] = Field(default_factory=list)
    """Apps the task uses: packages, or `{app:<capability>}` for phone-guaranteed apps."""
    category: Category
    """Task category (the directory's kind for all but `web`, `skills`, `memory`)."""
    partition: Partition | None = None
    """Pool: `tune` (about 70 %) or `holdout` (about 30 %); required by `farm tasks check`."""
    requires: list[str] = Field(default_factory=list)
    """Preconditions: `installed:<pkg>`, `app:<capability>`, `signedIn:<pkg|site>`, legacy `login:`/`site:`."""
    expect: Expect
    """The outcome a correct agent reaches."""
    checks: list[Check] = Field(default_factory=list)
    """Evidence checks, all of which must pass."""
    max_steps: int = Field(default=30, ge=1, le=500, strict=True)
    """Step budget."""
    timeout_sec: int = Field(default=600, ge=10, le=7200, strict=True)
    """Wall-time budget in seconds."""
    marker: str | None = None
    """Marker for data the task creates; contains `{run}` so every run's data is distinct."""
    probes_before: list[str] = Field(default_factory=list)
    """Catalogue probes (`name` or `name:param`) run before the task; fill `{probe:…}`."""
    probes_after: list[str] = Field(default_factory=list)
    """Catalogue probes the harness reads after the task besides those its checks name, kept with the evidence."""
    goal_state: list[StateCheck] = Field(default_factory=list)
    """The goal as state (ops equals, contains, matches, row), read before the agent starts: when every one
    already holds, the attempt is not run and is recorded as an invalid start (never a pass, never the agent's
    failure)."""
    setup: list[str] = Field(default_factory=list)
    """Whitelisted setup actions (`probes/setup/<name>.yaml`, `name` or `name:param`) that reach a start state:
    run in order only when every goalState check already holds, then goalState is read again; the agent runs
    only once it no longer holds (otherwise the attempt is an invalid start, as without setup)."""
    answers: dict[str, str] = Field(default_factory=dict)
    """Automatic replies to `ask_user`, keyed by a word that appears in the question."""
    accept_takeover_on: list[TakeoverKind] | None = None
    """Barriers accepted as a hand-over (`[]`: none); null means the default (login and captcha, seed 003)."""
    channel: Channel | None = None
    """Force the web or the app route for this task."""
    split: Split | None = None
    """Round of a paired skill task (`train` learns, `test` uses); unrelated to `partition`."""
    pair: str | None = Field(default=None, min_length=1)
    """Grouping key of paired skill tasks; all tasks of a pair share one partition."""
    session: str | None = Field(default=None, min_length=1)
    """Grouping key of a memory session; all tasks of a session share one partition."""
    note: str | None = None
    """For reviewers: why the task is built this way (the evaluator ignores it)."""

    @field_validator("requires")
    @classmethod
    def _require_prefix(cls, value: list[str]) -> list[str]:
        for item in value:
            if not item.startswith(REQUIRE_PREFIXES) or item.endswith(":"):
                raise ValueError(f"{item!r} must be one of {', '.join(p + '<name>' for p in REQUIRE_PREFIXES)}")
        return value

    @field_validator("marker")
    @classmethod
    def _marker_has_run(cls, value: str | None) -> str | None:
        if value is not None and "{run}" not in value:
            raise ValueError("marker must contain {run} so each run's data is distinct")
        return value

    @field_validator("goal_state")
    @classmethod
    def _goal_state_ops(cls, value: list[StateCheck]) -> list[StateCheck]:
        for check in value:
            if check.op in BEFORE_OPS or check.type != "state":
                raise ValueError(f"goalState holds what must be true at the end: op {check.op} compares "
                                 "before with after (use equals, contains, matches or row)")
        return value

    @field_validator("goal", "marker", "apps", "probes_before", "probes_after")
    @classmethod
    def _placeholders_parse(cls, value: str | list[str] | None) -> str | list[str] | None:
        for text in [value] if isinstance(value, str) else value or []:
            placeholders.find(text)
        return value

    @field_validator("checks")
    @classmethod
    def _check_placeholders_parse(cls, value: list[Check]) -> list[Check]:
        for check in value:
            for _where, text in _texts(check):
                placeholders.find(text)
        return value

    def check_texts(self) -> list[tuple[str, str]]:
        """Every string of the checks (and of `goalState`) that may hold placeholders, as (field path, text)."""
        out: list[tuple[str, str]] = []
        for key, checks in (("checks", self.checks), ("goalState", self.goal_state)):
            for i, check in enumerate(checks):
                out += [(f"{key}[{i}].{where}", text) for where, text in _texts(check)]
        return out


def _texts(check: BaseModel) -> list[tuple[str, str]]:
    """A check's strings that may hold placeholders (`where` values too), as (field on disk, text)."""
    out: list[tuple[str, str]] = []
    for name, value in check.model_dump(by_alias=True).items():
        if name == "type":
            continue
        if isinstance(value, str):
            out.append((name, value))
        elif isinstance(value, dict):
            out += [(f"{name}.{k}", v) for k, v in value.items() if isinstance(v, str)]
    return out


def goal_for_channel(goal: str, channel: Channel | None) -> str:
    """The goal as said when a channel is forced (`evalChannel`): web prefixes 「用网页」 unless the goal says it."""
    if channel == "web" and "网页" not in goal:
        return f"用网页{goal}"
    return goal
