"""The paired backend report: success first, latency only over successes, pairs, failure penalty,
bootstrap intervals, order sensitivity and token columns — as Markdown or one JSON object."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from pydantic import Field

from farm.camel import CamelModel
from farm.errors import FarmError
from farm.results.stats import nearest_rank, paired_ratio_bootstrap, wilson
from web_bench.browser.contract import BACKEND_NAMES
from web_bench.results import RunIdentity, WebRun, read_results

# The web lane's bootstrap seed since its first report: keeping it keeps published intervals reproducible.
_BOOTSTRAP_SEED = 20260601
# P90 only from at least ten samples (fewer gives false precision).
_P90_MIN_SAMPLES = 10


class TokenTotals(CamelModel):
    """Token sums over a backend's runs."""

    new_input: int = 0
    """New (uncached) input tokens."""
    cache_read: int = 0
    """Cache-read input tokens."""
    cache_write: int = 0
    """Cache-write input tokens."""
    output: int = 0
    """Output tokens."""
    prompt: int = 0
    """new input + cache read + cache write."""
    runs_with_usage: int = 0
    """Runs that reported any token usage."""


class BackendStats(CamelModel):
    """One backend's numbers."""

    runs: int
    """Runs."""
    successes: int
    """Successful runs."""
    success_rate: float | None
    """successes / runs."""
    success_rate_ci95: tuple[float, float] | None
    """Wilson 95 % interval of the success rate."""
    infrastructure_errors: int
    """Runs lost to the infrastructure (still in the denominator)."""
    p50_completion_ms: float | None
    """Median completion time over successes (nearest rank)."""
    p90_completion_ms: float | None
    """P90 over successes; null below 10 successes."""
    p50_state_reached_ms: float | None
    """Median time to the goal state over successful write runs."""
    p50_ttft_ms: float | None
    """Median time to first model output over successes."""
    failure_penalty_mean_ms: float | None
    """Mean completion time over all runs with every failure counted as 2 × timeout."""
    tokens: TokenTotals
    """Token totals."""


class PairCounts(CamelModel):
    """Pairs (task, seed, trial) that ran on both backends."""

    total: int
    """Complete pairs."""
    both_success: int
    """Both succeeded."""
    only_a: int
    """Only backend A succeeded."""
    only_b: int
    """Only backend B succeeded."""
    neither: int
    """Both failed."""


class Ratio(CamelModel):
    """B / A with its paired-bootstrap 95 % interval (fixed seed, 10 000 resamples)."""

    n: int
    """Pairs used."""
    value: float | None
    """Point estimate; null without pairs."""
    ci95: tuple[float, float] | None
    """Percentile interval; null without pairs."""


class OrderSplit(CamelModel):
    """The latency ratio over both-succeeded pairs, split by which backend ran first."""

    a_first: Ratio
    """Pairs where A ran first."""
    b_first: Ratio
    """Pairs where B ran first."""


class WebReport(CamelModel):
    """Everything the report shows."""

    suite_version: int
    """benchmarkSuiteVersion of every line."""
    source: str
    """The results file."""
    backend_a: str
    """Backend A (the denominator of ratios)."""
    backend_b: str | None
    """Backend B, when the file has two backends."""
    backends: dict[str, BackendStats]
    """Per-backend numbers."""
    pairs: PairCounts
    """Pair outcome table."""
    latency_ratio: Ratio
    """Per-pair completion-time ratio B/A (geometric mean) over pairs where both succeeded."""
    failure_penalty_ratio: Ratio
    """Ratio of mean failure-penalised completion time B/A over all complete pairs."""
    order_sensitivity: OrderSplit
    """Latency ratio by run order."""
    tasks: dict[str, dict[str, str]] = Field(default_factory=dict)
    """task → backend → `successes/runs`."""
    failures: list[str] = Field(default_factory=list)
    """One line per failed run: pair, backend, status and why."""
    rejected_lines: list[str] = Field(default_factory=list)
    """One `file:line: why` per line refused on reading (bad bytes, bad JSON, wrong type, number out of
    range, a line that contradicts itself); counted nowhere."""
    duplicate_runs: list[str] = Field(default_factory=list)
    """One line per run written on more than one line (same run id, backend, task, seed and trial): the
    run counts once, from its last line."""


def _penalised(run: WebRun) -> float:
    return run.timings.completion_ms if run.success else 2.0 * run.timeout_ms


def _backend_stats(runs: list[WebRun]) -> BackendStats:
    wins = [r for r in runs if r.success]
    tokens = TokenTotals()
    for r in runs:
        t = r.tokens
        if any(v is not None for v in (t.new_input, t.cache_read, t.cache_write, t.output)):
            tokens.runs_with_usage += 1
        tokens.new_input += t.new_input or 0
        tokens.cache_read += t.cache_read or 0
        tokens.cache_write += t.cache_write or 0
        tokens.output += t.output or 0
    tokens.prompt = tokens.new_input + tokens.cache_read + tokens.cache_write
    completions = [r.timings.completion_ms for r in wins]
    reached = [r.timings.state_reached_ms for r in wins if r.timings.state_reached_ms is not None]
    ttft = [r.timings.ttft_ms for r in wins if r.timings.ttft_ms is not None]
    return BackendStats(
        runs=len(runs), successes=len(wins), success_rate=len(wins) / len(runs) if runs else None,
        success_rate_ci95=wilson(len(wins), len(runs)).interval,
        infrastructure_errors=sum(1 for r in runs if r.infrastructure_error),
        p50_completion_ms=nearest_rank(completions, 50),
        p90_completion_ms=nearest_rank(completions, 90, min_samples=_P90_MIN_SAMPLES),
        p50_state_reached_ms=nearest_rank(reached, 50), p50_ttft_ms=nearest_rank(ttft, 50),
        failure_penalty_mean_ms=sum(_penalised(r) for r in runs) / len(runs) if runs else None,
        tokens=tokens,
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
            f"{r.pair_id} {r.backend}: {r.status}{' (infrastructure)' if r.infrastructure_error else ''} — "
            f"{r.error or r.validation.detail}"
            for r in runs if not r.success
        ],
        rejected_lines=list(rejected), duplicate_runs=duplicates,
    )


def report_file(path: Path) -> WebReport:
    """Read a results file and build its report (rejected and repeated lines listed in it)."""
    read = read_results(path)
    return build_report(read.runs, str(path), lines=read.line_numbers, rejected=read.rejected)


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _ratio_text(r: Ratio) -> str:
    if r.value is None:
        return "— (no pairs)"
    ci = f" (95 % CI {r.ci95[0]:.3f}–{r.ci95[1]:.3f})" if r.ci95 else ""
    return f"{r.value:.3f}×{ci}, n = {r.n}"


def to_markdown(rep: WebReport) -> str:
    """The report as Markdown (success rates first)."""
    lines = [f"# Web backend benchmark — suite version {rep.suite_version}", "", f"Source: `{rep.source}`", ""]
    if rep.rejected_lines or rep.duplicate_runs:
        lines += [f"**{len(rep.rejected_lines)} line(s) rejected and {len(rep.duplicate_runs)} run(s) written more "
                  "than once** (listed at the end): rejected lines count nowhere, a repeated run counts once.", ""]
    lines += ["## Success", "", "| backend | runs | successes | success rate | 95 % CI | infra errors |",
              "|---|---:|---:|---:|---|---:|"]
    for name, s in rep.backends.items():
        rate = "—" if s.success_rate is None else f"{s.success_rate:.1%}"
        ci = "—" if s.success_rate_ci95 is None else f"{s.success_rate_ci95[0]:.1%}–{s.success_rate_ci95[1]:.1%}"
        lines.append(f"| {name} | {s.runs} | {s.successes} | {rate} | {ci} | {s.infrastructure_errors} |")
    lines += ["", "## Latency (successful runs only, ms)", "",
              "| backend | P50 completion | P90 completion | P50 state reached | P50 TTFT | failure-penalty mean |",
              "|---|---:|---:|---:|---:|---:|"]
    for name, s in rep.backends.items():
        p90_text = _ms(s.p90_completion_ms) if s.p90_completion_ms is not None else "— (< 10 successes)"
        lines.append(f"| {name} | {_ms(s.p50_completion_ms)} | {p90_text} | {_ms(s.p50_state_reached_ms)} | "
                     f"{_ms(s.p50_ttft_ms)} | {_ms(s.failure_penalty_mean_ms)} |")
    lines += ["", "Failure penalty: every failed run counts as 2 × its timeout, so failing fast does not look fast."]
    if rep.backend_b:
        a, b, p = rep.backend_a, rep.backend_b, rep.pairs
        lines += ["", f"## Pairs (A = {a}, B = {b})", "",
                  "| pairs | both succeeded | only A | only B | neither |", "|---:|---:|---:|---:|---:|",
                  f"| {p.total} | {p.both_success} | {p.only_a} | {p.only_b} | {p.neither} |", "",
                  f"- Latency ratio B/A (geometric mean of per-pair ratios, both succeeded): "
                  f"{_ratio_text(rep.latency_ratio)}",
                  f"- Failure-penalty ratio B/A (all complete pairs): {_ratio_text(rep.failure_penalty_ratio)}",
                  f"- Order sensitivity — A ran first: {_ratio_text(rep.order_sensitivity.a_first)}; "
                  f"B ran first: {_ratio_text(rep.order_sensitivity.b_first)}",
                  "", "Intervals: paired bootstrap, 10 000 resamples, fixed seed, the same pair indices for both "
                  "arms. This compares whole browser backends end to end (snapshot shape, refs, action execution "
                  "included), not transport overhead alone; model-side latency is not isolated."]
    lines += ["", "## Tokens", "", "| backend | prompt (= new + cache read + cache write) | new input | cache read "
              "| cache write | output | runs with usage |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, s in rep.backends.items():
        t = s.tokens
        lines.append(f"| {name} | {t.prompt:,} | {t.new_input:,} | {t.cache_read:,} | {t.cache_write:,} | "
                     f"{t.output:,} | {t.runs_with_usage} |")
    names = list(rep.backends)
    lines += ["", "## Per task (successes/runs)", "", "| task | " + " | ".join(names) + " |",
              "|---|" + "---:|" * len(names)]
    for task, cells in rep.tasks.items():
        lines.append(f"| {task} | " + " | ".join(cells.get(n, "—") for n in names) + " |")
    if rep.failures:
        lines += ["", "## Failed runs", ""] + [f"- {line}" for line in rep.failures]
    if rep.rejected_lines:
        lines += ["", "## Rejected lines", ""] + [f"- {line}" for line in rep.rejected_lines]
    if rep.duplicate_runs:
        lines += ["", "## Runs written more than once", ""] + [f"- {line}" for line in rep.duplicate_runs]
    return "\n".join(lines) + "\n"
