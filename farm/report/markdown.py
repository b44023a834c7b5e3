"""report.md: the tables of `ReportData`, with device labels (never serials) and no full answers.

Every piece of text that comes from a phone or a record file goes through `md_text` where it enters a line.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from farm.report.model import CountRow, OverrideRow, RateRow, ReportData, SkipRow, SumRow
from farm.results.headline import headline_text


def pct(value: float | None) -> str:
    """A rate as `70.0%`; `–` when unknown."""
    return "–" if value is None else f"{value * 100:.1f}%"


def num(value: float | None, digits: int = 0) -> str:
    """A number, `–` when unknown."""
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def _verdict(passed: bool) -> str:
    return "pass" if passed else "fail"


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


def rate_table(rows: list[RateRow], head: str) -> list[str]:
    """A rate table: group, attempted, passed, errors, rate, Wilson 95 % CI, then planned and skipped."""
    out = [
        f"| {head} | attempted | passed | errors | rate | 95% CI (Wilson) | planned | skipped |",
        "|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        ci = "–" if r.low is None else f"{pct(r.low)} – {pct(r.high)}"
        out.append(
            f"| {md_text(r.key)} | {r.attempted} | {r.passed} | {r.errors} | {pct(r.rate)} | {ci} | {r.planned}"
            f" | {r.skipped} |"
        )
    return out


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
    out += [f"See also: {esc(link)}" for link in data.links]
    if data.disagreements_total:
        n = data.disagreements_total
        out.append(f"Phone and host disagree on {n} attempt{'' if n == 1 else 's'} (listed below).")
    if data.end_reasons:
        out.append(f"Not passed, ended by: {counts_text(data.end_reasons, data.end_reason_unrecorded, esc)}.")
    return out


def category_change(o: OverrideRow) -> str:
    """`route → perception`, or the one category when unchanged (empty when there is none)."""
    if o.category_from == o.category_to:
        return o.category_from
    return f"{o.category_from or 'none'} → {o.category_to or 'none'}"


def _sum_line(row: SumRow, digits: int = 0) -> str:
    note = "" if row.unknown == 0 else f" ({row.unknown} unknown)"
    return f"| {row.name} | {num(row.total, digits)}{note} | {row.known} | {row.unknown} |"


_SAFE_PATH = re.compile(r"[A-Za-z0-9._/-]+")


def evidence_href(data: ReportData, run: str, evidence: str) -> str | None:
    """The link from the report to an attempt's run record, or None (none kept, or a path not to link)."""
    base = data.run_paths.get(run)
    if not evidence or base is None or not _SAFE_PATH.fullmatch(evidence) or ".." in evidence.split("/"):
        return None
    return evidence if base == "." else f"{base}/{evidence}"


def _failures(data: ReportData) -> list[str]:
    lines = [f"## Not passed ({data.failures_total})", "",
             "Grouped by category and failure category; each links to its run record where one was kept.", "",
             "| category | failure category | task | phone | outcome | reason | evidence |", "|---" * 7 + "|"]
    for t in data.failures:
        href = evidence_href(data, t.run, t.evidence)
        unit = md_text(data.unit(t.task_id, t.instance, t.repeat))
        link = f"[run record]({href})" if href else ""
        lines.append(f"| {md_text(t.category)} | {md_text(t.failure_category)} | {unit} | {md_text(t.device)}"
                     f" | {md_text(t.outcome)} | {md_text(t.reason)} | {link} |")
    if data.failures_total > len(data.failures):
        lines.append(f"\n… {data.failures_total - len(data.failures)} more not listed (see scores.csv).")
    return [*lines, ""]


def _comparison(data: ReportData) -> list[str]:
    c = data.comparison
    if c is None:
        return []
    ci = "–" if c.diff_low is None else f"{pct(c.diff_low)} – {pct(c.diff_high)}"
    return [
        f"## Paired comparison: {md_text(c.run_a)} (A) vs {md_text(c.run_b)} (B)", "",
        f"Difference B − A: {pct(c.diff)} (paired bootstrap 95% CI {ci}, {c.resamples} resamples, seed {c.seed});"
        f" exact McNemar p = {c.mcnemar_p:.4g}.", "",
        "| units | both passed | only A | only B | neither | rate A | rate B |", "|---:" * 7 + "|",
        f"| {c.units} | {c.both} | {c.only_a} | {c.only_b} | {c.neither} | {pct(c.rate_a)} | {pct(c.rate_b)} |", "",
    ]


def _skip_table(title: str, rows: list[SkipRow], total: int, data: ReportData, more: str) -> list[str]:
    lines = [f"## {title}", "", "| task | phone | reason |", "|---|---|---|"]
    lines += [f"| {md_text(data.unit(s.task_id, s.instance, s.repeat))} | {md_text(s.device)} | {md_text(s.reason)} |"
              for s in rows]
    if total > len(rows):
        lines.append(f"\n… {total - len(rows)} {more}")
    return [*lines, ""]


def render_markdown(data: ReportData) -> str:
    """The whole report.md: what changed and what broke first, the breakdowns next, what was skipped last.
    A section with nothing to show is left out."""
    lines = [f"# Evaluation report — {', '.join(md_text(r) for r in data.runs)}", ""]
    execution = ", ".join(map(md_text, data.execution)) or "–"
    lines.append(f"Generated {md_text(data.generated_at)}. Execution: {execution}.")
    if "simulated" in data.execution:
        lines.append("Simulated results come from the virtual phone, not from a real device or model.")
    if data.include_holdout:
        lines.append("Holdout pool: shown (release decisions only — do not tune on it).")
    else:
        lines.append(
            f"Holdout pool: hidden — {data.hidden_holdout_tasks} holdout tasks"
            f" ({data.hidden_holdout_attempts} attempts) not shown; pass --include-holdout to show them."
        )
    lines.append(
        "Rates: passed / attempted; skipped tasks are not attempted; infrastructure errors stay in the"
        " denominator and are counted apart."
    )
    for warning in data.warnings:
        lines += ["", f"**Warning:** {md_text(warning)}"]
    lines += ["", "## Headline", "", headline_text(data.overall)]
    if notes := headline_notes(data, md_text):
        lines += ["", *notes]
    lines.append("")
    lines += _comparison(data)
    if data.left_out:
        lines += [f"## Phones left out ({len(data.left_out)})", "", "Not used, so not in these numbers.", "",
                  "| run | phone | reason |", "|---|---|---|"]
        lines += [f"| {md_text(r.run)} | {md_text(r.device)} | {md_text(r.reason)} |" for r in data.left_out]
        lines.append("")
    if data.failures_total:
        lines += _failures(data)
    if data.failure_categories:
        lines += ["## Failure categories", "", "| failure category | count |", "|---|---:|"]
        lines += [f"| {md_text(c.key)} | {c.count} |" for c in data.failure_categories]
        lines.append("")
    if data.disagreements_total:
        lines += [f"## Phone and host disagree ({data.disagreements_total})", "",
                  "| task | phone | phone said | host said | host's reason |", "|---|---|---|---|---|"]
        lines += [
            f"| {md_text(data.unit(d.task_id, d.instance, d.repeat))} | {md_text(d.device)}"
            f" | {md_text(d.phone_outcome)} / {_verdict(d.phone_passed)} | {md_text(d.host_outcome)}"
            f" / {_verdict(d.host_passed)}"
            f" | {md_text(d.reason)} |"
            for d in data.disagreements
        ]
        if data.disagreements_total > len(data.disagreements):
            lines.append(f"\n… {data.disagreements_total - len(data.disagreements)} more not listed.")
        lines.append("")
    if data.retried_total:
        lines += [f"## Retried after infrastructure failures ({data.retried_total})", "",
                  "Earlier tries of these units failed for an infrastructure reason; every try is in the run's "
                  "journal and in the record's `extra.tries`.", "", "| task | phone | tries | outcome |",
                  "|---|---|---:|---|"]
        lines += [f"| {md_text(data.unit(r.task_id, r.instance, r.repeat))} | {md_text(r.device)} | {r.attempt}"
                  f" | {md_text(r.outcome)} |" for r in data.retried]
        lines.append("")
    lines += ["## By category", "", *rate_table(data.by_category, "category"), ""]
    lines += ["## By phone", "", *rate_table(data.by_device, "phone"), ""]
    lines += ["## Overall", "", *rate_table([data.overall], "group"), ""]
    lines += ["## By partition", "", *rate_table(data.by_partition, "partition"), ""]
    lines += ["## By expected outcome", "", *rate_table(data.by_expect, "expect"), ""]
    lines += ["## Outcomes", "", "| outcome | count |", "|---|---:|"]
    lines += [f"| {md_text(o.key)} | {o.count} |" for o in data.outcomes]
    lines += ["", f"Infrastructure errors: {data.infrastructure_errors}", ""]
    lines += ["## 运行小结", "", "| metric | n | median | P90 |", "|---|---:|---:|---:|"]
    lines += [f"| {s.name} | {s.n} | {num(s.median, 1)} | {num(s.p90, 1)} |" for s in data.timing]
    known_total = sum(r.total or 0 for r in data.time_split)
    lines += ["", "Time split (ms):", "", "| part | total | known | unknown | share |", "|---|---:|---:|---:|---:|"]
    for r in data.time_split:
        share = pct(r.total / known_total) if r.total is not None and known_total else "–"
        lines.append(f"{_sum_line(r)} {share} |")
    lines += ["", "## Tokens and cost", "", "| item | total | known | unknown |", "|---|---:|---:|---:|"]
    lines += [_sum_line(t) for t in data.tokens]
    lines += [_sum_line(data.cost, 4), ""]
    if data.overrides:
        lines += ["## 人工改判", "",
                  "| run | task | phone | initial | final | failure category | applied | note | evidence |",
                  "|---" * 9 + "|"]
        lines += [
            f"| {md_text(o.run)} | {md_text(data.unit(o.task_id, o.instance, o.repeat))} | {md_text(o.device)}"
            f" | {md_text(o.initial)} | {md_text(o.final)} | {md_text(category_change(o))}"
            f" | {'yes' if o.applied else 'no'} | {md_text(o.note)} | {md_text(o.evidence)} |"
            for o in data.overrides
        ]
        lines.append("")
    if data.markers:
        lines += ["## Markers to clean up", "", "| phone | task | markers |", "|---|---|---|"]
        lines += [f"| {md_text(m.device)} | {md_text(m.task_id)} | {md_text(', '.join(m.markers))} |"
                  for m in data.markers]
        if data.markers_total > len(data.markers):
            lines.append(
                f"\n… {data.markers_total - len(data.markers)} more attempts left markers; list them all with"
                ' `farm query "SELECT device, task_id, markers FROM records WHERE len(markers) > 0"`.'
            )
        lines.append("")
    if data.skipped_total:
        lines += _skip_table(f"Skipped ({data.skipped_total})", data.skipped, data.skipped_total, data,
                             "more skipped attempts not listed.")
    login_total = max(data.login_handover_total, len(data.login_handover))
    if login_total:
        lines += _skip_table(f"交给用户:login ({login_total}) — not counted as success", data.login_handover,
                             login_total, data, "more login hand-overs not listed (see scores.csv).")
    if data.notes:
        lines += [f"## Run notes ({data.notes_total})", "",
                  "What the run recorded on the way: quarantines, refused pull entries, unreachable adb servers.", ""]
        lines += [f"- {md_text(n)}" for n in data.notes]
        if data.notes_total > len(data.notes):
            lines.append(f"- … {data.notes_total - len(data.notes)} more in the run's manifest.json")
    return "\n".join(lines).rstrip("\n") + "\n"
