"""The paired backend report: success first, latency only over successes, pairs, failure penalty,
bootstrap intervals, order sensitivity and token columns — computed once, shown as tables (the run report's
web section and `farm web report` both), Markdown or one JSON object."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from farm.errors import FarmError
from farm.report.lanes import SectionTable
from farm.report.markdown import md_text
from farm.results.record import Tokens
from farm.results.stats import nearest_rank, paired_ratio_bootstrap, wilson
from web_bench.browser.contract import BACKEND_NAMES
from web_bench.paired.report_model import (
    BackendStats,
    FailedRun,
    OrderSplit,
    PairCounts,
    Ratio,
    TokenTotals,
    WebReport,
)
from web_bench.paired.results import RunIdentity, WebRun, read_results

# The web lane's bootstrap seed since its first report: keeping it keeps published intervals reproducible.
_BOOTSTRAP_SEED = 20260601
P90_MIN_SAMPLES = 10
"""P90 only from at least ten successes (fewer gives false precision)."""


def _penalised(run: WebRun) -> float:
    return run.timings.completion_ms if run.success else 2.0 * run.timeout_ms


def _token_totals(runs: list[WebRun]) -> TokenTotals:
    reported = [r.tokens for r in runs if r.tokens.known()]
    prompts = [t.prompt() for t in reported]
    return TokenTotals(
        usage=Tokens.total(reported), runs_with_usage=len(reported), runs=len(runs),
        prompt=None if not prompts or None in prompts else sum(p for p in prompts if p is not None),
    )


def _backend_stats(runs: list[WebRun]) -> BackendStats:
    wins = [r for r in runs if r.success]
    completions = sorted(r.timings.completion_ms for r in wins)
    reached = [r.timings.state_reached_ms for r in wins if r.timings.state_reached_ms is not None]
    ttft = [r.timings.ttft_ms for r in wins if r.timings.ttft_ms is not None]
    tool_wall = sorted(r.timings.tool_wall_ms for r in wins)
    return BackendStats(
        runs=len(runs), successes=len(wins), success_rate=len(wins) / len(runs) if runs else None,
        success_rate_ci95=wilson(len(wins), len(runs)).interval,
        infrastructure_errors=sum(1 for r in runs if r.infrastructure_error),
        p50_completion_ms=nearest_rank(completions, 50),
        p90_completion_ms=nearest_rank(completions, 90, min_samples=P90_MIN_SAMPLES),
        p50_state_reached_ms=nearest_rank(reached, 50),
        p50_tool_wall_ms=nearest_rank(tool_wall, 50),
        p90_tool_wall_ms=nearest_rank(tool_wall, 90, min_samples=P90_MIN_SAMPLES),
        p50_ttft_ms=nearest_rank(ttft, 50),
        failure_penalty_mean_ms=sum(_penalised(r) for r in runs) / len(runs) if runs else None,
        tokens=_token_totals(runs), success_completions_ms=completions,
        simulated_runs=sum(1 for r in runs if r.simulated_device),
    )


def _ratio(a: list[float], b: list[float], *, geometric: bool) -> Ratio:
    r = paired_ratio_bootstrap(a, b, geometric=geometric, seed=_BOOTSTRAP_SEED)
    return Ratio(n=r.n, value=r.ratio, ci95=r.interval)


def _latest_per_run(runs: Sequence[WebRun], lines: Sequence[int], source: str) -> tuple[list[WebRun], list[str]]:
    """One run per identity, the last line of each kept in its place; and one note per repeated identity."""
    seen: dict[RunIdentity, list[int]] = {}
    latest: dict[RunIdentity, WebRun] = {}
    for run, line in zip(runs, lines, strict=True):
        key = run.identity()
        seen.setdefault(key, []).append(line)
        # Re-inserted so the kept run sits where its last line was.
        latest.pop(key, None)
        latest[key] = run
    notes = [
        f"{source}: lines {', '.join(map(str, at))} are one run ({run_id}, {backend}, {task}:{seed}:{trial}); "
        f"line {at[-1]} counts"
        for (run_id, backend, task, seed, trial), at in seen.items() if len(at) > 1
    ]
    return list(latest.values()), notes


def build_report(
    runs: Sequence[WebRun], source: str, *, lines: Sequence[int] | None = None, rejected: Sequence[str] = (),
) -> WebReport:
    """The report of one results file (`lines`: the line of each run, default its position; `rejected`: the
    lines refused on reading). A run written twice counts once, from its last line. FarmError for a file
    without a valid run or with mixed suite versions."""
    if not runs:
        if rejected:
            raise FarmError(f"{source}: no valid runs; {len(rejected)} line(s) rejected, first: {rejected[0]}",
                            hint="is this a `farm web run` results file?")
        raise FarmError(f"{source}: no runs in the file", hint="run `farm web run` first")
    runs, duplicates = _latest_per_run(runs, range(1, len(runs) + 1) if lines is None else lines, source)
    versions = sorted({r.benchmark_suite_version for r in runs})
    if len(versions) > 1:
        raise FarmError(
            f"{source}: mixes benchmarkSuiteVersion {', '.join(map(str, versions))}",
            hint="keep one file per suite version and report them separately",
        )
    present = list(dict.fromkeys(r.backend for r in runs))
    ordered = [b for b in BACKEND_NAMES if b in present] + sorted(b for b in present if b not in BACKEND_NAMES)
    a = ordered[0]
    b = ordered[1] if len(ordered) > 1 else None
    by_backend = {name: [r for r in runs if r.backend == name] for name in ordered}
    # Keyed by run id too: the same pair id in two runs is two pairs, not one overwritten.
    pairs: dict[tuple[str, str], dict[str, WebRun]] = defaultdict(dict)
    for r in runs:
        pairs[(r.run_id, r.pair_id)][r.backend] = r
    complete = [p for p in pairs.values() if b is not None and a in p and b in p]
    counts = PairCounts(
        total=len(complete),
        both_success=sum(1 for p in complete if p[a].success and b and p[b].success),
        only_a=sum(1 for p in complete if p[a].success and b and not p[b].success),
        only_b=sum(1 for p in complete if not p[a].success and b and p[b].success),
        neither=sum(1 for p in complete if not p[a].success and b and not p[b].success),
    )
    both = [p for p in complete if b and p[a].success and p[b].success]

    def lat(sel: list[dict[str, WebRun]]) -> Ratio:
        assert b is not None or not sel
        return _ratio([p[a].timings.completion_ms for p in sel],
                      [p[b].timings.completion_ms for p in sel] if b else [], geometric=True)

    tasks: dict[str, dict[str, str]] = {}
    for r in runs:
        tasks.setdefault(r.task, {})
    for task in tasks:
        for name in ordered:
            mine = [r for r in by_backend[name] if r.task == task]
            tasks[task][name] = f"{sum(r.success for r in mine)}/{len(mine)}"
    return WebReport(
        suite_version=versions[0], source=source, backend_a=a, backend_b=b,
        backends={name: _backend_stats(rs) for name, rs in by_backend.items()},
        pairs=counts, latency_ratio=lat(both),
        failure_penalty_ratio=_ratio([_penalised(p[a]) for p in complete],
                                     [_penalised(p[b]) for p in complete] if b else [], geometric=False),
        order_sensitivity=OrderSplit(
            a_first=lat([p for p in both if p[a].order_in_pair == 1]),
            b_first=lat([p for p in both if b and p[b].order_in_pair == 1]),
        ),
        tasks=tasks,
        failures=[
            FailedRun(pair_id=r.pair_id, backend=r.backend, status=r.status, infrastructure=r.infrastructure_error,
                      why=r.error or r.validation.detail, answer=r.answer)
            for r in runs if not r.success
        ],
        rejected_lines=list(rejected), duplicate_runs=duplicates,
    )


def report_file(path: Path) -> WebReport:
    """Read a results file and build its report (rejected and repeated lines listed in it)."""
    read = read_results(path)
    return build_report(read.runs, str(path), lines=read.line_numbers, rejected=read.rejected)


_UNKNOWN = "—"
BACKEND_DESCRIPTIONS: dict[str, str] = {
    "playwright": "Playwright driving this machine's Chromium",
    "extension": "a Manifest V3 extension in this machine's Chromium, with its own snapshot, element refs and "
                 "in-page actions, reached over a loopback WebSocket bridge",
    "android-chrome": "Chrome on an Android phone, over its DevTools socket forwarded by adb",
}
"""What each backend is, in words (a backend the harness does not know is shown by its name alone)."""
CAVEAT = (
    "This compares whole browser backends end to end, not a transport micro-benchmark: the model-visible browser_* "
    "tool contract is the same, but the page snapshot's shape, the element refs and how actions are executed "
    "differ between backends (the extension backend walks the DOM and acts inside the page; Playwright uses its "
    "own snapshot and input pipeline). Those differences change model calls, tokens and success, and are part of "
    "what is measured, so a speed ratio is not the transport's (or the extension's) own overhead. Model-side "
    "latency is not isolated by the local runner. Read the success rates, the pair table, the failure-penalty "
    "ratio, the order sensitivity and the intervals together — never one P50 alone."
)
"""Seed 001's caveat, shown with every web report."""
ANSWER_SHOWN = 200
"""Characters of a failed run's answer shown in its table row (the results file keeps it whole)."""


def _ms(value: float | None) -> str:
    return _UNKNOWN if value is None else f"{value:,.0f}"


def _count(value: int | None) -> str:
    return _UNKNOWN if value is None else f"{value:,}"


def _short(text: str, limit: int) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def _ratio_cells(r: Ratio) -> list[str]:
    if r.value is None:
        return ["— (no pairs)", _UNKNOWN, str(r.n)]
    ci = f"{r.ci95[0]:.3f}–{r.ci95[1]:.3f}" if r.ci95 else _UNKNOWN
    return [f"{r.value:.3f}×", ci, str(r.n)]


def backend_notes(rep: WebReport) -> list[str]:
    """Which backend is A and which B, what each is, and which ran on a virtual phone."""
    def named(name: str) -> str:
        return f"{name} ({BACKEND_DESCRIPTIONS[name]})" if name in BACKEND_DESCRIPTIONS else name

    notes = [f"Backends: A = {named(rep.backend_a)}; B = {named(rep.backend_b)}." if rep.backend_b
             else f"Backend: {named(rep.backend_a)}."]
    notes += [f"{name}: {s.simulated_runs} of {s.runs} runs on a virtual phone (a local Chromium behind a simulated "
              "phone) — not a real-device result." for name, s in rep.backends.items() if s.simulated_runs]
    return notes


def damage_note(rep: WebReport) -> str | None:
    """What was refused or merged on reading the results file; None when nothing was."""
    if not rep.rejected_lines and not rep.duplicate_runs:
        return None
    return (f"{len(rep.rejected_lines)} line(s) rejected and {len(rep.duplicate_runs)} run(s) written more than once: "
            "rejected lines count nowhere, a repeated run counts once.")


def reading_notes(rep: WebReport) -> list[str]:
    """How to read the numbers: the seed's rules for latency, penalty, intervals and tokens, and its caveat."""
    notes = [
        f"Success rates come first. Latency is taken over successful runs only (nearest rank); P90 only from "
        f"{P90_MIN_SAMPLES} successes, fewer would give false precision.",
        "Failure penalty: every failed run counts as 2 × its timeout, so failing fast does not look fast.",
        "Completion runs from just before the prompt is sent to the turn's end; state reached is the first time the "
        "site's state API showed the goal (50 ms polling); tool wall is the time spent inside browser_* tools; "
        "TTFT is the time to the first non-empty streamed model delta (unknown for runs without a model).",
    ]
    if rep.backend_b:
        notes.append("Ratios are B/A over pairs (one task, seed and trial on both backends), with paired-bootstrap "
                     "95 % intervals (10 000 resamples, fixed seed, the same pair indices for both arms); order "
                     "sensitivity splits the latency ratio by the backend that ran first.")
    notes += ["Tokens: prompt = new input + cache read + cache write. Sums cover only the runs that reported usage "
              f"(runs with usage); {_UNKNOWN} is unknown, never 0.", CAVEAT]
    return notes


def _success(items: list[tuple[str, BackendStats]]) -> SectionTable:
    def ci(s: BackendStats) -> str:
        return _UNKNOWN if s.success_rate_ci95 is None else f"{s.success_rate_ci95[0]:.1%}–{s.success_rate_ci95[1]:.1%}"

    rows = [[name, str(s.runs), str(s.successes), _UNKNOWN if s.success_rate is None else f"{s.success_rate:.1%}",
             ci(s), str(s.infrastructure_errors)] for name, s in items]
    header = ["backend", "runs", "successes", "success rate", "95 % CI (Wilson)", "infra errors"]
    return SectionTable(title="Success", header=header, rows=rows, numeric=[1, 2, 3, 5])


def _p90(value: float | None, samples: int) -> str:
    few = value is None and samples > 0
    return f"— (fewer than {P90_MIN_SAMPLES} successes)" if few else _ms(value)


def _latency(items: list[tuple[str, BackendStats]]) -> SectionTable:
    rows = [[name, str(s.successes), _ms(s.p50_completion_ms), _p90(s.p90_completion_ms, s.successes),
             _ms(s.p50_state_reached_ms), _ms(s.p50_tool_wall_ms), _p90(s.p90_tool_wall_ms, s.successes),
             _ms(s.p50_ttft_ms), _ms(s.failure_penalty_mean_ms)] for name, s in items]
    header = ["backend", "successes", "P50 completion", "P90 completion", "P50 state reached", "P50 tool wall",
              "P90 tool wall", "P50 TTFT", "failure-penalty mean"]
    return SectionTable(title="Latency (successful runs only, ms)", header=header, rows=rows, numeric=list(range(1, 9)))


def _pairs(rep: WebReport) -> list[SectionTable]:
    p, o = rep.pairs, rep.order_sensitivity
    return [
        SectionTable(title=f"Pairs (A = {rep.backend_a}, B = {rep.backend_b})",
                     header=["pairs", "both succeeded", "only A", "only B", "neither"],
                     rows=[[str(v) for v in (p.total, p.both_success, p.only_a, p.only_b, p.neither)]],
                     numeric=[0, 1, 2, 3, 4]),
        SectionTable(title="Ratios B/A", header=["measure", "B/A", "95 % CI", "pairs"], numeric=[1, 3], rows=[
            ["latency (geometric mean of per-pair ratios, both succeeded)", *_ratio_cells(rep.latency_ratio)],
            ["failure-penalty mean (all complete pairs)", *_ratio_cells(rep.failure_penalty_ratio)],
            ["latency, A ran first", *_ratio_cells(o.a_first)],
            ["latency, B ran first", *_ratio_cells(o.b_first)],
        ]),
    ]


def _tokens(items: list[tuple[str, BackendStats]]) -> SectionTable:
    rows = [[name, f"{t.runs_with_usage} of {t.runs}", _count(t.prompt), _count(t.usage.input_new),
             _count(t.usage.cache_read), _count(t.usage.cache_write), _count(t.usage.output)]
            for name, t in ((name, s.tokens) for name, s in items)]
    header = ["backend", "runs with usage", "prompt (new + cache read + cache write)", "new input", "cache read",
              "cache write", "output"]
    return SectionTable(title="Tokens", header=header, rows=rows, numeric=[2, 3, 4, 5, 6])


def _failed(failures: list[FailedRun], limit: int | None) -> SectionTable:
    shown = failures if limit is None else failures[:limit]
    more = f", first {len(shown)} shown" if len(shown) < len(failures) else ""
    rows = [[f.pair_id, f.backend, f.status + (" (infrastructure)" if f.infrastructure else ""), f.why,
             _UNKNOWN if f.answer is None else _short(f.answer, ANSWER_SHOWN)] for f in shown]
    return SectionTable(title=f"Failed runs ({len(failures)}{more})",
                        header=["pair", "backend", "status", "why", "answer"], rows=rows)


def report_tables(rep: WebReport, *, failures_limit: int | None = None) -> list[SectionTable]:
    """The report's tables, in the order shown: success, latency, pairs and ratios (two backends), tokens, per
    task, failed runs (the first `failures_limit`). Cells are plain text; each writer escapes them."""
    items = list(rep.backends.items())
    names = [name for name, _ in items]
    per_task = SectionTable(title="Per task (successes/runs)", header=["task", *names],
                            rows=[[task, *(by.get(n, _UNKNOWN) for n in names)] for task, by in rep.tasks.items()],
                            numeric=list(range(1, len(names) + 1)))
    tables = [_success(items), _latency(items), *(_pairs(rep) if rep.backend_b else []), _tokens(items), per_task]
    return tables + ([_failed(rep.failures, failures_limit)] if rep.failures else [])


def _md_table(table: SectionTable) -> list[str]:
    cells = [[md_text(c) for c in row] for row in [table.header, *table.rows]]
    align = ["---:" if i in table.numeric else "---" for i in range(len(table.header))]
    return [f"## {md_text(table.title)}", "", *(f"| {' | '.join(row)} |" for row in cells[:1]),
            f"|{'|'.join(align)}|", *(f"| {' | '.join(row)} |" for row in cells[1:]), ""]


def to_markdown(rep: WebReport) -> str:
    """The report as Markdown: the same tables and notes as the run report's web section, every failed run,
    and the lines refused on reading."""
    lines = [f"# Web backend benchmark — suite version {rep.suite_version}", "", f"Source: {md_text(rep.source)}", ""]
    if damaged := damage_note(rep):
        lines += [f"**{md_text(damaged)}** (listed at the end)", ""]
    for note in backend_notes(rep):
        lines += [md_text(note), ""]
    for table in report_tables(rep):
        lines += _md_table(table)
    lines += ["## Reading this report", "", *(f"- {md_text(n)}" for n in reading_notes(rep))]
    if rep.rejected_lines:
        lines += ["", "## Rejected lines", ""] + [f"- {md_text(line)}" for line in rep.rejected_lines]
    if rep.duplicate_runs:
        lines += ["", "## Runs written more than once", ""] + [f"- {md_text(line)}" for line in rep.duplicate_runs]
    return "\n".join(lines) + "\n"
