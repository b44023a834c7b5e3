"""`--only-failed-from RUN`: the tasks whose final verdict in a run was fail or error, read the way the
run's report reads them (latest attempt per unit, human re-judgements applied)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from farm.errors import FarmError
from farm.names import check_name
from farm.results.store import RECORDS_FILE

FLAG = "--only-failed-from"


class FailedTasks(BaseModel):
    """What a run left to do again."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run: str
    """The run read."""
    units: int
    """Android units of the run (skips included)."""
    failed_units: int
    """Units whose final verdict was fail or error."""
    task_ids: list[str]
    """Their tasks, sorted, each once (a task that failed on one phone of several is listed)."""


def find_run(run: str, runs_dir: Path, flag: str = FLAG) -> Path:
    """The directory of run `run` under `runs_dir`; a one-line FarmError naming `flag` when it is not a run."""
    check_name(run, flag)
    run_dir = runs_dir / run
    if not run_dir.is_dir():
        raise FarmError(f"{flag} {run}: no such run under {runs_dir}", hint="pass a run id from the runs directory")
    if not (run_dir / RECORDS_FILE).is_file():
        raise FarmError(f"{flag} {run}: the run has no records ({run_dir / RECORDS_FILE} is missing)",
                        hint="pass a run that attempted tasks")
    return run_dir


def failed_tasks(run_dir: Path, flag: str = FLAG) -> FailedTasks:
    """The android tasks of `run_dir` with a unit whose final verdict was fail or error (skips excluded: they
    were never attempted). A run without a single readable android record is a FarmError naming `flag`."""
    from farm.report.aggregate import aggregate

    agg = aggregate([run_dir], include_holdout=True)
    android = "lane = 'android'"
    row = agg.con.execute(f"SELECT count(*) FROM shown WHERE {android}").fetchone()
    units = int(row[0]) if row else 0
    if units == 0:
        raise FarmError(f"{flag} {run_dir.name}: the run has no android records",
                        hint="pass a run of `farm run` or `farm sweep`")
    failed = [r.task_id for r in agg.task_rows(f"{android} AND outcome <> 'skipped' AND NOT final")]
    return FailedTasks(run=run_dir.name, units=units, failed_units=len(failed), task_ids=sorted(set(failed)))
