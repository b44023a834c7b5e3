"""Paired comparison of two runs on their common (task, phone, instance, repeat) units: each run's own headline
and what it measured, the difference overall and per category with paired bootstrap intervals and exact McNemar
p, and the units that regressed or were fixed, by their final verdicts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from farm.report.compare_sides import side_headline, side_setup
from farm.report.overrides_apply import short
from farm.report.paired import CategoryDiff, ChangeRow, Comparison
from farm.report.run_setup import differences
from farm.results.stats import mcnemar_exact, paired_bootstrap

if TYPE_CHECKING:
    import duckdb
    import numpy as np
    from numpy.typing import NDArray

_PAIRS = ("FROM shown a JOIN shown b USING (task_id, device, instance, repeat)"
          " WHERE a.run = $a AND b.run = $b AND a.outcome <> 'skipped' AND b.outcome <> 'skipped'")
_CATEGORY = "coalesce(nullif(b.category, ''), a.category, '')"


def comparison(con: duckdb.DuckDBPyConnection, run_dirs: Sequence[Path], labels: dict[str, str], cap: int, *,
               include_holdout: bool) -> Comparison:
    """A against B (`run_dirs`); the regressed and fixed lists hold their first `cap` rows."""
    import numpy as np

    dir_a, dir_b = run_dirs
    run_a, run_b = dir_a.name, dir_b.name
    setup_a = side_setup(con, dir_a, include_holdout=include_holdout)
    setup_b = side_setup(con, dir_b, include_holdout=include_holdout)

    arr = con.execute(
        f"SELECT a.final AS a, b.final AS b, {_CATEGORY} AS category {_PAIRS}"
        " ORDER BY task_id, device, instance, repeat",
        {"a": run_a, "b": run_b},
    ).fetchnumpy()
    a = np.asarray(arr["a"], dtype=bool)
    b = np.asarray(arr["b"], dtype=bool)
    categories = np.asarray(arr["category"], dtype=object)
    n = int(a.size)
    both = int(np.count_nonzero(a & b))
    only_a = int(np.count_nonzero(a & ~b))
    only_b = int(np.count_nonzero(b & ~a))
    boot = paired_bootstrap(a, b)
    regressed, regressed_total = _changes(con, run_a, run_b, labels, cap, regressed=True)
    fixed, fixed_total = _changes(con, run_a, run_b, labels, cap, regressed=False)
    return Comparison(
        run_a=run_a, run_b=run_b, side_a=side_headline(con, dir_a, include_holdout=include_holdout),
        side_b=side_headline(con, dir_b, include_holdout=include_holdout), setup_a=setup_a, setup_b=setup_b,
        differences=differences(setup_a, setup_b), units=n, both=both, only_a=only_a, only_b=only_b,
        neither=n - both - only_a - only_b, rate_a=int(a.sum()) / n if n else None,
        rate_b=int(b.sum()) / n if n else None, mcnemar_p=mcnemar_exact(only_a, only_b), diff=boot.diff,
        diff_low=boot.low, diff_high=boot.high, resamples=boot.resamples, seed=boot.seed,
        by_category=[_category(str(k), a[categories == k], b[categories == k]) for k in sorted(set(categories))],
        regressed=regressed, regressed_total=regressed_total, fixed=fixed, fixed_total=fixed_total,
    )


def _category(key: str, a: NDArray[np.bool_], b: NDArray[np.bool_]) -> CategoryDiff:
    import numpy as np

    n = int(a.size)
    boot = paired_bootstrap(a, b)
    return CategoryDiff(
        key=key, units=n, passed_a=int(a.sum()), passed_b=int(b.sum()),
        rate_a=int(a.sum()) / n if n else None, rate_b=int(b.sum()) / n if n else None, diff=boot.diff,
        diff_low=boot.low, diff_high=boot.high,
        mcnemar_p=mcnemar_exact(int(np.count_nonzero(a & ~b)), int(np.count_nonzero(b & ~a))),
    )


def _changes(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str, labels: dict[str, str], cap: int, *,
             regressed: bool) -> tuple[list[ChangeRow], int]:
    """Units passed on one side only (first `cap` rows by category and task), and how many there are."""
    where, failing = ("a.final AND NOT b.final", "b") if regressed else ("b.final AND NOT a.final", "a")
    rows = con.execute(
        f"SELECT task_id, instance, repeat, device, {_CATEGORY} AS category, {_verdict('a')}, {_verdict('b')},"
        f" a.outcome, b.outcome, coalesce({failing}.reason, ''), {failing}.run, coalesce({failing}.evidence, ''),"
        f" count(*) OVER () {_PAIRS} AND {where} ORDER BY category, task_id, instance, repeat, device"
        f" LIMIT {int(cap)}",
        {"a": run_a, "b": run_b},
    ).fetchall()
    return [
        ChangeRow(task_id=r[0], instance=r[1], repeat=r[2], device=labels.get(r[3], r[3]), category=r[4],
                  verdict_a=r[5], verdict_b=r[6], outcome_a=r[7], outcome_b=r[8], reason=short(r[9]),
                  evidence_run=r[10], evidence=r[11])
        for r in rows
    ], (int(rows[0][12]) if rows else 0)


def _verdict(side: str) -> str:
    """The side's final verdict in words (scores.csv's, skips never pair): an impossible task whose agent
    reported `failed` as expected passed, so its outcome alone would not say what changed."""
    return f"CASE WHEN {side}.outcome = 'error' THEN 'error' WHEN {side}.final THEN 'passed' ELSE 'failed' END"
