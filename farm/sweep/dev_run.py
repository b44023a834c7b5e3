"""`farm run`: the task set on the phones at hand, on the sweep's engine.

A run is a sweep with a developer's defaults: every selected phone runs every task it can once
(`every-phone`, one repeat), the only connected phone unless `--all` or `--device` says otherwise,
no farm lock, and progress bars. It shares the sweep's journal, so each record is written the
moment its unit is scored and a stopped run continues with `farm run --resume RUN`. A full disk stops it as it
stops a sweep (`farm.disk_space.DiskFull`: one line, exit 3, resumable), and it does not start below the free-space
floor.
"""

from __future__ import annotations

from typing import Any

from farm.android.options import AgentOptions
from farm.sweep.request import SweepRequest
from farm.sweep.sweep import SweepResult, sweep


def run_request(agent: AgentOptions | None = None, **options: Any) -> SweepRequest:  # noqa: ANN401 - SweepRequest's fields
    """A `farm run` request: `SweepRequest` fields, with a run's defaults (split `tune`, the only phone)."""
    defaults: dict[str, Any] = {"all_phones": False, "spread": "every-phone", "repeats": 1}
    return SweepRequest(kind="run", agent=agent or AgentOptions(), **{**defaults, **options})


def run(req: SweepRequest) -> SweepResult:
    """Run (or, with `req.resume`, continue) a split on the selected phones end to end and write the reports."""
    if req.kind != "run":
        raise ValueError("farm run takes a run request (see run_request)")
    return sweep(req)
