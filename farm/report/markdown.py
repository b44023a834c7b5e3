"""report.md: the tables of `ReportData` rendered from templates/report.md.j2, with device labels (never
serials) and no full answers.

Every value the template writes goes through `md_text` (the environment's `finalize`), so phone- or
record-written text can never end a table cell or start a line; only what this module builds itself (links to
validated paths, notes it escaped) is marked `Raw` and passes as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from farm.report.charts import VERDICT_SYMBOLS, VERDICT_WORDS, duration
from farm.report.headline import headline_text
from farm.report.model import CountRow, OverrideRow, ReportData, SinceRow, SumRow
from farm.report.run_setup import (
    AppVersionChange,
    SideSetup,
    app_changes_by_phone,
    app_version_changes,
    differences_text,
    setup_text,
)

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATES = Path(__file__).parent / "templates"


def pct(value: float | None) -> str:
    """A rate as `70.0%`; `–` when unknown."""
    return "–" if value is None else f"{value * 100:.1f}%"


def num(value: float | None, digits: int = 0) -> str:
    """A number, `–` when unknown."""
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


# The backslash itself too, so one in the data cannot undo an escape added here (`\|` must not become `\\|`).
# `[` `]` stop links and images, `<` `>` `&` raw HTML, autolinks and entities, `|` the table, a backtick a
# code span that would show the escapes themselves; `*` `~` (and `_`, below) emphasis and strike-through.
_MD_ESCAPES = str.maketrans({
    "\\": "\\\\", "|": "\\|", "[": "\\[", "]": "\\]", "`": "\\`", "*": "\\*", "~": "\\~",
    "<": "&lt;", ">": "&gt;", "&": "&amp;",
})
# Controls a terminal or a renderer would act on, and bidirectional overrides that reorder what is shown.
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# An underscore between two letters or digits can neither open nor close emphasis; left bare, `max_steps`
# and `app_state` stay readable in the file.
_EMPHASIS_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")


def md_text(text: object) -> str:
    """Phone- or record-written text as inert Markdown on one line: it shows as written, and cannot end a
    table cell, start a line, link, embed an image or HTML, or format itself."""
    one_line = _HIDDEN.sub("\ufffd", " ".join(str(text).split()))
    return _EMPHASIS_UNDERSCORE.sub(r"\_", one_line.translate(_MD_ESCAPES))


def _plain(text: object) -> str:
    return str(text)


def counts_text(rows: list[CountRow], unrecorded: int = 0, esc: Callable[[object], str] = _plain) -> str:
    """`max_steps 3, timeout 1` (most frequent first), with `not recorded N` when some did not say; `esc`
    escapes the keys for the output format."""
    return ", ".join([f"{esc(c.key)} {c.count}" for c in rows] + ([f"not recorded {unrecorded}"] if unrecorded else []))


def headline_notes(data: ReportData, esc: Callable[[object], str] = _plain) -> list[str]:
    """The lines under the headline: disagreements between phone and host, and why non-passes ended. `esc`
    escapes the text taken from the data for the output format (the HTML template escapes on its own)."""
    out = []
    if data.unfinished_runs:
        out.append(f"Not finished: {', '.join(esc(r) for r in data.unfinished_runs)} — these numbers cover only the"
                   " units recorded so far (a stopped run continues with `farm run --resume RUN`, a sweep with"
                   " `farm sweep --resume RUN`).")
    if data.since is not None:
        out.append(since_text(data.since, data.overall.rate, esc))
    out += [f"See also: {esc(link)}" for link in data.links]
    if data.disagreements_total:
        n = data.disagreements_total
        out.append(f"Phone and host disagree on {n} attempt{'' if n == 1 else 's'} (listed below).")
    if data.end_reasons:
        out.append(f"Not passed, ended by: {counts_text(data.end_reasons, data.end_reason_unrecorded, esc)}.")
    return out


def since_text(s: SinceRow, rate: float | None, esc: Callable[[object], str] = _plain) -> str:
    """`Since RUN (date): rate A → B; N regressed (…), M fixed (…) over P pairs judged in both runs. Like with
    like: same label …; lane …; holdout ….`"""

    def named(count: int, names: list[str]) -> str:
        more = f", … {count - len(names)} more" if count > len(names) else ""
        return f" ({', '.join(esc(n) for n in names)}{more})" if names else ""

    changed = s.tasks_changed
    return (f"Since {esc(s.previous_run)} ({esc(s.previous_created_at[:10])}): rate {pct(s.previous.rate)} → "
            f"{pct(rate)}; {s.regressions} regressed{named(s.regressions, s.regressed)}, {s.fixes} fixed"
            f"{named(s.fixes, s.fixed)}, over {s.paired} task × phone pairs judged in both runs"
            + (f" (exact McNemar p = {s.mcnemar_p:.3g})." if s.mcnemar_p is not None else ".")
            + (f" Like with like: {esc(s.compared)}." if s.compared else "")
            + (f" {changed} task{'' if changed == 1 else 's'} changed between the runs, not paired." if changed
               else ""))


def side_headlines(data: ReportData) -> list[str]:
    """A comparison's headline, one line per run (`A — ra: planned …`), each as that run's own report writes
    it; empty for one run. The two runs pooled are no headline."""
    c = data.comparison
    if c is None:
        return []
    return [f"A — {c.run_a}: {headline_text(c.side_a)}", f"B — {c.run_b}: {headline_text(c.side_b)}"]


def compared_lines(data: ReportData) -> list[str]:
    """What each run of a comparison measured, and where they differ (`A and B differ in executor (…)`)."""
    c = data.comparison
    if c is None:
        return []
    last = (differences_text(c.differences) if c.differences
            else "A and B measured alike: the same label, lanes, settings and holdout policy.")
    return [f"A — {c.run_a}: {setup_text(c.setup_a)}", f"B — {c.run_b}: {setup_text(c.setup_b)}", last]


def compared_apps(data: ReportData) -> list[AppVersionChange]:
    """The apps whose version differs between the two runs of a comparison, per phone (`app_version_changes` over
    the sides' manifests; phones by the report's names); empty for one run, or when a side recorded no versions."""
    c = data.comparison
    if c is None or not isinstance(c.setup_a, SideSetup) or not isinstance(c.setup_b, SideSetup):
        return []
    return app_version_changes(c.setup_a.phones, c.setup_b.phones, {p.serial: p.name for p in data.phones})


def category_change(o: OverrideRow) -> str:
    """`route → perception`, or the one category when unchanged (empty when there is none)."""
    if o.category_from == o.category_to:
        return o.category_from
    return f"{o.category_from or 'none'} → {o.category_to or 'none'}"


_SAFE_PATH = re.compile(r"[A-Za-z0-9._/-]+")


def evidence_href(data: ReportData, run: str, evidence: str) -> str | None:
    """The link from the report to an attempt's run record, or None (none kept, or a path not to link)."""
    base = data.run_paths.get(run)
    if not evidence or base is None or not _SAFE_PATH.fullmatch(evidence) or ".." in evidence.split("/"):
        return None
    return evidence if base == "." else f"{base}/{evidence}"


def run_label(data: ReportData, run: str) -> str:
    """A run as a comparison names it (`ra (A)`, `rb (B)`), or just its id."""
    c = data.comparison
    if c is None:
        return run
    return {c.run_a: f"{run} (A)", c.run_b: f"{run} (B)"}.get(run, run)


def shares(rows: Sequence[SumRow]) -> list[str]:
    """Each row's share of the known total (`–` when its total or the sum is unknown)."""
    known = sum(r.total or 0 for r in rows)
    return [pct(r.total / known) if r.total is not None and known else "–" for r in rows]


def table_rows(rows: Sequence[Sequence[str]], width: int) -> list[list[str]]:
    """Rows padded or cut to `width` cells, so a table another lane built stays a table."""
    return [[*row[:width], *[""] * (width - len(row))] for row in rows]


class Raw(str):
    """Text this module built itself and made safe for Markdown: written as it is."""

    __slots__ = ()


def _finalize(value: object) -> str:
    return value if isinstance(value, Raw) else md_text("" if value is None else value)


def template_globals(data: ReportData) -> dict[str, object]:
    """What both templates use beside the data: formatters, labels and the helpers of this module."""
    return {
        "d": data, "pct": pct, "num": num, "headline": headline_text(data.overall), "shares": shares,
        "category_change": category_change, "evidence_href": evidence_href,
        "run_label": lambda run: run_label(data, run),
        "symbols": VERDICT_SYMBOLS, "words": VERDICT_WORDS, "table_rows": table_rows, "duration": duration,
        "two_runs": len(data.runs) > 1, "side_headlines": side_headlines(data), "compared": compared_lines(data),
        "compared_apps": app_changes_by_phone(compared_apps(data)),
    }


def environment(*, markdown: bool) -> Environment:
    """The Jinja2 environment of report.md (`markdown`: every value through `md_text`) or of report.html
    (autoescaped)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        # Every template here renders phone-written text: escaping must not depend on a file name.
        autoescape=not markdown,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=StrictUndefined,
        finalize=_finalize if markdown else None,
    )
    env.filters["raw"] = Raw
    return env


_BLANK_RUNS = re.compile(r"\n{3,}")


def render_markdown(data: ReportData) -> str:
    """The whole report.md: what changed and what broke first, the breakdowns next, what was skipped last.
    A section with nothing to show is left out."""
    notes = [Raw(n) for n in headline_notes(data, md_text)]
    text = environment(markdown=True).get_template("report.md.j2").render(
        **template_globals(data), notes=notes, link=lambda text, href: Raw(f"[{md_text(text)}]({href})"),
    )
    # Sections are separated by one blank line however the template's blocks fell; escaped values never
    # hold a line break, so this touches only the template's own layout.
    return _BLANK_RUNS.sub("\n\n", text).strip("\n") + "\n"
