"""history.md and history.html: `History` as tables (the same sections in both) and, in the html, inline SVG charts
of the pass rate per night with Wilson whiskers (no scripts, no network).

Nights link to their reports and units to their run records, by paths relative to the written file, so the links
work opened from disk; every link target is percent-encoded and every text escaped (run directories, evidence
paths, task ids and reasons come from records, which are not ours)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from urllib.parse import quote

from farm.errors import FarmError
from farm.fsutil import atomic_write_text, create_new_text
from farm.report.charts import rate_chart
from farm.report.history_data import History, NightRow, PairChange
from farm.report.history_model import AppChange, NightCount, TaskCell, TaskRow
from farm.report.markdown import md_text, pct
from farm.report.model import RateRow
from farm.report.run_setup import app_changes_by_phone

HISTORY_FILES = ("history.md", "history.html")
_NUMERIC = {"attempted", "passed", "errors", "rate", "planned", "skipped", "phones used", "left out", "repeat",
            "passed now", "failed now", "nights mixed", "all passed", "all failed"}
_NUM_CLASS = ' class="n"'
_TITLE_REASON = 120
"""Characters of a unit's reason in its link's tooltip: the grid repeats it in every cell."""
_RATE_HEAD = ["attempted", "passed", "errors", "rate", "95% CI (Wilson)", "planned", "skipped"]
_NIGHT_APPS = 3
"""App version changes a night's row names (the same change on several phones counts once); the section lists all."""
MAX_APP_ROWS = 200
"""Rows of the app version changes table (the newest nights' are kept)."""


@dataclass(frozen=True)
class _Link:
    text: str
    href: str | None = None
    """Relative to the runs directory; None: plain text."""
    title: str = ""
    """What the link leads to, in words (a tooltip)."""


_Cell = str | tuple[_Link, ...]
"""Plain text, or text and links."""


@dataclass
class _Section:
    title: str
    head: list[str]
    rows: list[list[_Cell]]
    text: list[str] = field(default_factory=list)
    level: int = 2
    chart: str = ""
    """Inline SVG, html only."""
    empty: str = "None."
    quoted: list[str] = field(default_factory=list)
    """Lines (after `text`) that hold phone- or record-written text: escaped in the Markdown too, where `text`, this
    module's own words, is written as it is."""


def default_out_dir(runs_dir: Path, label: str | None, newest: str) -> Path:
    """`<runs-dir>/history/<label or all>-<newest run id>/` (the label made safe for a directory name)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", label) if label else "all"
    return runs_dir / "history" / f"{name}-{newest}"


def _mark(night: NightRow) -> str:
    # An unfinished night is incomplete evidence: every row and chart bar that shows it says so.
    return "" if night.status == "finished" else f" ⚠ {night.status}"


def _bar(night: NightRow, row: RateRow) -> RateRow:
    # The chart cuts long labels at the end: the mark goes first so it survives (the table beside names the state).
    return row.model_copy(update={"key": ("" if night.status == "finished" else "⚠ ") + night.run_id})


def _rate_cells(row: RateRow) -> list[str]:
    ci = "–" if row.low is None else f"{pct(row.low)} – {pct(row.high)}"
    return [str(row.attempted), str(row.passed), str(row.errors), pct(row.rate), ci, str(row.planned),
            str(row.skipped)]


def _task(task_id: str, instance: str) -> str:
    return f"{task_id} [instance {instance}]" if instance else task_id


def _judged(passed: int, failed: int) -> str:
    return f"{passed}/{passed + failed} passed" if passed + failed else "–"


def _changes(title: str, rows: list[PairChange], text: str) -> _Section:
    return _Section(
        f"{title} ({len(rows)})",
        ["task", "lane", "phone / device", "previous night", "newest night", "why (first reason of each failure)"],
        [[_task(c.task_id, c.instance), c.lane, c.group, _judged(c.before_passed, c.before_failed),
          _judged(c.after_passed, c.after_failed), "; ".join(c.reasons)] for c in rows],
        [text], level=3,
    )


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _count(c: NightCount) -> str:
    text = f"{c.passed}/{c.judged}" if c.judged else "–"
    return f"{text} e{c.errors}" if c.errors else text


def _cell(c: TaskCell, report: str | None) -> tuple[_Link, ...]:
    units = tuple(_Link("✗" if u.status == "failed" else "⚠", u.evidence,
                        f"{u.phone} · repeat {u.repeat}: {_cut(u.reason, _TITLE_REASON)}") for u in c.units)
    more = (_Link(f"+{c.units_more}"),) if c.units_more else ()
    # The count opens a unit of the cell (its first failure, else error, else pass), as the viewer's matrix does;
    # a cell none of whose units names a run record opens the night's report.
    if c.unit is None:
        return (_Link(_count(c), report), *units, *more)
    what = "its first unit that did not pass" if c.units else "a unit of the task"
    return (_Link(_count(c), c.unit, f"{c.run_id}: {what}"), *units, *more)


def _flags(t: TaskRow) -> str:
    return ", ".join(name for name, on in (("flaky", t.flaky), ("regressed", t.regressed)) if on)


def _flaky(h: History) -> _Section:
    k, more = h.flaky_nights, h.flaky_more
    return _Section(
        f"Flaky ({len(h.flaky) + more})",
        ["task", "lane", "category", "new", "nights mixed", "all passed", "all failed", f"last {k} nights",
         "flaky on"],
        [[_task(f.task_id, f.instance), f.lane, f.category, "new" if f.new else "", str(f.nights_mixed),
          str(f.nights_passed), str(f.nights_failed), " · ".join(_count(c) for c in f.cells), ", ".join(f.phones)]
         for f in h.flaky],
        [f"Judged units both passed and failed over the last {k} nights: within a night (phones, repeats) or from"
         f" one night to another. New: not flaky over the {k} nights ending with the previous one. Skips and"
         " infrastructure errors are never judged. Night by night: passed/judged (eN: infrastructure errors)."
         " Flaky on: the phones whose own verdicts changed; none when each phone is steady and the phones"
         " disagree.", *([f"{more} more flaky tasks not shown."] if more else [])],
    )


def _grid(h: History) -> _Section:
    nights = {n.run_id: n for n in h.nights}
    shown = f"; {len(h.tasks)} shown, {h.tasks_more} more tasks not shown" if h.tasks_more else ""
    return _Section(
        f"Tasks night by night ({len(h.tasks) + h.tasks_more})",
        ["task", "lane", "category", "flags", *(r + (_mark(nights[r]) if r in nights else "") for r in h.task_nights)],
        [[_task(t.task_id, t.instance), t.lane, t.category, _flags(t),
          *(_cell(c, nights[c.run_id].report if c.run_id in nights else None) for c in t.cells)] for t in h.tasks],
        [f"One row per task: flaky and regressed tasks first, then by task id{shown}. Each cell: passed/judged units"
         " of the night (– none judged; eN: infrastructure errors), linking to a unit of the task that night (its"
         " first failure, else its first error, else a pass; the night's report when no unit kept a run record);"
         " ✗ (failed) and ⚠ (infrastructure error) link to each unit that did not pass."],
    )


def _counting(h: History) -> list[str]:
    holdout = ("Holdout pool: counted." if h.include_holdout else f"Holdout pool: hidden ({h.hidden_holdout} units"
               " over these nights); pass --include-holdout to count it.")
    return [
        "Counted as the reports count: latest attempt per unit; skipped units are not attempted; infrastructure"
        " errors stay in the denominator and are counted apart. Verdicts are before human re-judgement:"
        " overrides are not applied in history.", holdout,
    ]


def _night_apps(changes: list[AppChange]) -> str:
    """One night's app version changes in its rate row: `com.tencent.mm 8.0.50 → 8.0.51 (3 phones)`, the same change
    on several phones once, at most `_NIGHT_APPS` of them."""
    phones: dict[str, list[str]] = {}
    for c in changes:
        phones.setdefault(c.text(), []).append(c.phone)
    shown = [f"{text} ({on[0] if len(on) == 1 else f'{len(on)} phones'})" for text, on in phones.items()]
    more = len(shown) - _NIGHT_APPS
    return "; ".join(shown[:_NIGHT_APPS]) + (f"; +{more} more" if more > 0 else "")


def _apps(h: History) -> _Section:
    shown = h.app_changes[-MAX_APP_ROWS:]
    more = len(h.app_changes) - len(shown)
    return _Section(
        f"App version changes ({len(h.app_changes)})", ["between", "phone", "package", "before → after"],
        [[f"{c.before_run} → {c.after_run}", c.phone, c.package, " → ".join(c.versions())] for c in shown],
        ["Versions of the agent app and of the apps the tasks touch, read on each phone before its first unit,"
         " against that phone's previous night with versions recorded: an app update may move a rate with no"
         " change of the agent's.", *([f"{more} older changes not shown."] if more else [])],
    )


def _sections(h: History) -> list[_Section]:
    nights = h.nights
    out = [_Section(
        "Pass rate per night", ["night", "created", "status", *_RATE_HEAD, "phones used", "left out",
                                "app versions changed"],
        [[(_Link(n.run_id + _mark(n), n.report),), n.created_at, n.status,
          *_rate_cells(n.overall), str(n.phones_used), str(n.phones_left_out),
          _night_apps([c for c in h.app_changes if c.after_run == n.run_id])] for n in nights],
        chart=rate_chart([_bar(n, n.overall) for n in nights]),
    )]
    for category in sorted({c.key for n in nights for c in n.by_category}):
        rows = [(n, c) for n in nights for c in n.by_category if c.key == category]
        out.append(_Section(
            f"Category {category}", ["night", *_RATE_HEAD], [[n.run_id + _mark(n), *_rate_cells(c)] for n, c in rows],
            level=3, chart=rate_chart([_bar(n, c) for n, c in rows]),
        ))
    if h.previous is None:
        out.append(_Section("Newest night against the previous", [], [], empty="Only one night: nothing to compare."))
    else:
        p = "–" if h.mcnemar_p is None else f"{h.mcnemar_p:.4g}"
        out.append(_Section(f"Newest night {h.newest} against the previous {h.previous}", [], [], text=[
            "Pairs are task × phone (task × device off the android lane); every judged unit of a pair counts"
            " (its repeats); skipped units and infrastructure errors are never judged.",
            f"Pairs judged on both nights: {h.paired} · regressions {len(h.regressions)} · fixes {len(h.fixes)}"
            f" · exact McNemar p = {p} (two-sided, over those pairs).",
            *(f"⚠ {n.run_id} is {n.status}: the comparison covers only the units it ran." for n in nights[-2:]
              if n.status != "finished"),
        ], empty="", quoted=[f"App versions changed on the newest night: {line}." for line in
                             app_changes_by_phone([c for c in h.app_changes if c.after_run == h.newest])]))
        out += [
            _changes("Regressions", h.regressions, "Every judged unit passed on the previous night; at least one"
                     " failed on the newest."),
            _changes("Fixes", h.fixes, "At least one judged unit failed on the previous night; every one passed on"
                     " the newest."),
            _changes("New on the newest night", h.new, "No unit at all on the previous night: not a regression."),
            _changes("Gone from the newest night", h.gone, "Judged on the previous night, no unit on the newest."),
        ]
    if h.newest is not None:
        out.append(_Section(
            f"Infrastructure errors on the newest night ({len(h.errors)})", ["task", "lane", "repeat", "phone",
                                                                            "reason"],
            [[_task(e.task_id, e.instance), e.lane, str(e.repeat), e.phone, e.reason] for e in h.errors],
            ["Listed apart: an infrastructure error is never a regression (it stays in the rate's denominator)."],
            level=3,
        ))
        out.append(_flaky(h))
    if h.tasks or h.tasks_more:
        out.append(_grid(h))
    out.append(_apps(h))
    out.append(_Section(
        f"Phone health changes ({len(h.health)})", ["between", "phone", "change", "reason"],
        [[f"{c.before_run} → {c.after_run}", c.phone, c.kind.replace("_", " "), c.reason or ""] for c in h.health],
        ["From the manifests: used ↔ left out by the health gate, or a phone that appeared or disappeared."
         " Phones go by their stable names (the table below says where each is)."],
    ))
    out.append(_Section(
        f"Phones ({len(h.phones)})", ["phone", "serial", "adb server", "model"],
        [[p.name, p.serial, p.adb_server or "–", p.model or "–"] for p in h.phones],
        ["Each phone keeps its name from night to night: its `phone_labels` entry in farm.yaml, else its model and"
         " the end of its serial; serial and adb server as the newest night that had it recorded them."],
    ))
    return out


def _title(h: History) -> str:
    which = f"label {h.label!r}" if h.label is not None else "all runs"
    return f"Night over night — {which}, {len(h.nights)} night{'' if len(h.nights) == 1 else 's'}"


def _url(runs_link: str, href: str) -> str:
    """`href` (relative to the runs directory) as seen from where `runs_link` leads there, percent-encoded: a path
    with spaces, quotes, `#`, `?`, `:` or brackets stays one relative path, never a scheme or a fragment."""
    return quote(href if runs_link in ("", ".") else f"{runs_link}/{href}", safe="/")


def _md_link(link: _Link, runs_link: str) -> str:
    if link.href is None:
        return md_text(link.text)
    # md_text escapes backslashes first, so a quote escaped here cannot be undone by one in the data.
    text, title = md_text(link.text), md_text(link.title).replace('"', '\\"')
    return f'[{text}]({_url(runs_link, link.href)} "{title}")' if title else f"[{text}]({_url(runs_link, link.href)})"


def _md(cell: _Cell, runs_link: str) -> str:
    return md_text(cell) if isinstance(cell, str) else " ".join(_md_link(c, runs_link) for c in cell)


def _html_link(link: _Link, runs_link: str) -> str:
    if link.href is None:
        return escape(link.text)
    title = f' title="{escape(link.title)}"' if link.title else ""
    return f'<a href="{escape(_url(runs_link, link.href))}"{title}>{escape(link.text)}</a>'


def _html(cell: _Cell, runs_link: str) -> str:
    return escape(cell) if isinstance(cell, str) else " ".join(_html_link(c, runs_link) for c in cell)


def render_history_markdown(h: History, *, runs_link: str = "") -> str:
    """The whole history.md; links lead to the runs directory through `runs_link` (where it is, relative to the
    file; empty: the file is in it)."""
    lines = [f"# {_title(h)}", "", f"Runs read from {h.runs_dir}; newest night {h.newest}."]
    lines += [f"\n{t}" for t in _counting(h)] + [f"\n**Warning:** {md_text(w)}" for w in h.warnings]
    for s in _sections(h):
        lines += ["", f"{'#' * s.level} {s.title}", *(f"\n{t}" for t in s.text), *(f"\n{md_text(t)}" for t in s.quoted)]
        if s.rows:
            lines += ["", "| " + " | ".join(md_text(c) for c in s.head) + " |",
                      "|" + "|".join("---:" if c in _NUMERIC else "---" for c in s.head) + "|"]
            lines += ["| " + " | ".join(_md(c, runs_link) for c in row) + " |" for row in s.rows]
        elif s.empty:
            lines += ["", s.empty]
    return "\n".join(lines) + "\n"


_STYLE = """body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1100px; }
table { border-collapse: collapse; margin: .5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.note { color: #555; }
.scroll { overflow-x: auto; }
.warn { background: #fde2e1; padding: .4em .8em; border-left: 4px solid #c0392b; }"""


def render_history_html(h: History, *, runs_link: str = "") -> str:
    """The self-contained history.html (inline CSS and SVG; no scripts, no network); links as in
    `render_history_markdown`."""
    title = escape(_title(h))
    parts = [f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{title}</title>',
             f"<style>\n{_STYLE}\n</style>\n</head>\n<body>\n<h1>{title}</h1>",
             f'<p class="note">Runs read from {escape(h.runs_dir)}; newest night {escape(h.newest or "–")}.</p>']
    parts += [f'<p class="note">{escape(t)}</p>' for t in _counting(h)]
    parts += [f'<p class="warn">Warning: {escape(w)}</p>' for w in h.warnings]
    for s in _sections(h):
        parts.append(f"<h{s.level}>{escape(s.title)}</h{s.level}>")
        parts += [f"<p>{escape(t)}</p>" for t in [*s.text, *s.quoted]]
        parts.append(s.chart)  # built from numbers and escaped labels by rate_chart
        if s.rows:
            parts.append('<div class="scroll"><table><tr>' + "".join(f"<th>{escape(c)}</th>" for c in s.head)
                         + "</tr>")
            parts += ["<tr>" + "".join(f"<td{_NUM_CLASS if c in _NUMERIC else ''}>{_html(v, runs_link)}</td>"
                                       for c, v in zip(s.head, row, strict=True)) + "</tr>" for row in s.rows]
            parts.append("</table></div>")
        elif s.empty:
            parts.append(f"<p>{escape(s.empty)}</p>")
    parts.append("</body>\n</html>\n")
    return "\n".join(p for p in parts if p)


def write_history(h: History, out_dir: Path, *, own: bool = False) -> list[Path]:
    """Write history.md and history.html into `out_dir`; refuse (FarmError) when either exists, before writing —
    unless `own`: `out_dir` is the label's own folder (`default_out_dir`), whose files are rewritten atomically
    (the same nights give the same history)."""
    paths = [out_dir / name for name in HISTORY_FILES]
    # The links lead from the written files to the runs, wherever --out put them.
    runs_link = Path(os.path.relpath(h.runs_dir or ".", out_dir)).as_posix()
    for path in paths:
        if path.exists() and not own:
            raise FarmError(f"{path}: already exists", hint="pass --out with a new directory; history is never"
                                                            " overwritten")
    texts = (render_history_markdown(h, runs_link=runs_link), render_history_html(h, runs_link=runs_link))
    for path, text in zip(paths, texts, strict=True):
        try:
            if own:
                out_dir.mkdir(parents=True, exist_ok=True)
                atomic_write_text(path, text)
            else:
                create_new_text(path, text, what="history")
        except OSError as exc:
            raise FarmError(f"{path}: cannot write history ({exc.strerror or exc})",
                            hint="pass --out with a directory you can write to") from None
    return paths
