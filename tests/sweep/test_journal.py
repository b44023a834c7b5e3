"""The sweep journal: leases, tries, requeue for another phone, quarantine, resume state."""

from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.sweep.journal import Journal, PlannedUnit, unit_id


def _journal(tmp_path: Path, *units: PlannedUnit) -> Journal:
    j = Journal.create(tmp_path, {"run": "r"}, units)
    for serial in ("A", "B"):
        j.add_phone(serial, "127.0.0.1:5037", "Pixel 7")
    return j


def _unit(task: str, pin: str = "", repeat: int = 1, priority: float = 0.0) -> PlannedUnit:
    return PlannedUnit(unit_id(task, pin, repeat), task, pin, repeat, priority)


def test_units_lease_in_priority_order(tmp_path: Path) -> None:
    j = _journal(tmp_path, _unit("short", priority=-10), _unit("long", priority=-100), _unit("new", priority=-1e18))
    order = [lease.task_id for lease in iter(lambda: j.lease("A", {"short", "long", "new"}), None)]
    assert order == ["new", "long", "short"]


def test_a_phone_only_gets_its_pinned_units_and_eligible_shard_units(tmp_path: Path) -> None:
    j = _journal(tmp_path, _unit("t1", "B"), _unit("t2"), _unit("t3"))
    got = [lease.task_id for lease in iter(lambda: j.lease("A", {"t3"}), None)]
    assert got == ["t3"]


def test_an_infrastructure_failure_goes_back_for_another_phone(tmp_path: Path) -> None:
    j = _journal(tmp_path, _unit("t1"))
    first = j.lease("A", {"t1"})
    assert first is not None
    assert j.fail_try(first, "adb gone", max_tries=3, quarantine_after=3) == (True, False)
    assert j.lease("A", {"t1"}) is None, "the phone it failed on waits while another is active"
    second = j.lease("B", {"t1"})
    assert second is not None and second.attempt == 2
    j.finish(second, outcome="succeeded", passed=True)
    assert [t[:3] for t in j.tries_of(first.unit_id)] == [(1, "A", "infra"), (2, "B", "ran")]
    assert j.counts()["done"] == 1


def test_a_unit_out_of_tries_is_unfinished_never_failed(tmp_path: Path) -> None:
    j = _journal(tmp_path, _unit("t1", "A"))
    for _ in range(2):
        lease = j.lease("A", {"t1"})
        assert lease is not None
        j.fail_try(lease, "instrument crash", max_tries=2, quarantine_after=9)
    (row,) = j.units()
    assert (row.state, row.outcome, row.passed, row.tries) == ("unfinished", "error", False, 2)


def test_consecutive_infrastructure_failures_quarantine_the_phone(tmp_path: Path) -> None:
    j = _journal(tmp_path, *[_unit(f"t{i}", "A") for i in range(3)])
    results = []
    for _ in range(2):
        lease = j.lease("A", {"t0", "t1", "t2"})
        assert lease is not None
        results.append(j.fail_try(lease, "offline", max_tries=5, quarantine_after=2))
    assert [q for _, q in results] == [False, True]
    assert j.quarantined() == {"A": ["offline"]}


def test_an_agent_result_resets_the_streak(tmp_path: Path) -> None:
    j = _journal(tmp_path, *[_unit(f"t{i}", "A") for i in range(3)])
    a = j.lease("A", {"t0", "t1", "t2"})
    assert a is not None
    j.fail_try(a, "offline", max_tries=5, quarantine_after=2)
    b = j.lease("A", {"t0", "t1", "t2"})
    assert b is not None
    j.finish(b, outcome="failed", passed=False)
    c = j.lease("A", {"t0", "t1", "t2"})
    assert c is not None
    assert j.fail_try(c, "offline", max_tries=5, quarantine_after=2) == (True, False)


def test_leased_units_survive_a_reopen_and_go_back_on_the_queue(tmp_path: Path) -> None:
    j = _journal(tmp_path, _unit("t1"), _unit("t2"))
    lease = j.lease("A", {"t1", "t2"})
    assert lease is not None
    j.close()
    again = Journal.open(tmp_path)
    assert [x.unit_id for x in again.leased()] == [lease.unit_id]
    again.interrupted(again.leased()[0], "controller stopped")
    assert again.counts() == {"pending": 2, "leased": 0, "done": 0, "unfinished": 0}
    nxt = again.lease("B", {"t1", "t2"})
    assert nxt is not None and nxt.unit_id == lease.unit_id and nxt.attempt == 2


def test_a_released_lease_does_not_count_as_a_try(tmp_path: Path) -> None:
    j = _journal(tmp_path, _unit("t1"))
    lease = j.lease("A", {"t1"})
    assert lease is not None
    j.release(lease, "stopping")
    again = j.lease("A", {"t1"})
    assert again is not None and again.attempt == 1


def test_an_existing_journal_is_never_overwritten(tmp_path: Path) -> None:
    _journal(tmp_path, _unit("t1"))
    with pytest.raises(FarmError, match="journal already exists"):
        Journal.create(tmp_path, {}, [])


def test_opening_a_run_without_journal_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FarmError, match="no journal"):
        Journal.open(tmp_path)
