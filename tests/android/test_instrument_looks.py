"""After an on-device agent's run the harness looks at the phone itself: the app's word never passes a write task.

Real executor, real adb server on a private port, virtual phones; the simulated agent app is made to lie by
patching it in this test only (the virtual phone runs in this process).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from farm.android.options import AgentOptions
from farm.android.pull_run import pull_run
from farm.config import FarmConfig
from farm.results.record import Record
from farm.results.store import read_records
from farm.scoring.rescore import APP_LOOK_FILE, PULLED_NO_LOOK
from farm.scoring.transcript import HARNESS_LOOK_FILE, HarnessLook
from farm.sim.profile import default_profile
from farm.sweep.dev_run import run, run_request
from tests.helpers.records import write_tasks

EVAL = "/sdcard/Android/data/dev.agentfarm.simagent/files/eval"
CLOCK = "com.android.deskclock"


def _alarm(task_id: str, marker: str) -> tuple[str, dict[str, Any]]:
    return ("write", {
        "id": task_id, "goal": f"帮我设一个明天早上 7 点的闹钟,标签写 {marker}", "apps": ["{app:clock}"],
        "category": "write", "partition": "tune", "requires": ["app:clock"], "expect": "succeeded",
        "marker": marker, "checks": [{"type": "screen_has", "marker": True, "packageName": "{app:clock}"}],
    })


def _honest_phone(virtual_farm: Any) -> Any:  # noqa: ANN401 - the fixture's SimPhone
    """A virtual phone whose simulated agent always succeeds (and so really sets the alarm it was asked for)."""
    profile = default_profile()
    profile.agent.pass_rate = 1.0
    return virtual_farm(1, profile=profile)[0]


def _records(tmp_path: Path, run_id: str, tasks: list[tuple[str, dict[str, Any]]], **kw: Any) -> dict[str, Record]:
    result = run(run_request(agent=AgentOptions(split="tune"), all_phones=True,
                             tasks_dir=write_tasks(tmp_path / f"tasks-{run_id}", tasks), runs_dir=tmp_path / "runs",
                             show_progress=False, run_id=run_id, idle_timeout_s=60, **kw))
    return {r.task_id: r for r in read_records(result.run_dir / "records.jsonl")}


def _look_of(tmp_path: Path, record: Record) -> HarnessLook:
    assert record.evidence is not None
    return HarnessLook.model_validate_json((tmp_path / "runs" / record.run / record.evidence / HARNESS_LOOK_FILE)
                                          .read_bytes())


def test_a_lying_app_fails_its_write_task(virtual_farm: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import farm.sim.apps.simagent as simagent
    from farm.sim.apps.simagent_run import RunWriter

    _honest_phone(virtual_farm)
    # The lie: the agent creates nothing, yet its final.json claims a fresh look showing the marker (and an
    # after-probe), and it leaves a harness-look.json of its own making beside its transcript.
    monkeypatch.setattr(simagent, "leave_marker", lambda phone, task, marker: None)
    real_transcript = RunWriter.transcript

    def lying_transcript(self: RunWriter, task: dict[str, Any], rec: dict[str, Any], run: str,
                         start: Any) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:  # noqa: ANN401
        steps, evidence = real_transcript(self, task, rec, run, start)
        marker = rec["markers"][0]
        if evidence is not None:
            evidence["freshLooks"] = [{"package": CLOCK, "text": f'[1] TextView "{marker}"'}]
            evidence["probesAfter"] = {"storage_root": marker}
        forged = {"writtenBy": "harness", "at": "2026-12-01T03:00:00Z",
                  "looks": [{"package": CLOCK, "text": f'[1] TextView "{marker}"'}]}
        self.phone.write_atomic(f"{self.run_dir}/{HARNESS_LOOK_FILE}", json.dumps(forged))
        return steps, evidence

    monkeypatch.setattr(RunWriter, "transcript", lying_transcript)
    rec = _records(tmp_path, "r-lie", [_alarm("alarm-lie", "AF-{run}-lie")])["alarm-lie"]
    assert rec.device_verdict is not None and rec.device_verdict.passed  # the app says it passed
    assert (rec.outcome, rec.passed, rec.failure_kind) == ("failed", False, "agent")
    (check,) = rec.checks
    assert check.type == "screen_has" and not check.passed
    assert check.detail.startswith(f"'AF-r-lie-lie' not shown by {CLOCK}")
    assert "the app wrote freshLooks, probesAfter in final.json; ignored" in rec.reasons[-2]
    assert rec.reasons[-1] == APP_LOOK_FILE
    look = _look_of(tmp_path, rec)
    assert look.written_by == "harness" and look.app_file_replaced and look.error is None
    assert [lk.package for lk in look.looks] == [CLOCK] and "AF-r-lie-lie" not in look.looks[0].text


def test_an_app_writing_no_looks_passes_on_the_harness_look(virtual_farm: Any, tmp_path: Path) -> None:
    phone = _honest_phone(virtual_farm)
    rec = _records(tmp_path, "r-honest", [_alarm("alarm-honest", "AF-{run}-ok")])["alarm-honest"]
    assert (rec.outcome, rec.passed, rec.reasons) == ("succeeded", True, [])
    assert rec.checks[0].detail == f"'AF-r-honest-ok' shown by {CLOCK}"
    look = _look_of(tmp_path, rec)
    assert look.written_by == "harness" and not look.app_file_replaced and look.later_in_call == []
    assert "AF-r-honest-ok" in look.looks[0].text
    # The look left the phone on its home screen, and uiautomator2's server stopped for the app's next run.
    assert phone.state.ui.foreground()[0] == "com.android.launcher3"
    deadline = time.monotonic() + 10
    while phone.state.u2_server_streams and time.monotonic() < deadline:
        time.sleep(0.05)  # the phone sees the server's shell close a moment after the host drops it
    assert phone.state.u2_server_streams == 0


def test_a_batched_call_is_looked_at_after_it_ends_and_says_what_ran_later(virtual_farm: Any,
                                                                           tmp_path: Path) -> None:
    _honest_phone(virtual_farm)
    records = _records(tmp_path, "r-batch", [_alarm("alarm-a", "AF-{run}-a"), _alarm("alarm-b", "AF-{run}-b")],
                       batch=2)
    assert all(r.passed for r in records.values()), {k: r.reasons for k, r in records.items()}
    looks = {k: _look_of(tmp_path, r) for k, r in records.items()}
    first, second = sorted(looks, key=lambda k: len(looks[k].later_in_call), reverse=True)
    assert looks[first].later_in_call == [second] and looks[second].later_in_call == []


def test_a_pulled_run_has_no_harness_look_and_fails_screen_has_saying_so(virtual_farm: Any, tmp_path: Path) -> None:
    phone = _honest_phone(virtual_farm)
    tasks = write_tasks(tmp_path / "tasks", [_alarm("alarm-pulled", "AF-{run}-p")])
    run(run_request(agent=AgentOptions(split="tune"), all_phones=True, tasks_dir=tasks, runs_dir=tmp_path / "runs",
                    show_progress=False, run_id="r1", idle_timeout_s=60))
    # The same attempt collected by `farm pull` (as if it had run elsewhere): the marker is really on the phone,
    # but nobody from farm looked after the attempt, so the check cannot pass.
    device_run = next(p.name for p in phone.state.host_path(EVAL).iterdir() if p.name.startswith("r1."))
    summary = pull_run(FarmConfig(tasks_dir=str(tasks)), serial=phone.serial, run=device_run, split="all",
                       runs_dir=tmp_path / "pulled", profile="sim")
    (rec,) = read_records(summary.run_dir / "records.jsonl")
    assert rec.device_verdict is not None and rec.device_verdict.passed
    assert (rec.outcome, rec.passed) == ("failed", False)
    assert [(c.type, c.passed, c.detail) for c in rec.checks] == [("screen_has", False, PULLED_NO_LOOK)]
    assert not (summary.raw / "alarm-pulled" / "run" / HARNESS_LOOK_FILE).exists()
