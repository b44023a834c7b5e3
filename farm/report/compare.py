"""Paired comparison of two runs on their common (task, phone, instance, repeat) units: overall and per
category with paired bootstrap intervals and exact McNemar p, and the units that regressed or were fixed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from farm.report.overrides_apply import short
from farm.report.paired import CategoryDiff, ChangeRow, Comparison
from farm.results.stats import mcnemar_exact, paired_bootstrap

if TYPE_CHECKING:
    import duckdb
    import numpy as np
    from numpy.typing import NDArray

_PAIRS = ("FROM shown a JOIN shown b USING (task_id, device, instance, repeat)"
          " WHERE a.run = $a AND b.run = $b AND a.outcome <> 'skipped' AND b.outcome <> 'skipped'")
_CATEGORY = "coalesce(nullif(b.category, ''), a.category, '')"


def comparison(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str, labels: dict[str, str],
               cap: int) -> Comparison:
    """A against B; the regressed and fixed lists hold their first `cap` rows."""
    import numpy as np

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
        run_a=run_a, run_b=run_b, units=n, both=both, only_a=only_a, only_b=only_b,
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
        f"SELECT task_id, instance, repeat, device, {_CATEGORY} AS category, a.outcome, b.outcome,"
        f" coalesce({failing}.reason, ''), {failing}.run, coalesce({failing}.evidence, ''), count(*) OVER ()"
        f" {_PAIRS} AND {where} ORDER BY category, task_id, instance, repeat, device LIMIT {int(cap)}",
        {"a": run_a, "b": run_b},
    ).fetchall()
    return [
        ChangeRow(task_id=r[0], instance=r[1], repeat=r[2], device=labels.get(r[3], r[3]), category=r[4],
                  outcome_a=r[5], outcome_b=r[6], reason=short(r[7]), evidence_run=r[8], evidence=r[9])
        for r in rows
    ], (int(rows[0][10]) if rows else 0)
