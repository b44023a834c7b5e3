"""Put a desktop batch into a run manifest so the combined report shows it."""

from __future__ import annotations

import re
from pathlib import Path

from farm.desktop.jsonfile import real_path
from farm.desktop.report import build_report, report_json, report_markdown
from farm.desktop.report_section import batch_page_html
from farm.errors import FarmError
from farm.fsutil import create_new_text
from farm.manifest import LaneEntry, Manifest, code_fingerprint, utc_now
from farm.results.store import RunStore

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def attach_batch(
    runs_root: Path, run_id: str, batch_path: Path, *, command: list[str] | None = None
) -> tuple[Path, list[str]]:
    """Write the batch's reports (markdown, JSON, HTML) into `runs/<run>/desktop/`, add the desktop lane to the
    manifest and rebuild the run's current report (`runs/<run>/report.*`), which shows the batch.

    Returns the run directory and the written outputs (relative to it). The run is created if missing.
    """
    if not _RUN_ID.fullmatch(run_id):
        raise FarmError(f"run id {run_id!r}: not a plain directory name", hint="use letters, digits, '.', '_' or '-'")
    report = build_report([batch_path])
    run_dir = runs_root / run_id
    stem = Path(report.batch).stem
    outputs = [f"desktop/{stem}.report.md", f"desktop/{stem}.report.json", f"desktop/{stem}.report.html"]
    for rel in outputs:
        if (run_dir / rel).exists():
            raise FarmError(f"{run_dir / rel}: already attached", hint="a run keeps one report per batch version")
    # Attaching is the whole of a run it makes: finished when made, never shown as still running.
    now = utc_now()
    store, _created = RunStore.join(runs_root, run_id, LaneEntry(lane="desktop"), new=lambda: Manifest(
        run_id=run_id, created_at=now, finished_at=now, status="finished", command=command or [],
        code=code_fingerprint()))
    create_new_text(run_dir / outputs[0], report_markdown(report), what="desktop report")
    create_new_text(run_dir / outputs[1], report_json(report), what="desktop report")
    create_new_text(run_dir / outputs[2], batch_page_html(report), what="desktop report")
    store.add_lane(
        LaneEntry(
            lane="desktop",
            outputs=outputs,
            # One detail entry per batch version: attaching several batches to one run keeps them apart.
            detail={
                "suite": report.suite,
                f"batch/{stem}": {
                    "batch": str(real_path(batch_path)),
                    "batchSha256": report.batchSha256,
                    "mode": report.mode,
                    "execution": report.execution,
                    "commit": report.commit,
                    "status": report.status,
                    "label": report.label,
                    "chainVerified": report.chain.verified,
                    "planned": report.overall.planned,
                    "recorded": report.overall.recorded,
                    "success": report.overall.success,
                },
            },
        ),
    )
    # The run's current report (runs/<id>/report.*) now shows the batch's section beside the other lanes.
    from farm.lane_plugins import current_report

    current_report(run_dir)
    return run_dir, outputs
