"""`farm sweep` end to end: real adb servers on private loopback ports, virtual phones, the scripted host agent."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from farm import manifest as mf
from farm.errors import FarmError
from farm.exits import EXIT_BELOW, EXIT_FAILED, EXIT_OK
from farm.results.store import read_records
from farm.sweep.journal import Journal
from farm.sweep.sweep import sweep
from tests.helpers.sweep import (
    extra_adb_server,
    farm_yaml,
    low_battery,
    phones_on,
    scripted_tasks,
    sweep_request,
    without_shop,
)

SHOP_TASK = "shop-search-headphones"


@contextmanager
def on_first_record(action: Callable[[], object]) -> Iterator[None]:
    """Run `action` once, when the sweep appends its first record (a fault at a known moment)."""
    from farm.sweep import sweep as sweep_module

    done: list[bool] = []
    orig = sweep_module.Dispatcher.__init__

    def first(_rec: object) -> None:
        if not done:
            done.append(True)
            action()

    def patched(self, *a, **kw):  # type: ignore[no-untyped-def]
        kw["on_record"] = first
        orig(self, *a, **kw)

    sweep_module.Dispatcher.__init__ = patched  # type: ignore[method-assign]
    try:
        yield
    finally:
        sweep_module.Dispatcher.__init__ = orig  # type: ignore[method-assign]


def _finals(run_dir: Path) -> Counter[str]:
    return Counter(str(r.extra.get("unit")) for r in read_records(run_dir / "records.jsonl") if "unit" in r.extra)


def test_three_hosts_every_phone_runs_exactly_the_planned_units(virtual_farm, tmp_path: Path) -> None:
    local = virtual_farm(2)
    tasks = scripted_tasks(tmp_path / "tasks")
    with extra_adb_server() as b, extra_adb_server() as c, phones_on(b, 1, without_shop()) as no_shop, \
            phones_on(c, 1, low_battery()) as weak:
        cfg = farm_yaml(tmp_path / "farm.yaml", b, c)
        result = sweep(sweep_request(tmp_path, tasks, config=cfg, run_id="n1", label="nightly"))
    assert result.exit_code == EXIT_OK and result.counts["unfinished"] == 0
    records = read_records(result.run_dir / "records.jsonl")
    healthy = [p.serial for p in local] + [no_shop[0].serial]
    ran = {(r.device, r.task_id) for r in records if r.outcome != "skipped"}
    expected = {(s, t) for s in healthy for t in ("calculator-multiply", "settings-android-version",
                                                   "clock-alarm-7am", "settings-upgrade-android-99")}
    expected |= {(s, SHOP_TASK) for s in healthy[:2]}
    assert ran == expected
    (skip,) = [r for r in records if r.outcome == "skipped"]
    assert (skip.device, skip.task_id) == (no_shop[0].serial, SHOP_TASK)
    assert all(n == 1 for n in _finals(result.run_dir).values())
    manifest = mf.load(result.run_dir)
    assert manifest.label == "nightly" and manifest.status == "finished"
    left = {p.serial: p for p in manifest.phones}
    assert left[weak[0].serial].status == "left_out" and "battery" in (left[weak[0].serial].reason or "")


def test_shard_runs_each_task_and_repeat_once_on_some_eligible_phone(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks")
    with extra_adb_server() as b, phones_on(b, 1, without_shop()) as no_shop:
        result = sweep(sweep_request(tmp_path, tasks, config=farm_yaml(tmp_path / "farm.yaml", b),
                                     spread="shard", repeats=2, run_id="s1"))
    records = read_records(result.run_dir / "records.jsonl")
    units = Counter((r.task_id, r.repeat) for r in records)
    assert units == Counter({(t, r): 1 for t in ("calculator-multiply", "settings-android-version", "clock-alarm-7am",
                                                  SHOP_TASK, "settings-upgrade-android-99") for r in (1, 2)})
    assert all(r.device != no_shop[0].serial for r in records if r.task_id == SHOP_TASK)


def test_a_dead_adb_server_moves_its_units_to_other_phones(virtual_farm, tmp_path: Path) -> None:
    from farm.sim.launcher import kill_adb_server

    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks")
    with extra_adb_server() as b, phones_on(b, 1) as doomed:
        req = sweep_request(tmp_path, tasks, config=farm_yaml(tmp_path / "farm.yaml", b), spread="shard",
                            repeats=2, run_id="k1", quarantine_after=1)
        with on_first_record(lambda: kill_adb_server(b)):
            result = sweep(req)
    records = read_records(result.run_dir / "records.jsonl")
    assert Counter((r.task_id, r.repeat) for r in records) == Counter(
        {(t, r): 1 for t in ("calculator-multiply", "settings-android-version", "clock-alarm-7am", SHOP_TASK,
                             "settings-upgrade-android-99") for r in (1, 2)})
    assert result.counts["unfinished"] == 0
    assert doomed[0].serial in result.quarantined
    moved = [r for r in records if r.attempt > 1]
    assert moved, "a unit that was on the dead server's phone ran again elsewhere"
    for rec in moved:
        tries = rec.extra["tries"]
        assert isinstance(tries, list) and tries[0]["kind"] == "infra"  # type: ignore[index]
        assert rec.device != doomed[0].serial
    md = (result.run_dir / "report.md").read_text(encoding="utf-8")
    assert f"## Retried after infrastructure failures ({len(moved)})" in md


def test_resume_refuses_a_changed_task_set(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    sweep(sweep_request(tmp_path, tasks, run_id="r1"))
    path = tasks / "read/system/calculator-multiply.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, "maxSteps": 21}, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(FarmError, match="cannot resume: tasks differ"):
        sweep(sweep_request(tmp_path, tasks, run_id="r1", resume=True))


def test_resume_after_a_crash_runs_only_what_was_left(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks")
    first = sweep(sweep_request(tmp_path, tasks, run_id="c1"))
    # Simulate a crash mid-sweep: one unit back to leased (its record kept), another pending (no record).
    journal = Journal.open(first.run_dir)
    done = journal.units("done")
    journal._db.execute("UPDATE units SET state = 'leased', lease_phone = final_phone WHERE unit_id = ?",
                        (done[0].unit_id,))
    journal._db.execute("UPDATE units SET state = 'pending' WHERE unit_id = ?", (done[1].unit_id,))
    journal.close()
    lines = (first.run_dir / "records.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    keep = [ln for ln in lines if done[1].unit_id not in ln]
    (first.run_dir / "records.jsonl").write_text("".join(keep), encoding="utf-8")
    mf.update(first.run_dir, lambda m: setattr(m, "status", "interrupted"))
    again = sweep(sweep_request(tmp_path, tasks, run_id="c1", resume=True))
    assert again.exit_code == EXIT_OK
    finals = _finals(again.run_dir)
    assert set(finals) == {u.unit_id for u in done} and all(n == 1 for n in finals.values())
    assert mf.load(again.run_dir).status == "finished"


def test_fail_under_gives_its_own_exit_status(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    result = sweep(sweep_request(tmp_path, tasks, run_id="f1", fail_under=1.01))
    assert result.exit_code == EXIT_BELOW


def test_an_existing_run_id_is_refused_with_the_resume_hint(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    sweep(sweep_request(tmp_path, tasks, run_id="x1"))
    with pytest.raises(FarmError, match="--resume x1"):
        sweep(sweep_request(tmp_path, tasks, run_id="x1"))


def test_retry_from_reuses_finished_units_and_says_mixed(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply", "write/clock-alarm-7am"))
    old = sweep(sweep_request(tmp_path, tasks, run_id="old"))
    new = sweep(sweep_request(tmp_path, tasks, run_id="new", retry_from="old"))
    records = read_records(new.run_dir / "records.jsonl")
    assert {r.extra.get("reusedFrom") for r in records} == {"old"}
    assert len(records) == len(read_records(old.run_dir / "records.jsonl"))
    manifest = mf.load(new.run_dir)
    assert (manifest.provenance, manifest.reused_from) == ("mixed", "old")


def test_a_labelled_sweep_writes_its_history_and_links_it_from_the_report(virtual_farm, tmp_path: Path) -> None:
    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    for night in ("n1", "n2"):
        result = sweep(sweep_request(tmp_path, tasks, run_id=night, label="nightly"))
    history = tmp_path / "runs" / "history" / "nightly-n2" / "history.md"
    assert history.is_file() and "n1" in history.read_text(encoding="utf-8")
    md = (result.run_dir / "report.md").read_text(encoding="utf-8")
    assert "See also: ../history/nightly-n2/history.md (night over night)" in md


def test_a_phone_that_drops_its_link_gives_its_units_to_the_other_phone(virtual_farm, tmp_path: Path) -> None:
    import os
    import threading

    from adbutils import AdbClient

    steady = virtual_farm(1)
    flaky = virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks")
    client = AdbClient(port=int(os.environ["ANDROID_ADB_SERVER_PORT"]))

    def drop_then_return() -> None:
        # The link drops at a known moment (the first record) and comes back a second later.
        client.disconnect(flaky[0].serial)
        threading.Timer(1.0, lambda: client.connect(flaky[0].serial, timeout=20)).start()

    # Enough units that the steady phone is still busy when the dropped one is back (a host step is milliseconds).
    repeats = 6
    with on_first_record(drop_then_return):
        result = sweep(sweep_request(tmp_path, tasks, spread="shard", repeats=repeats, run_id="d1",
                                     quarantine_after=1))
    records = read_records(result.run_dir / "records.jsonl")
    assert Counter((r.task_id, r.repeat) for r in records) == Counter(
        {(t, r): 1 for t in ("calculator-multiply", "settings-android-version", "clock-alarm-7am", SHOP_TASK,
                             "settings-upgrade-android-99") for r in range(1, repeats + 1)})
    assert result.counts["unfinished"] == 0 and result.exit_code == EXIT_OK
    # The dropped phone is quarantined; once adb lists it again it passes the health gate and is re-admitted.
    assert any("quarantined after 1 infrastructure failures" in n for n in result.notes)
    assert any("re-admitted after a health check" in n for n in result.notes)
    assert flaky[0].serial not in result.quarantined
    late = [r for r in records if r.attempt > 1]
    assert late and all(r.extra["tries"][0]["kind"] == "infra" for r in late)  # type: ignore[index]
    assert any(r.device == steady[0].serial for r in late)


def test_instrument_batches_run_several_units_per_call_and_record_each_once(virtual_farm, tmp_path: Path) -> None:
    from farm.android.options import AgentOptions

    phone = virtual_farm(1)[0]
    tasks = scripted_tasks(tmp_path / "tasks")
    result = sweep(sweep_request(tmp_path, tasks, executor="instrument", host=None, batch=3, repeats=2, run_id="i1",
                                 agent=AgentOptions(split="all", allow_irreversible=True)))
    records = read_records(result.run_dir / "records.jsonl")
    ran = [r for r in records if r.outcome != "skipped"]
    assert Counter(str(r.extra["unit"]) for r in ran) == Counter({str(r.extra["unit"]): 1 for r in ran})
    assert len(ran) == 10 and result.exit_code == EXIT_FAILED
    calls = {r.evidence.split("/")[3] for r in ran if r.evidence}
    assert len(calls) == 4, calls  # 10 units of 5 distinct tasks, at most 3 distinct tasks a call
    assert all(r.device == phone.serial and r.device_verdict is not None for r in ran)


def test_a_phone_listed_by_two_adb_servers_runs_once(virtual_farm, tmp_path: Path) -> None:
    from adbutils import AdbClient

    tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    virtual_farm(0)
    with extra_adb_server() as b, phones_on(b, 1) as (phone,):
        import os

        AdbClient(port=int(os.environ["ANDROID_ADB_SERVER_PORT"])).connect(phone.serial, timeout=20)
        result = sweep(sweep_request(tmp_path, tasks, config=farm_yaml(tmp_path / "farm.yaml", b), run_id="dup"))
    records = read_records(result.run_dir / "records.jsonl")
    assert [(r.device, r.task_id) for r in records] == [(phone.serial, "calculator-multiply")]
    assert any(n.startswith(f"{phone.serial}: listed by ") for n in mf.load(result.run_dir).notes)


def test_one_serial_naming_different_phones_on_two_servers_keeps_both_apart() -> None:
    from farm.android.devices import FoundPhone
    from farm.config import AdbServer
    from farm.sweep.runner import name_apart

    def listing(port: int) -> FoundPhone:
        return FoundPhone("emulator-5554", AdbServer(host="10.0.0.1", port=port), "device", None)  # type: ignore[arg-type]

    a, b, c = listing(5037), listing(5038), listing(5039)
    same = {5037: "SIMA id-a", 5038: "SIMB id-b", 5039: "SIMA id-a"}
    notes: list[str] = []
    phones = name_apart([a, b], notes, identity=lambda p: same[p.server.port])
    assert [(p.serial, p.on_server) for p in phones] == [
        ("emulator-5554@10.0.0.1:5037", "emulator-5554"), ("emulator-5554@10.0.0.1:5038", "emulator-5554")]
    assert notes == ["emulator-5554: different phones on 10.0.0.1:5037, 10.0.0.1:5038; named "
                     "emulator-5554@10.0.0.1:5037, emulator-5554@10.0.0.1:5038"]
    # The same hardware behind two servers is one phone; a phone that cannot be asked is never merged.
    assert [p.serial for p in name_apart([a, c], [], identity=lambda p: same[p.server.port])] == ["emulator-5554"]
    assert len(name_apart([a, c], [], identity=lambda p: None)) == 2


def test_a_phone_whose_link_drops_by_its_fault_option_loses_no_unit(virtual_farm, tmp_path: Path) -> None:
    from farm.android.options import AgentOptions
    from farm.sim.profile import FaultSpec, default_profile

    steady = virtual_farm(1)[0]
    slow = default_profile()
    slow.agent.time_scale = 10.0  # a simulated task takes seconds, so the drop comes mid-task
    dropping = virtual_farm(1, profile=slow, faults=FaultSpec(disconnect_after_s=3))[0]
    tasks = scripted_tasks(tmp_path / "tasks")
    result = sweep(sweep_request(tmp_path, tasks, executor="instrument", host=None, spread="shard", repeats=2,
                                 run_id="f1", idle_timeout_s=30,
                                 agent=AgentOptions(split="all", allow_irreversible=True)))
    assert dropping.state.link_drops >= 1
    records = [r for r in read_records(result.run_dir / "records.jsonl") if r.outcome != "skipped"]
    # Every planned unit has exactly one final record with its own verdict; a unit the drop cut short was
    # tried again and says so.
    assert Counter(str(r.extra["unit"]) for r in records) == Counter({str(r.extra["unit"]): 1 for r in records})
    assert {(r.task_id, r.repeat) for r in records} == {
        (t, n) for t in ("calculator-multiply", "settings-android-version", "clock-alarm-7am", SHOP_TASK,
                         "settings-upgrade-android-99") for n in (1, 2)}
    assert result.counts["unfinished"] == 0 and result.exit_code == EXIT_FAILED
    assert not [r for r in records if r.outcome == "error"]
    for rec in (r for r in records if r.attempt > 1):
        assert rec.extra["tries"][0]["kind"] == "infra"  # type: ignore[index]
    # Which phone finished which unit depends on when the drop lands (on a loaded machine the dropping phone may
    # finish none): what matters is that both phones' units were finished by one of them.
    assert {r.device for r in records} <= {steady.serial, dropping.serial} and steady.serial in {
        r.device for r in records}
