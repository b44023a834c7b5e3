"""The run store: one creator and joiner of runs, the one writer of records.jsonl."""

from __future__ import annotations

import errno
import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from farm import manifest as mf
from farm.errors import FarmError
from farm.results.store import (
    ReadProblems,
    RunStore,
    current_records,
    is_run_dir,
    phone_dir,
    pulled_dir,
    read_records,
    try_dir,
    unit_slug,
)
from tests.helpers.records import record, run_of_other_lanes


def _entry(lane: str, **detail: object) -> mf.LaneEntry:
    return mf.LaneEntry(lane=lane, outputs=[f"{lane}/out"], detail=detail)  # type: ignore[arg-type]


def test_join_creates_a_run_with_the_lane_when_there_is_none(tmp_path: Path) -> None:
    store, created = RunStore.join(tmp_path, "r1", _entry("web"))
    assert created
    manifest = mf.load(store.run_dir)
    assert (manifest.run_id, [e.lane for e in manifest.lanes]) == ("r1", ["web"])


def test_join_keeps_every_record_and_lane_of_the_run_it_joins(tmp_path: Path) -> None:
    before = run_of_other_lanes(tmp_path, "r1", ["android", "webvoyager"])
    store, created = RunStore.join(tmp_path, "r1", _entry("web"))
    store.append([record("w1", run="r1", lane="web")])
    assert not created
    assert store.records.read_bytes().startswith(before)
    assert [e.lane for e in store.manifest().lanes] == ["android", "webvoyager", "web"]
    assert store.manifest().status == "finished"


def test_join_refuses_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    (tmp_path / "r1").mkdir()
    (tmp_path / "r1" / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(FarmError, match="exists but has no manifest.json"):
        RunStore.join(tmp_path, "r1", _entry("web"))
    assert sorted(p.name for p in (tmp_path / "r1").iterdir()) == ["notes.txt"]


def test_join_refuses_a_manifest_of_another_run(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="offered for run"):
        RunStore.join(tmp_path, "r1", _entry("web"), new=lambda: mf.Manifest(run_id="r2", created_at=mf.utc_now()))


def test_create_refuses_an_existing_run_and_leaves_it_alone(tmp_path: Path) -> None:
    before = run_of_other_lanes(tmp_path, "r1", ["android"])
    with pytest.raises(FarmError, match="already exists"):
        RunStore.create(tmp_path, mf.Manifest(run_id="r1", created_at=mf.utc_now()))
    assert (tmp_path / "r1" / "records.jsonl").read_bytes() == before


def test_two_lanes_joining_at_once_make_one_manifest_with_both(tmp_path: Path) -> None:
    barrier = threading.Barrier(4)
    lanes = ["android", "web", "webvoyager", "desktop"]

    def join(lane: str) -> None:
        barrier.wait()
        RunStore.join(tmp_path, "r1", _entry(lane))

    threads = [threading.Thread(target=join, args=(lane,)) for lane in lanes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(e.lane for e in mf.load(tmp_path / "r1").lanes) == sorted(lanes)


def test_joining_the_same_lane_again_extends_its_entry(tmp_path: Path) -> None:
    RunStore.join(tmp_path, "r1", mf.LaneEntry(lane="web", outputs=["a"], detail={"x": 1}))
    store, _ = RunStore.join(tmp_path, "r1", mf.LaneEntry(lane="web", outputs=["b"], detail={"y": 2}))
    (entry,) = store.manifest().lanes
    assert (entry.outputs, entry.detail) == (["a", "b"], {"x": 1, "y": 2})


def test_supersede_appends_only_changed_attempts(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, mf.Manifest(run_id="r1", created_at=mf.utc_now()))
    first = [record("a", run="r1", lane="webvoyager", passed=False), record("b", run="r1", lane="webvoyager")]
    assert store.supersede(first) == 2
    before = store.records.read_bytes()
    changed = [first[0].model_copy(update={"passed": True, "outcome": "succeeded"}), first[1]]
    assert store.supersede(changed) == 1
    assert store.supersede(changed) == 0
    assert store.records.read_bytes().startswith(before)
    assert [(r.task_id, r.passed) for r in read_records(store.records)] == [("a", False), ("b", True), ("a", True)]


def test_append_new_leaves_out_attempts_already_recorded(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, mf.Manifest(run_id="r1", created_at=mf.utc_now()))
    store.append([record("a", run="r1")])
    assert store.append_new([record("a", run="r1"), record("b", run="r1")]) == (1, 1)
    assert [r.task_id for r in read_records(store.records)] == ["a", "b"]


def _append_many(run_dir: str, lane: str, count: int) -> None:
    store = RunStore(Path(run_dir))
    for i in range(count):
        # Long lines: a torn or interleaved append would show as an unreadable line.
        store.append([record(f"{lane}-{i}", run="r1", lane=lane, answer="x" * 20_000)])


def test_appends_of_two_processes_never_interleave(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path, mf.Manifest(run_id="r1", created_at=mf.utc_now()))
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(str(store.run_dir), lane, 40)) for lane in ("android", "web")]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    records = read_records(store.records)  # raises on any damaged line
    assert sorted(r.task_id for r in records) == sorted([f"android-{i}" for i in range(40)]
                                                        + [f"web-{i}" for i in range(40)])


def test_the_layout_keeps_every_path_inside_the_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "r1"
    assert phone_dir(run_dir, "127.0.0.1:5555") == run_dir / "android" / "127.0.0.1_5555"
    assert try_dir(run_dir, "S1", "task@S1#2", 3) == run_dir / "android" / "S1" / "units" / "task_S1_2.try3"
    assert unit_slug("../../etc/passwd") == ".._.._etc_passwd"
    for path in (phone_dir(run_dir, "../.."), pulled_dir(run_dir, "../x", "tune"), try_dir(run_dir, "..", "/..", 1)):
        assert path.resolve().is_relative_to(run_dir.resolve()), path


def test_is_run_dir_needs_a_manifest_or_records(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    run_of_other_lanes(tmp_path, "r1", ["web"])
    assert (is_run_dir(tmp_path / "empty"), is_run_dir(tmp_path / "r1")) == (False, True)


def test_current_records_keep_the_later_line_of_an_attempt_in_its_place() -> None:
    a1, b1 = record("a", passed=False), record("b")
    a2 = a1.model_copy(update={"passed": True, "outcome": "succeeded"})
    retry = record("a", attempt=2)
    assert current_records([a1, b1, a2, retry]) == [b1, a2, retry]


def _disk_fills_halfway(fd: int, data: bytes) -> None:
    """A write the disk takes only part of before it is full (as ENOSPC lands in the middle of a line)."""
    os.write(fd, data[: len(data) // 2])
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_an_append_the_disk_cannot_take_leaves_the_file_as_it_was(tmp_path: Path, monkeypatch) -> None:
    store = RunStore.create(tmp_path, mf.Manifest(run_id="r1", created_at=mf.utc_now()))
    store.append([record("a", run="r1")])
    before = store.records.read_bytes()
    monkeypatch.setattr("farm.results.store.write_all", _disk_fills_halfway)
    with pytest.raises(OSError) as failed:
        store.append([record("b", run="r1", answer="x" * 10_000), record("c", run="r1")])
    assert failed.value.errno == errno.ENOSPC
    assert store.records.read_bytes() == before  # no half line left behind
    monkeypatch.undo()
    store.append([record("d", run="r1")])
    problems = ReadProblems()
    assert [r.task_id for r in read_records(store.records, problems)] == ["a", "d"]
    assert problems == ReadProblems()


def test_a_failed_append_after_a_torn_line_leaves_the_file_as_it_was(tmp_path: Path, monkeypatch) -> None:
    store = RunStore.create(tmp_path, mf.Manifest(run_id="r1", created_at=mf.utc_now()))
    store.append([record("a", run="r1")])
    with store.records.open("ab") as handle:
        handle.write(b'{"run": "r1", "ta')  # a crash mid-append, long ago
    before = store.records.read_bytes()
    monkeypatch.setattr("farm.results.store.write_all", _disk_fills_halfway)
    with pytest.raises(OSError):
        store.append([record("b", run="r1")])
    assert store.records.read_bytes() == before


def test_an_append_whose_fsync_finds_the_disk_full_is_cut_back(tmp_path: Path, monkeypatch) -> None:
    # Delayed allocation: the write is taken into the page cache and only the fsync says ENOSPC.
    store = RunStore.create(tmp_path, mf.Manifest(run_id="r1", created_at=mf.utc_now()))
    store.append([record("a", run="r1")])
    before = store.records.read_bytes()
    real_fsync = os.fsync
    calls: list[int] = []

    def fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError):
        store.append([record("b", run="r1")])
    monkeypatch.undo()
    assert store.records.read_bytes() == before
