"""A full disk is an infrastructure stop: one line naming the filesystem and the space needed, the manifest left
`interrupted`, exit 3, no torn record line, no unit recorded as an error; `--resume` after freeing space completes.

The disk fills by injection at each place a sweep writes (records, the journal, a try's tree, the reports), and once
for real: a small tmpfs filled while `farm sweep` runs.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from farm import manifest as mf
from farm.android.executor import Executor, ExecutorOutcome, PhoneJob, ProgressSink
from farm.disk_space import (
    RESERVE_FILE,
    DiskFull,
    SpaceReserve,
    filesystem_of,
    free_bytes,
    is_disk_full,
    mount_point,
    size_text,
)
from farm.errors import FarmError
from farm.exits import EXIT_BAD_INPUT, EXIT_UNFINISHED
from farm.fsutil import atomic_write_text
from farm.results.store import ReadProblems, read_records
from farm.sweep.journal import Journal, Lease
from farm.sweep.sweep import sweep
from tests.helpers.records import record, write_run
from tests.helpers.sweep import scripted_tasks, sweep_request

FARM = str(Path(sys.executable).parent / "farm")
UNITS = 5 * 2
"""Five scripted tasks, two repeats, one phone."""


@pytest.fixture(autouse=True)
def _one_code_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stop and its resume see one code version, even in a checkout being edited meanwhile (the fingerprint
    hashes the uncommitted diff, and a resume refuses another code)."""
    fixed = mf.code_fingerprint()
    monkeypatch.setattr(mf, "code_fingerprint", lambda repo=None: fixed)


def _enospc() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@contextmanager
def thread_errors() -> Iterator[list[BaseException]]:
    """Exceptions that ended a thread (each would be an `internal error in thread` line of its own)."""
    seen: list[BaseException] = []
    old = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None:
            seen.append(args.exc_value)

    threading.excepthook = hook
    try:
        yield seen
    finally:
        threading.excepthook = old


class Disk:
    """A switch for injected faults: full until `free()`."""

    def __init__(self) -> None:
        self.full = True

    def free(self) -> None:
        self.full = False


def _whole_lines(run_dir: Path) -> list[str]:
    """Each record's unit, after checking that records.jsonl ends on a whole line and has no damaged one."""
    path = run_dir / "records.jsonl"
    if not path.is_file():
        return []
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), data[-200:]
    problems = ReadProblems()
    units = [str(r.extra.get("unit")) for r in read_records(path, problems)]
    assert problems == ReadProblems(), problems
    return units


def _stopped(run_dir: Path, stop: DiskFull, capsys: pytest.CaptureFixture[str]) -> None:
    """What every full-disk stop leaves: one line (the error's), exit 3, the run `interrupted` and resumable."""
    assert stop.exit_code == EXIT_UNFINISHED
    line = stop.line()
    assert "\n" not in line and line.startswith(f"disk full on {filesystem_of(run_dir)}: ")
    assert str(mount_point(run_dir)) in line and "free" in line and "needs at least 200 MB" in line
    assert f"free space and run `farm sweep --resume {run_dir.name}`" in line
    out, err = capsys.readouterr()
    # The line is the caller's to say (the CLI prints it once): the sweep itself said no error of its own.
    assert not [ln for ln in (out + err).splitlines() if "error" in ln.split(":")[0]], out + err
    assert "Traceback" not in out + err
    manifest = mf.load(run_dir)
    assert manifest.status == "interrupted" and manifest.finished_at is None
    assert any(n.startswith("stopped: disk full") for n in manifest.notes)
    assert not (run_dir / RESERVE_FILE).exists()
    units = _whole_lines(run_dir)
    assert len(units) == len(set(units))  # never a unit twice
    assert all(r.outcome != "error" for r in read_records(run_dir / "records.jsonl"))  # not recorded as errors


def _resumed(tmp_path: Path, tasks: Path, run_id: str) -> None:
    """`--resume` after freeing space completes the run: every unit once, finished, with its reports."""
    done = sweep(sweep_request(tmp_path, tasks, run_id=run_id, resume=True))
    assert done.exit_code in (0, 1) and not done.interrupted, done.counts
    run_dir = tmp_path / "runs" / run_id
    units = _whole_lines(run_dir)
    assert len(units) == UNITS and len(set(units)) == UNITS
    assert mf.load(run_dir).status == "finished"
    assert (run_dir / "report.md").is_file()
    journal = Journal.open(run_dir)
    try:
        assert journal.counts()["done"] == UNITS
    finally:
        journal.close()


def test_records_the_disk_cannot_take_stop_the_sweep_once_and_a_resume_completes_it(
    virtual_farm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks")
    disk = Disk()
    from farm.fsutil import write_all

    appended: list[int] = []

    def fills_up(fd: int, data: bytes) -> None:
        appended.append(len(data))
        if disk.full and len(appended) > 3:
            os.write(fd, data[: len(data) // 2])  # half a line lands, then the disk is full
            raise _enospc()
        write_all(fd, data)

    monkeypatch.setattr("farm.results.store.write_all", fills_up)
    with thread_errors() as died, pytest.raises(DiskFull) as stopped:
        sweep(sweep_request(tmp_path, tasks, run_id="full", repeats=2))
    assert died == []
    run_dir = tmp_path / "runs" / "full"
    _stopped(run_dir, stopped.value, capsys)
    assert len(_whole_lines(run_dir)) == 3
    disk.free()
    _resumed(tmp_path, tasks, "full")


def test_a_journal_the_disk_cannot_take_stops_the_sweep_and_a_resume_completes_it(
    virtual_farm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks")
    disk = Disk()
    finish = Journal.finish
    calls: list[str] = []

    def finish_full(self: Journal, lease: Lease, **kw: Any) -> None:
        calls.append(lease.unit_id)
        if disk.full and len(calls) > 2:
            # As SQLite says it (SQLITE_FULL); the record of this unit is already written.
            raise sqlite3.OperationalError("database or disk is full")
        finish(self, lease, **kw)

    monkeypatch.setattr(Journal, "finish", finish_full)
    with thread_errors() as died, pytest.raises(DiskFull) as stopped:
        sweep(sweep_request(tmp_path, tasks, run_id="jfull", repeats=2))
    assert died == []
    _stopped(tmp_path / "runs" / "jfull", stopped.value, capsys)
    disk.free()
    _resumed(tmp_path, tasks, "jfull")


class _TreeFills:
    """An executor whose tree stops fitting after `ok` jobs: it catches the ENOSPC as executors do, and
    `run_units` makes it an infrastructure error that must not be recorded or retried elsewhere."""

    def __init__(self, real: Executor, disk: Disk, ok: int) -> None:
        self.real, self.disk, self.ok = real, disk, ok
        self.name = real.name
        self.jobs = 0

    def run(self, job: PhoneJob, progress: ProgressSink) -> ExecutorOutcome:
        self.jobs += 1
        if self.disk.full and self.jobs > self.ok:
            raise _enospc()
        return self.real.run(job, progress)

    def close(self) -> None:
        self.real.close()


def test_a_tree_the_disk_cannot_take_stops_the_sweep_without_error_records(
    virtual_farm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    virtual_farm(2)
    tasks = scripted_tasks(tmp_path / "tasks")
    disk = Disk()
    from farm.sweep import sweep as sweep_module

    load = sweep_module.load_executor

    def filling(*args: Any, **kw: Any) -> _TreeFills:
        return _TreeFills(load(*args, **kw), disk, ok=2)

    monkeypatch.setattr(sweep_module, "load_executor", filling)
    with thread_errors() as died, pytest.raises(DiskFull) as stopped:
        sweep(sweep_request(tmp_path, tasks, run_id="tfull", spread="shard", repeats=2))
    assert died == []
    run_dir = tmp_path / "runs" / "tfull"
    _stopped(run_dir, stopped.value, capsys)
    journal = Journal.open(run_dir)
    try:
        # The tries the disk cut short are neither failures of their phones nor retried on another one.
        assert not journal.quarantined()
        assert all(kind != "infra" for u in journal.units() for _n, _p, kind, _w in journal.tries_of(u.unit_id))
    finally:
        journal.close()
    disk.free()
    _resumed(tmp_path, tasks, "tfull")


def test_reports_the_disk_cannot_take_stop_the_sweep_and_a_resume_writes_them(
    virtual_farm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks")
    disk = Disk()
    from farm.report import build as build_module

    write = build_module.write_reports

    def full_reports(*args: Any, **kw: Any) -> list[Path]:
        if disk.full:
            raise _enospc()
        return write(*args, **kw)

    monkeypatch.setattr(build_module, "write_reports", full_reports)
    with thread_errors() as died, pytest.raises(DiskFull) as stopped:
        sweep(sweep_request(tmp_path, tasks, run_id="rfull", repeats=2))
    assert died == []
    run_dir = tmp_path / "runs" / "rfull"
    _stopped(run_dir, stopped.value, capsys)
    assert not (run_dir / "report.md").exists()
    assert not list(run_dir.glob(".report-*"))  # no half-written report folder left
    disk.free()
    _resumed(tmp_path, tasks, "rfull")


def test_the_preflight_refuses_below_the_floor_and_a_lower_floor_lets_the_sweep_start(
    virtual_farm, tmp_path: Path
) -> None:
    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks", ("read/system/calculator-multiply",))
    above = (free_bytes(tmp_path) >> 20) + 1024
    with pytest.raises(FarmError) as refused:
        sweep(sweep_request(tmp_path, tasks, run_id="pf", min_free_mb=float(above)))
    line = refused.value.line()
    assert refused.value.exit_code == EXIT_BAD_INPUT and not isinstance(refused.value, DiskFull)
    assert str(mount_point(tmp_path)) in line and "free" in line and f"at least {size_text(above << 20)}" in line
    assert "min_free_mb" in line
    assert not (tmp_path / "runs").exists()  # nothing written
    done = sweep(sweep_request(tmp_path, tasks, run_id="pf", min_free_mb=1.0))
    assert not done.interrupted and mf.load(done.run_dir).status == "finished"


def test_farm_report_on_a_full_disk_is_one_line_and_keeps_the_current_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from farm.report import build as build_module

    run_dir = write_run(tmp_path, "r", [record("t1", run="r")])
    build_module.build([run_dir])
    before = (run_dir / "report.md").read_bytes()

    def full(*_a: object, **_kw: object) -> list[Path]:
        raise _enospc()

    monkeypatch.setattr(build_module, "write_reports", full)
    with pytest.raises(DiskFull) as stopped:
        build_module.build([run_dir])
    assert stopped.value.exit_code == EXIT_BAD_INPUT
    assert str(mount_point(run_dir)) in stopped.value.line() and "farm report r" in stopped.value.line()
    assert (run_dir / "report.md").read_bytes() == before
    assert not list(run_dir.glob(".report-*"))


def test_an_atomic_write_the_disk_cannot_take_leaves_neither_a_temp_file_nor_a_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "manifest.json"
    target.write_text("before", encoding="utf-8")

    def half(fd: int, data: bytes) -> None:
        os.write(fd, data[:3])
        raise _enospc()

    monkeypatch.setattr("farm.fsutil.write_all", half)
    with pytest.raises(OSError):
        atomic_write_text(target, "after, longer")
    assert target.read_text(encoding="utf-8") == "before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]


def test_a_full_disk_is_known_whatever_wraps_it() -> None:
    assert is_disk_full(_enospc())
    assert is_disk_full(sqlite3.OperationalError("database or disk is full"))
    try:
        try:
            raise _enospc()
        except OSError:
            raise FarmError("x: cannot write") from None
    except FarmError as wrapped:
        assert is_disk_full(wrapped)
    assert is_disk_full(RuntimeError("IO Error: Could not write file: No space left on device"))
    assert not is_disk_full(OSError(errno.EACCES, os.strerror(errno.EACCES)))
    assert not is_disk_full(sqlite3.OperationalError("database is locked"))
    assert not is_disk_full(ValueError("no space in this name"))


def test_the_filesystem_is_named_by_its_mount_point(tmp_path: Path) -> None:
    assert mount_point(tmp_path / "not" / "made" / "yet") == mount_point(tmp_path)
    assert os.path.ismount(mount_point(tmp_path))
    assert filesystem_of(tmp_path).startswith(str(mount_point(tmp_path)))
    assert [size_text(n) for n in (0, 1023, 4096, 200 << 20, 5 << 30)] == ["0 B", "1023 B", "4 KB", "200 MB",
                                                                           "5.0 GB"]


def test_the_reserve_is_real_space_and_given_back(tmp_path: Path) -> None:
    reserve = SpaceReserve.hold(tmp_path, 1 << 20)
    path = tmp_path / RESERVE_FILE
    assert path.stat().st_blocks * 512 >= 1 << 20  # allocated, not sparse
    reserve.release()
    reserve.release()
    assert not path.exists()


# -- a real full filesystem -------------------------------------------------------------------------------------------

TMPFS_MB = 256
"""Above the default 200 MB floor: the sweep starts, then the test fills the rest."""


@contextmanager
def tmpfs(where: Path, size_mb: int) -> Iterator[Path]:
    where.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(where)], check=True,
                   capture_output=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, capture_output=True)


def _fill(path: Path) -> None:
    """Write `path` until the filesystem refuses (ENOSPC): nothing left for anyone."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    block = b"\0" * (1 << 20)
    try:
        while True:
            try:
                os.write(fd, block)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                if len(block) == 1:
                    return
                block = block[: len(block) // 2]
    finally:
        os.close(fd)


def _wait_for_records(path: Path, n: int, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.is_file() and path.read_bytes().count(b"\n") >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path}: fewer than {n} records after {timeout} s")


def test_a_real_full_tmpfs_stops_farm_sweep_with_one_line_and_exit_3_then_resume_completes(
    virtual_farm, tmp_path: Path
) -> None:
    virtual_farm(1)
    tasks = scripted_tasks(tmp_path / "tasks")
    with tmpfs(tmp_path / "disk", TMPFS_MB) as disk:
        runs = disk / "runs"
        common = ["--tasks-dir", str(tasks), "--runs-dir", str(runs), "--quiet"]
        env = {**os.environ, "FARM_LOG_DIR": str(tmp_path / "logs")}  # an internal error's log stays here
        proc = subprocess.Popen([FARM, "sweep", "--run-id", "k", "--executor", "host", "--policy", "scripted",
                                 "--split", "all", "--repeats", "3", *common],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        run_dir = runs / "k"
        _wait_for_records(run_dir / "records.jsonl", 2)
        _fill(disk / "filler")
        _out, err = proc.communicate(timeout=300)
        assert proc.returncode == EXIT_UNFINISHED, err
        assert "internal error" not in err and "Traceback" not in err, err
        lines = [ln for ln in err.splitlines() if ln.startswith("error")]
        assert len(lines) == 1, err
        assert lines[0].startswith(f"error: disk full on {disk} (tmpfs): "), err
        assert "needs at least 200 MB" in lines[0] and "free space and run `farm sweep --resume k`" in lines[0]
        assert mf.load(run_dir).status == "interrupted"
        kept = _whole_lines(run_dir)
        assert 2 <= len(kept) < 15 and len(set(kept)) == len(kept)

        (disk / "filler").unlink()
        done = subprocess.run([FARM, "sweep", "--resume", "k", *common], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300, env=env)
        assert done.returncode == 0, done.stderr
        units = _whole_lines(run_dir)
        assert len(units) == 15 and len(set(units)) == 15, Counter(units)
        assert mf.load(run_dir).status == "finished"
        assert not (run_dir / RESERVE_FILE).exists()
