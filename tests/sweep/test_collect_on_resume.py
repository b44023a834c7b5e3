"""A resume collects what the tries cut short by a crash left (on the phone, or in the try's tree)."""

from __future__ import annotations

import shutil
from pathlib import Path

from farm import manifest as mf
from farm.android.options import AgentOptions
from farm.exits import EXIT_FAILED
from farm.results.store import read_records
from farm.sweep.dev_run import run, run_request
from farm.sweep.journal import Journal
from farm.sweep.unit_run import BATCH_FILE
from tests.helpers.records import write_tasks

EVAL = "/sdcard/Android/data/dev.agentfarm.simagent/files/eval"


def _crash_during(run_dir: Path, unit_id: str) -> None:
    """The state a controller killed while `unit_id` ran leaves: the unit leased, its try open, no record."""
    journal = Journal.open(run_dir)
    journal._db.execute("UPDATE units SET state = 'leased', lease_phone = final_phone, final_phone = NULL, "
                        "outcome = NULL, passed = NULL WHERE unit_id = ?", (unit_id,))
    journal._db.execute("UPDATE tries SET ended = NULL, kind = NULL WHERE unit_id = ?", (unit_id,))
    journal.close()
    lines = (run_dir / "records.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (run_dir / "records.jsonl").write_text("".join(ln for ln in lines if unit_id not in ln), encoding="utf-8")
    mf.update(run_dir, lambda m: setattr(m, "status", "interrupted"))


def test_a_unit_that_ended_on_the_phone_during_the_crash_is_pulled_not_run_again(
    virtual_farm, tmp_path: Path
) -> None:
    phone = virtual_farm(1)[0]
    req = {"agent": AgentOptions(split="tune"), "tasks_dir": write_tasks(tmp_path / "t"), "runs_dir": tmp_path / "runs",
           "show_progress": False, "idle_timeout_s": 60}
    first = run(run_request(run_id="k1", **req))  # type: ignore[arg-type]
    before = {r.extra["unit"]: r for r in read_records(first.run_dir / "records.jsonl") if "unit" in r.extra}
    unit, rec = next((u, r) for u, r in before.items() if r.task_id == "sys-version")
    _crash_during(first.run_dir, str(unit))
    # The host had not pulled the try yet: only its units.json is there; the result is on the phone.
    tree = (first.run_dir / str(rec.evidence)).parent.parent
    for child in tree.iterdir():
        if child.name != BATCH_FILE:
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    calls = len(list(phone.state.host_path(EVAL).iterdir()))
    again = run(run_request(run_id="k1", resume=True, **req))  # type: ignore[arg-type]
    assert again.exit_code == EXIT_FAILED
    after = [r for r in read_records(again.run_dir / "records.jsonl") if r.extra.get("unit") == unit]
    assert len(after) == 1
    (collected,) = after
    assert (collected.attempt, collected.passed, collected.outcome) == (1, rec.passed, rec.outcome)
    assert collected.evidence == rec.evidence and (again.run_dir / str(collected.evidence)).is_dir()
    # Nothing ran again: no new on-device run, no second try.
    assert len(list(phone.state.host_path(EVAL).iterdir())) \
        == calls
    assert not list(again.run_dir.glob("android/*/units/*.try2"))
    journal = Journal.open(again.run_dir)
    assert [(n, k, why) for n, _p, k, why in journal.tries_of(str(unit))] == [(1, "ran", "collected on resume")]
    journal.close()


def test_a_unit_whose_try_left_nothing_is_run_again_as_a_second_try(virtual_farm, tmp_path: Path) -> None:
    phone = virtual_farm(1)[0]
    req = {"agent": AgentOptions(split="tune"), "tasks_dir": write_tasks(tmp_path / "t"), "runs_dir": tmp_path / "runs",
           "show_progress": False, "idle_timeout_s": 60}
    first = run(run_request(run_id="k2", **req))  # type: ignore[arg-type]
    unit, rec = next((r.extra["unit"], r) for r in read_records(first.run_dir / "records.jsonl")
                     if r.task_id == "sys-version")
    _crash_during(first.run_dir, str(unit))
    # Neither the host nor the phone kept anything of that try.
    tree = (first.run_dir / str(rec.evidence)).parent.parent
    for child in tree.iterdir():
        if child.name != BATCH_FILE:
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    evals = phone.state.host_path(EVAL)
    gone = [remote for remote in evals.iterdir() if remote.name.startswith("k2.sys-version")]
    assert len(gone) == 1
    shutil.rmtree(gone[0])
    again = run(run_request(run_id="k2", resume=True, **req))  # type: ignore[arg-type]
    assert again.exit_code == EXIT_FAILED
    (final,) = [r for r in read_records(again.run_dir / "records.jsonl") if r.extra.get("unit") == unit]
    # A new try is a new attempt: its verdict is its own (the simulated agent draws per on-device run).
    assert final.attempt == 2 and final.outcome != "error" and final.device_verdict is not None
    journal = Journal.open(again.run_dir)
    kinds = [(n, k) for n, _p, k, _why in journal.tries_of(str(unit))]
    journal.close()
    assert kinds == [(1, "interrupted"), (2, "ran")]
