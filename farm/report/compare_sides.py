"""A run's headline inside a report, and each side of a comparison as its own report would show it.

One computation for both: `overall_row` is the headline of a single-run report (`ReportData.overall`) and, given
one run's counts, the headline of that side of a comparison — planned from that run's manifest, so a side is
never the pooled number of the two runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from farm import manifest as manifests
from farm.errors import FarmError
from farm.report.headline import planned_units, rate_row
from farm.report.model import RateRow
from farm.report.run_setup import SideSetup, run_setup

if TYPE_CHECKING:
    import duckdb

RUN_COUNTS_SQL = ("SELECT count(*), count(*) FILTER (WHERE outcome <> 'skipped'),"
                  " count(*) FILTER (WHERE outcome <> 'skipped' AND final), count(*) FILTER (WHERE outcome = 'error')"
                  " FROM shown WHERE run = ?")
"""planned (units with a record), attempted, passed, errors of one run: the counts `aggregate` takes from its
grouping-sets scan for the whole report."""


def overall_row(con: duckdb.DuckDBPyConnection, run_dirs: Sequence[Path], counts: tuple[int, int, int, int], *,
                include_holdout: bool, key: str = "all") -> RateRow:
    """The headline: every unit a run planned is in `planned`, those with no record yet as `unfinished`.
    `counts`: planned (units with a record), attempted, passed, errors over `run_dirs`."""
    planned, attempted, passed, errors = counts
    unfinished = 0
    for run_dir in run_dirs:
        plan = planned_units(run_dir, include_holdout=include_holdout)
        if plan is None:
            continue
        row = con.execute("SELECT count(*) FROM shown WHERE lane = 'android' AND run = ?", [run_dir.name]).fetchone()
        unfinished += max(0, plan - (int(row[0]) if row else 0))
    return rate_row(key, planned + unfinished, attempted, passed, errors, unfinished)


def side_headline(con: duckdb.DuckDBPyConnection, run_dir: Path, *, include_holdout: bool) -> RateRow:
    """One run's own headline within a report of two (key: its run id): what its single-run report shows."""
    row = con.execute(RUN_COUNTS_SQL, [run_dir.name]).fetchone()
    planned, attempted, passed, errors = (int(v) for v in row) if row else (0, 0, 0, 0)
    return overall_row(con, [run_dir], (planned, attempted, passed, errors), include_holdout=include_holdout,
                       key=run_dir.name)


def side_setup(con: duckdb.DuckDBPyConnection, run_dir: Path, *, include_holdout: bool) -> SideSetup:
    """What one run of a comparison measured (`farm.report.run_setup`), with its holdout units left out, and its
    phones with their app versions (what the comparison says changed beside the settings)."""
    hidden = 0
    if not include_holdout:
        row = con.execute("SELECT count(*) FROM latest WHERE partition = 'holdout' AND run = ?",
                          [run_dir.name]).fetchone()
        hidden = int(row[0]) if row else 0
    manifest = None
    if manifests.manifest_path(run_dir).is_file():
        try:
            manifest = manifests.load(run_dir)
        except FarmError:
            pass  # the manifest's own problems are the runs table's to report; the side then records no lane
    setup = run_setup(run_dir, manifest, include_holdout=include_holdout, hidden_holdout=hidden)
    return SideSetup(**dict(setup), phones=manifest.phones if manifest is not None else [])
