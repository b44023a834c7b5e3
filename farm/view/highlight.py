"""The evidence a unit's checks looked for, marked in the texts the page shows (the screens the agent saw, the
harness's fresh looks, the answer), so a reader sees where a check found — or should have found — its text.

What is looked for comes from the task's checks as the run ran them (`farm.view.unit_task`): an answer's text or
pattern, a screen's or a probe's text, a confirmation card's words, a state value; and for `answer_grounded`, the
values the answer gives (numbers, quoted names), which that check looks for in the screens. A text that holds a
placeholder (`{probe:…}`, `{run}`) is resolved only by the harness at run time and is not marked. Marks are made
on the escaped text: nothing from a phone ever becomes markup.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape

from markupsafe import Markup

from farm.taskset.model import (
    AnswerContains,
    AnswerGrounded,
    AnswerRegex,
    ConfirmationShows,
    ProbeHas,
    ScreenHas,
    StateCheck,
    Task,
)

MAX_NEEDLES = 24
"""Texts looked for on one page; a task has a handful."""
MAX_MARKS = 500
"""Marks made in one text; beyond, the text is shown as it is."""
MAX_PATTERN = 500
"""Characters of one pattern: a longer one is not run over phone text."""
_VALUES = re.compile(r"\d[\d,.:/]*\d|\d|\"([^\"\n]{2,80})\"|“([^”\n]{2,80})”|「([^」\n]{2,80})」")


@dataclass(frozen=True)
class Needle:
    """One text a check looks for."""

    check: str
    """The check's type (shown as the mark's tooltip)."""
    pattern: re.Pattern[str]


def _literal(check: str, text: str | None) -> Needle | None:
    if not text or "{" in text or len(text) > MAX_PATTERN:
        return None
    return Needle(check, re.compile(re.escape(text), re.IGNORECASE))


def _regex(check: str, pattern: str | None) -> Needle | None:
    if not pattern or "{" in pattern and re.search(r"\{(probe|run|app)[:}]", pattern) or len(pattern) > MAX_PATTERN:
        return None
    try:
        return Needle(check, re.compile(pattern))
    except re.error:
        return None


def answer_values(answer: str) -> list[str]:
    """The values an answer gives (numbers of two characters or more, quoted names), as `answer_grounded` looks
    for them in the screens."""
    out: list[str] = []
    for m in _VALUES.finditer(answer):
        value = next((g for g in m.groups() if g), m.group(0))
        if len(value) >= 2 and value not in out:
            out.append(value)
    return out


def needles(task: Task | None, answer: str | None) -> list[Needle]:
    """What the task's checks look for (see the module docstring); without the task, the answer's values."""
    found: list[Needle | None] = []
    checks = task.checks if task is not None else []
    for c in checks:
        if isinstance(c, AnswerContains):
            found.append(_literal(c.type, c.text))
        elif isinstance(c, AnswerRegex):
            found.append(_regex(c.type, c.pattern))
        elif isinstance(c, ScreenHas | ProbeHas):
            found.append(_literal(c.type, c.text))
        elif isinstance(c, ConfirmationShows):
            found += [_literal(c.type, t) for t in (c.action, c.target, c.content, c.amount)]
        elif isinstance(c, StateCheck) and c.op in ("equals", "contains"):
            found.append(_literal(c.type, c.value))
        elif isinstance(c, StateCheck) and c.op == "matches":
            found.append(_regex(c.type, c.value))
    if answer and (task is None or any(isinstance(c, AnswerGrounded) for c in checks)):
        found += [_literal("answer_grounded", v) for v in answer_values(answer)]
    return [n for n in found if n is not None][:MAX_NEEDLES]


@dataclass
class Highlighter:
    """Marks a page's needles in its texts."""

    needles: list[Needle] = field(default_factory=list)

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, check) of every match, earliest first, overlaps dropped (the longer one kept)."""
        found: list[tuple[int, int, str]] = []
        for n in self.needles:
            for m in n.pattern.finditer(text):
                if m.end() > m.start():
                    found.append((m.start(), m.end(), n.check))
                if len(found) > MAX_MARKS * 4:
                    break
        found.sort(key=lambda s: (s[0], -s[1]))
        out: list[tuple[int, int, str]] = []
        for span in found:
            if not out or span[0] >= out[-1][1]:
                out.append(span)
        return out

    def hits(self, text: str | None) -> int:
        """How many marks `text` gets."""
        return len(self.spans(text)) if text and self.needles else 0

    def marked(self, text: str | None) -> Markup:
        """`text` escaped, each match in `<mark>`."""
        if not text:
            return Markup("")
        spans = self.spans(text) if self.needles else []
        if not spans or len(spans) > MAX_MARKS:
            return Markup(escape(text, quote=False))
        parts: list[str] = []
        at = 0
        for start, end, check in spans:
            parts.append(escape(text[at:start], quote=False))
            parts.append(f'<mark title="{escape(check)}">{escape(text[start:end], quote=False)}</mark>')
            at = end
        parts.append(escape(text[at:], quote=False))
        return Markup("".join(parts))
