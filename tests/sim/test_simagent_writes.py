"""The virtual agent app as a reference: a write task it says it passed is really done on the phone, so the
harness's own look after the run (not the app's word) confirms it."""

from __future__ import annotations

import shutil
from pathlib import Path

from farm.android.options import AgentOptions
from farm.results.store import read_records
from farm.sweep.dev_run import run, run_request
from tests.helpers.sweep import REPO


def test_every_write_the_app_says_it_did_is_found_by_the_harnesss_look(virtual_farm, tmp_path: Path) -> None:
    phone = virtual_farm(1)[0]
    tasks = tmp_path / "tasks"
    shutil.copytree(REPO / "tasks" / "write", tasks / "write")
    result = run(run_request(agent=AgentOptions(split="all"), serials=[phone.serial], tasks_dir=tasks,
                             runs_dir=tmp_path / "runs", show_progress=False, run_id="w1", idle_timeout_s=60))
    records = read_records(result.run_dir / "records.jsonl")
    claimed = [r for r in records if r.device_verdict is not None and r.device_verdict.passed]
    assert len(claimed) >= 6, [(r.task_id, r.outcome) for r in records]
    disagree = {r.task_id: r.reasons for r in claimed if not r.passed}
    # The contacts list shows names only, as on a real phone: a look cannot see the number the task asks for;
    # only a state check (the contacts provider) can.
    assert set(disagree) <= {"contacts-new-draft"}, disagree
    assert all("screen_has: '10086' not shown" in " ".join(why) for why in disagree.values())
    # The harness did look: every passed write unit has its own look on file beside the app's transcript.
    assert all(r.evidence for r in claimed)
