"""Hard limits on what a pull takes from a phone (`farm.android.pull_limits`, `farm.android.pull`).

Reproductions of the issue "Hard limits everywhere input is not ours":
- a scores.jsonl of tiny lines past the records cap: the first records are kept, the rest counted in the run's
  notes, and the file is read streaming (memory holds one line, never the file);
- a 300-level directory beside a valid scores.jsonl: the records are pulled and scored, the deep directory is
  refused alone and listed, and a FAIL answering a LIST is that directory's error, never a directory entry.
"""

from __future__ import annotations

import io
import json
import os
import socket
import struct
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import adbutils
import pytest

import farm.android.pull as pull
from farm import manifest as mf
from farm.android.phone_records import phone_records
from farm.android.prepare import Prepared
from farm.android.pull import PullResult, pull_tree
from farm.android.pull_limits import PullCaps, TooLong, bounded_lines, caps_of, read_scores
from farm.android.pull_run import pull_run
from farm.android.sync_stream import Entry, Listing, SyncFail, SyncLost, SyncSession
from farm.config import FarmConfig, PullLimits
from farm.report.aggregate import aggregate
from farm.results.normalise import Context
from farm.results.store import read_records
from farm.sim.launcher import SimPhone
from tests.helpers.hostile_trees import deep_dirs, endless_line, tiny_scores, wide_dir
from tests.helpers.records import score_line, scores_text
from tests.helpers.sync_conn import SyncConn

EVAL = "/sdcard/Android/data/dev.agentfarm.simagent/files/eval"
REMOTE = "/sdcard/eval/r1"
CTX = Context(run="r1", device="phone-1", executor="instrument")
_HEAD = struct.Struct("<4sI")
_DENT = struct.Struct("<4sIIII")
DIR, FILE = 0o040755, 0o100644


# --- the sync client on canned answers ------------------------------------------------------------------------


class _Canned:
    """A device whose sync streams answer with canned bytes, one answer per stream (a real socket pair each)."""

    def __init__(self, *answers: bytes) -> None:
        self.answers = list(answers)
        self.peers: list[socket.socket] = []

    def open_transport(self, timeout: float | None = None) -> SyncConn:
        here, there = socket.socketpair()
        there.sendall(self.answers.pop(0))
        there.shutdown(socket.SHUT_WR)  # the phone says nothing more: a read past the answer is the stream's end
        self.peers.append(there)
        return SyncConn(here)


def _dent(name: str, mode: int = FILE, size: int = 1) -> bytes:
    raw = name.encode()
    return _DENT.pack(b"DENT", mode, size, 0, len(raw)) + raw


def _fail(message: bytes) -> bytes:
    return _HEAD.pack(b"FAIL", len(message)) + message


DONE = _DENT.pack(b"DONE", 0, 0, 0, 0)


@pytest.mark.parametrize("before", [b"", _dent("."), _dent(".") + _dent("a")], ids=["alone", "after-dot", "after-a"])
def test_a_fail_answering_list_is_an_error_for_that_directory_never_an_entry(before: bytes) -> None:
    session = SyncSession(_Canned(before + _fail(b"path too long")))  # type: ignore[arg-type]
    with pytest.raises(SyncFail, match="^path too long$"):
        session.list("/sdcard/eval/r1/deep")


def test_a_listing_is_read_by_reply_id() -> None:
    session = SyncSession(_Canned(_dent(".", DIR) + _dent("..", DIR) + _dent("a", FILE, 3) + DONE))  # type: ignore[arg-type]
    listing = session.list("/d")
    assert listing == Listing([Entry(".", DIR, 1), Entry("..", DIR, 1), Entry("a", FILE, 3)])
    for garbage in (b"DATA" + bytes(16), b"STAT" + bytes(16), b"\0" * 20):
        with pytest.raises(SyncLost, match="answering LIST"):
            SyncSession(_Canned(_dent("a") + garbage)).list("/d")  # type: ignore[arg-type]


def test_a_fail_announcing_a_huge_message_is_never_read() -> None:
    with pytest.raises(SyncLost, match="FAIL announcing"):
        SyncSession(_Canned(_HEAD.pack(b"FAIL", 2**31))).list("/d")  # type: ignore[arg-type]


def test_a_fail_answering_stat_is_a_sync_fail() -> None:
    with pytest.raises(SyncFail, match="path too long"):
        SyncSession(_Canned(_fail(b"path too long"))).stat("/d")  # type: ignore[arg-type]


def test_a_listing_past_the_cap_comes_back_cut_without_reading_the_rest() -> None:
    entries = b"".join(_dent(f"f{n}") for n in range(5))
    session = SyncSession(_Canned(_dent(".", DIR) + _dent("..", DIR) + entries + DONE))  # type: ignore[arg-type]
    listing = session.list("/d", most=3)
    assert listing.cut and [e.name for e in listing.entries] == [".", "..", "f0", "f1", "f2"]
    exact = SyncSession(_Canned(entries[: 3 * len(_dent("f0"))] + DONE)).list("/d", most=3)  # type: ignore[arg-type]
    assert not exact.cut and len(exact.entries) == 3


def test_a_pull_refuses_a_failed_directory_alone_and_goes_on_on_a_new_stream(tmp_path: Path) -> None:
    # Stream 1: the root's STAT and listing, then a FAIL for `bad` (adbd ends the stream); stream 2: the rest.
    root = _dent(".", DIR) + _dent("..", DIR) + _dent("good", DIR, 0) + _dent("bad", DIR, 0) + _dent("a.txt", FILE, 2)
    stat = struct.pack("<4sIII", b"STAT", DIR, 0, 0)
    good = _dent(".", DIR) + _dent("b.txt", FILE, 1) + DONE
    recv = _HEAD.pack(b"DATA", 2) + b"hi" + _HEAD.pack(b"DONE", 0) + _HEAD.pack(b"DATA", 1) + b"b" + _HEAD.pack(
        b"DONE", 0)
    device = _Canned(stat + root + DONE + _fail(b"opendir failed"), good + recv)
    dest = tmp_path / "raw"
    result = pull_tree(device, REMOTE, dest, PullLimits())  # type: ignore[arg-type]
    assert result.refused == [f"'{REMOTE}/bad': the phone refused to list it: FAIL 'opendir failed'"]
    assert (result.files, (dest / "a.txt").read_bytes(), (dest / "good" / "b.txt").read_bytes()) == (2, b"hi", b"b")


def test_a_listing_that_breaks_twice_refuses_that_directory_alone(tmp_path: Path) -> None:
    # `odd` announces a 5 000-byte name (no file system has one): the stream is out of step. It is asked again on a
    # new stream, breaks again, and is refused alone; a.txt still arrives on a third stream.
    stat = struct.pack("<4sIII", b"STAT", DIR, 0, 0)
    root = _dent(".", DIR) + _dent("odd", DIR, 0) + _dent("a.txt", FILE, 2) + DONE
    broken = _DENT.pack(b"DENT", FILE, 1, 0, 5000) + b"x" * 10
    recv = _HEAD.pack(b"DATA", 2) + b"hi" + _HEAD.pack(b"DONE", 0)
    result = pull_tree(_Canned(stat + root + broken, broken, recv), REMOTE, tmp_path / "raw",  # type: ignore[arg-type]
                       PullLimits())
    assert result.refused == [f"'{REMOTE}/odd': its listing broke twice (sync: a 5000-byte name answering LIST)"]
    assert result.files == 1 and (tmp_path / "raw" / "a.txt").read_bytes() == b"hi"


# --- a hostile tree on a virtual phone ------------------------------------------------------------------------


def _tree(phone: SimPhone) -> Path:
    tree = phone.root / "sdcard" / "eval" / "r1"
    tree.mkdir(parents=True)
    return tree


def _pull(phone: SimPhone, dest: Path, caps: PullCaps | None = None) -> PullResult:
    device = adbutils.AdbClient(port=phone.adb_port).device(phone.serial)
    return pull_tree(device, REMOTE, dest, PullLimits(), caps=caps)


def _depth(root: Path) -> int:
    depth, here = 0, root
    while True:
        below = [p for p in here.iterdir() if p.is_dir()]
        if not below:
            return depth
        here, depth = below[0], depth + 1


def test_a_300_level_directory_is_refused_alone_and_the_scores_beside_it_arrive(
    virtual_phone: SimPhone, tmp_path: Path
) -> None:
    tree = _tree(virtual_phone)
    (tree / "scores.jsonl").write_text(scores_text(score_line("t1")))
    (tree / "t1" / "run").mkdir(parents=True)
    (tree / "t1" / "run" / "final.json").write_text("{}")
    name = deep_dirs(tree, depth=300, name_len=20)
    dest = tmp_path / "raw"
    result = _pull(virtual_phone, dest)
    assert not [e for e in result.refused if "pull stopped" in e], result.refused
    assert result.files == 2 and (dest / "scores.jsonl").read_text() == scores_text(score_line("t1"))
    (refused,) = result.refused
    deepest = REMOTE + f"/{name}" * 25
    assert refused == f"{deepest!r}: directory deeper than 24 levels (max_depth), not listed"
    assert _depth(dest / name) == 23  # 24 levels pulled: the first and 23 below it


def test_a_fail_from_the_phone_on_a_too_long_path_refuses_that_directory_alone(
    virtual_phone: SimPhone, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The host's own checks are lifted so that the LIST of a path past 1 024 bytes reaches the phone, which answers
    # FAIL "path too long" and ends the stream, as adbd does; the pull reads it as that directory's error.
    monkeypatch.setattr(pull, "SYNC_PATH_MAX", 1 << 20)
    tree = _tree(virtual_phone)
    (tree / "scores.jsonl").write_text(scores_text(score_line("t1")))
    (tree / "z-after").mkdir()
    (tree / "z-after" / "kept.txt").write_text("kept\n")
    deep_dirs(tree, depth=300, name_len=20)
    result = _pull(virtual_phone, tmp_path / "raw", PullCaps(max_depth=1000))
    (refused,) = result.refused
    assert refused.endswith(": the phone refused to list it: FAIL 'path too long'"), refused
    assert len(refused.split("'")[1].encode()) > 1024
    assert result.files == 2 and (tmp_path / "raw" / "z-after" / "kept.txt").read_text() == "kept\n"


def test_entries_past_the_directory_cap_are_refused_and_the_rest_of_the_tree_arrives(
    virtual_phone: SimPhone, tmp_path: Path
) -> None:
    tree = _tree(virtual_phone)
    wide_dir(tree / "wide", 30)
    (tree / "other").mkdir()
    (tree / "other" / "x.txt").write_text("x")
    result = _pull(virtual_phone, tmp_path / "raw", PullCaps(max_dir_entries=10))
    assert result.refused == [f"'{REMOTE}/wide': more than 10 entries (max_dir_entries): the first 10 are pulled, "
                              "the rest not listed"]
    assert len(list((tmp_path / "raw" / "wide").iterdir())) == 10 and (tmp_path / "raw" / "other" / "x.txt").is_file()
    assert result.files == 11


def test_entries_past_the_tree_cap_are_counted_and_unlisted_directories_named(
    virtual_phone: SimPhone, tmp_path: Path
) -> None:
    tree = _tree(virtual_phone)
    wide_dir(tree, 6, prefix="top")
    wide_dir(tree / "sub", 3)
    result = _pull(virtual_phone, tmp_path / "raw", PullCaps(max_tree_entries=4))
    assert result.files + len(list((tmp_path / "raw").glob("sub"))) == 4
    assert any("entries not pulled: the tree has more than 4 entries (max_tree_entries)" in e for e in result.refused)


def test_farm_pull_of_a_deep_tree_scores_the_records_lists_the_refusal_and_exits_0(
    virtual_phone: SimPhone, tmp_path: Path
) -> None:
    tree = virtual_phone.state.host_path(f"{EVAL}/deep")
    tree.mkdir(parents=True)
    (tree / "scores.jsonl").write_text(scores_text(score_line("t1"), score_line("t2")))
    deep_dirs(tree, depth=300, name_len=20)
    code = "import sys; from farm.cli import main; main(sys.argv[1:])"
    proc = subprocess.run([sys.executable, "-c", code, "pull", "--device", virtual_phone.serial, "--run", "deep"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "200"})
    # A pull that kept what it could exits as any pull: the refusal is listed, not an exit status (pull_run).
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("2 new records"), proc.stdout
    assert "directory deeper than 24 levels (max_depth), not listed" in proc.stderr
    run_dir = tmp_path / "runs" / "deep"
    assert [r.task_id for r in read_records(run_dir / "records.jsonl")] == ["t1", "t2"]
    notes = aggregate([run_dir]).data.notes
    assert len(notes) == 1 and "pull refused" in notes[0] and "deeper than 24 levels" in notes[0]


# --- bounded reads of the scores file -------------------------------------------------------------------------


def test_a_scores_file_past_the_records_cap_keeps_the_first_records_and_notes_the_rest(
    virtual_phone: SimPhone, tmp_path: Path
) -> None:
    tree = virtual_phone.state.host_path(f"{EVAL}/tiny")
    tree.mkdir(parents=True)
    lines = tiny_scores(tree / "scores.jsonl", lines=30_000)
    cfg = FarmConfig(tasks_dir=str(tmp_path / "no-tasks"))
    summary = pull_run(cfg, serial=virtual_phone.serial, run="tiny", split="all", runs_dir=tmp_path / "runs",
                       profile=None)
    assert summary.records == 10_000
    records = read_records(summary.run_dir / "records.jsonl")
    assert [r.task_id for r in records[:2]] == ["t000000", "t000001"] and records[-1].task_id == "t009999"
    note = (f"scores.jsonl: {lines - 10_000} lines past the cap of 10000 records per pull (max_records) not read; "
            "the first 10000 records kept")
    assert summary.refused == [note]
    assert mf.load(summary.run_dir).notes == [f"{virtual_phone.serial}: pull refused {note}"]
    again = pull_run(cfg, serial=virtual_phone.serial, run="tiny", split="all", runs_dir=tmp_path / "runs",
                     profile=None)
    assert again.records == 0 and len(mf.load(summary.run_dir).notes) == 1  # noted once however often pulled


class _Reads(io.RawIOBase):
    """A file's raw reads, each size noted (a whole-file read would show as one huge size)."""

    def __init__(self, path: Path) -> None:
        self.inner = path.open("rb", buffering=0)
        self.sizes: list[int] = []
        self.got = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf: memoryview) -> int:  # type: ignore[override]
        self.sizes.append(len(buf))
        n = self.inner.readinto(buf)
        self.got += n
        return n

    def close(self) -> None:
        self.inner.close()
        super().close()


def test_lines_are_read_streaming_one_bounded_line_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "scores.jsonl"
    with path.open("w") as out:
        out.write(scores_text(score_line("a")))
        out.write(endless_line(3 * 1024 * 1024, "huge"))
        out.write(scores_text(score_line("b")) + "no newline at the end")
    raw = _Reads(path)
    handle = io.BufferedReader(raw, buffer_size=8192)
    lines = bounded_lines(handle, 64 * 1024)
    assert isinstance(lines, Iterator)
    first = next(lines)
    assert isinstance(first, bytes) and json.loads(first)["id"] == "a"
    assert raw.got < 16 * 1024  # one line read, not the file
    rest = list(lines)
    assert isinstance(rest[0], TooLong) and b'"id": "huge"' in rest[0].head and len(rest[0].head) <= 4096
    assert rest[0].size == 3 * 1024 * 1024 - 1
    assert json.loads(rest[1])["id"] == "b" and rest[2] == b"no newline at the end"
    assert max(raw.sizes) <= 64 * 1024 + 8192


def test_reading_a_file_of_tiny_lines_holds_neither_the_file_nor_the_records_past_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "scores.jsonl"
    lines = tiny_scores(path, lines=200_000)  # 9 MB
    tracemalloc.start()
    try:
        got = read_scores(path, CTX, "scores.jsonl", PullCaps(max_records=100))
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * 1024 * 1024, peak  # the file is 9 MB; the records of all its lines far more
    assert len(got.normalised.records) == 100 and got.refusals.past_records == lines - 100
    assert got.notes == [f"scores.jsonl: {lines - 100} lines past the cap of 100 records per pull (max_records) "
                         "not read; the first 100 records kept"]


def test_a_line_past_the_length_cap_is_an_error_record_naming_it_and_the_others_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "scores.jsonl"
    path.write_text(scores_text(score_line("a")) + '{"id": "b", "outc\n' + endless_line(2 * 1024 * 1024, "c")
                    + scores_text(score_line("d")))
    tracemalloc.start()
    try:
        got = read_scores(path, CTX, "scores.jsonl")
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * 1024 * 1024 + 512 * 1024, peak  # one line of at most 1 MiB, never the 2 MiB one
    records = got.normalised.records
    assert [(r.task_id, r.source) for r in records] == [
        ("a", "scores.jsonl:1"), ("b", "scores.jsonl:2"), ("c", "scores.jsonl:3"), ("d", "scores.jsonl:4")]
    assert records[2].outcome == "error"
    assert records[2].reasons == [f"corrupt scores.jsonl line 3: longer than 1048576 bytes ({2 * 1024 * 1024 - 1} "
                                  "bytes), not parsed"]
    assert [p.split(": ")[0] for p in got.normalised.problems] == ["scores.jsonl:2", "scores.jsonl:3"]
    assert got.notes == ["scores.jsonl: 1 lines longer than 1048576 bytes (max_line_bytes) not parsed (each kept as "
                         "an error record)"]


def test_lines_past_the_unit_cap_and_the_line_cap_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "scores.jsonl"
    tiny_scores(path, lines=50, same_id="t1")
    with path.open("a") as out:
        out.write(scores_text(score_line("t2")) + "\n" * 30 + scores_text(score_line("t3")))
    got = read_scores(path, CTX, "scores.jsonl", PullCaps(max_lines=70))
    assert [r.task_id for r in got.normalised.records] == ["t1"] * 10 + ["t2"]
    assert got.refusals.past_unit == 40 and got.refusals.units_capped == 1
    assert got.refusals.past_lines == 12  # lines 71-81: blank ones and t3's
    assert got.notes == [
        "scores.jsonl: 12 lines past the cap of 70 lines (max_lines) not read",
        "scores.jsonl: 40 lines for 1 unit(s) past the cap of 10 lines per unit (max_records_per_unit) not taken",
    ]


def test_phone_records_hands_the_cap_notes_to_the_sweep_with_the_problems(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    tiny_scores(raw / "scores.jsonl", lines=30)
    records, problems = phone_records(CTX, Prepared(), None, raw, "live", tmp_path, PullCaps(max_records=5))
    assert len(records) == 5
    assert problems == ["scores.jsonl: 25 lines past the cap of 5 records per pull (max_records) not read; the "
                        "first 5 records kept"]


def test_an_oversized_bundle_is_refused_unread_and_listed(virtual_phone: SimPhone, tmp_path: Path) -> None:
    tree = virtual_phone.state.host_path(f"{EVAL}/big")
    tree.mkdir(parents=True)
    (tree / "scores.jsonl").write_text(scores_text(score_line("t1")))
    bundle = virtual_phone.state.host_path(f"{EVAL}-tasks")
    bundle.mkdir(parents=True)
    (bundle / "big.json").write_bytes(b'{"tasks": [' + b" " * (9 * 1024 * 1024) + b"]}")
    summary = pull_run(FarmConfig(tasks_dir=str(tmp_path / "no-tasks")), serial=virtual_phone.serial, run="big",
                       split="all", runs_dir=tmp_path / "runs", profile=None)
    path = f"{EVAL}-tasks/big.json"
    assert summary.refused == [f"{path!r}: larger than 8388608 bytes, not read (max_bundle_bytes)"]
    assert summary.records == 1


def test_caps_come_from_farm_yaml_else_the_defaults() -> None:
    assert caps_of(None) == caps_of(PullLimits()) == PullCaps()
    assert caps_of(PullLimits(max_depth=3, max_records=7)) == PullCaps(max_depth=3, max_records=7)
