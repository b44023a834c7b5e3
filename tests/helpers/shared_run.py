"""A run directory that other lanes already wrote: its manifest (made through the run store) names an android
and a desktop lane, and its records.jsonl holds one record of each. Lane tests join it and check that what
was there stays byte for byte."""

from __future__ import annotations

from pathlib import Path

from farm.manifest import LaneEntry, Manifest, utc_now
from farm.results.store import RunStore
from tests.helpers.records import record

OTHER_LANES = ["android", "desktop"]
"""The lanes of the run before the lane under test joins it, in manifest order."""


def run_of_other_lanes(runs_dir: Path, run_id: str) -> RunStore:
    """`runs_dir/run_id/` holding the manifest and one record of each of OTHER_LANES."""
    manifest = Manifest(run_id=run_id, created_at=utc_now(),
                        lanes=[LaneEntry(lane="android", outputs=["records.jsonl"]),
                               LaneEntry(lane="desktop", outputs=["records.jsonl"])])
    store = RunStore.create(runs_dir, manifest)
    store.append([record("calc-add", run=run_id, device="SER1", lane="android"),
                  record("notepad-save", run=run_id, device="desk-1", lane="desktop", passed=False,
                         category="write")])
    return store
