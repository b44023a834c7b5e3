"""The sweep lock: one sweep per farm, the refusal names the holder, a dead holder never blocks."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from farm.errors import FarmError
from farm.sweep.lock import LockHolder, farm_lock, lock_path, read_holder

# A sweep in another process: takes the lock, says so, then waits for an order on stdin. An empty line (or EOF)
# leaves the `with` block normally; "vanish" exits at once without releasing anything.
_HOLDER_SCRIPT = """
import os, sys
from pathlib import Path
from farm.sweep.lock import farm_lock
with farm_lock(Path(sys.argv[1]), run_id=sys.argv[2], label="nightly", command=["farm", "sweep", "--label", "nightly"]):
    print("held", flush=True)
    if sys.stdin.readline().strip() == "vanish":
        os._exit(0)
"""


@contextmanager
def _holder_process(path: Path, run_id: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER_SCRIPT, str(path), run_id],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        if proc.stdout.readline() != "held\n":
            proc.kill()
            _, err = proc.communicate(timeout=30)
            pytest.fail(f"the holder process did not take the lock: {err}")
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def _refusal(path: Path, run_id: str = "second") -> FarmError:
    with pytest.raises(FarmError) as caught:
        with farm_lock(path, run_id=run_id, label=None):
            pytest.fail("a second sweep took a held lock")
    return caught.value


def test_default_lock_file_is_in_the_runs_directory() -> None:
    assert lock_path(Path("runs")) == Path("runs/.sweep.lock")


def test_second_sweep_in_another_process_is_refused_with_holder_run_and_pid(tmp_path: Path) -> None:
    path = lock_path(tmp_path / "runs")
    with _holder_process(path, "night-0101") as proc:
        err = _refusal(path)
        assert err.exit_code == 2
        line = err.line()
        assert "\n" not in line
        assert line.startswith(f"{path}: a sweep is already running (run night-0101, pid {proc.pid} on ")
        assert f"on {socket.gethostname()}, since " in line
        assert err.hint == f"wait for it, or stop it (kill {proc.pid})"
        # Being refused leaves the holder's record alone.
        holder = read_holder(path)
        assert holder is not None and holder.run_id == "night-0101" and holder.pid == proc.pid


def test_lock_is_free_after_the_holder_exits_normally(tmp_path: Path) -> None:
    path = lock_path(tmp_path)
    with _holder_process(path, "night-0101") as proc:
        proc.communicate("\n", timeout=30)
        assert proc.returncode == 0
    # Released and emptied, but never deleted (see the module docstring: unlink races).
    assert path.is_file() and path.read_bytes() == b""
    assert read_holder(path) is None
    with farm_lock(path, run_id="night-0102", label="nightly") as holder:
        assert read_holder(path) == holder


@pytest.mark.parametrize("death", ["sigkill", "exit_without_release"])
def test_lock_is_free_after_the_holder_dies_and_its_stale_record_is_replaced(tmp_path: Path, death: str) -> None:
    path = lock_path(tmp_path)
    with _holder_process(path, "night-dead") as proc:
        if death == "sigkill":
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            assert proc.returncode == -signal.SIGKILL
        else:
            proc.communicate("vanish\n", timeout=30)
            assert proc.returncode == 0
    stale = read_holder(path)
    assert stale is not None and stale.run_id == "night-dead"  # the dead sweep's text is still there…
    with farm_lock(path, run_id="night-next", label="nightly"):  # …and does not block
        holder = read_holder(path)
        assert holder is not None
        assert (holder.run_id, holder.pid) == ("night-next", os.getpid())


def test_holder_record_is_json_naming_the_sweep_while_held(tmp_path: Path) -> None:
    path = lock_path(tmp_path)
    command = ["farm", "sweep", "--all-phones", "--label", "nightly"]
    with farm_lock(path, run_id="night-0101", label="nightly", command=command) as holder:
        data = json.loads(path.read_text(encoding="utf-8"))
        assert set(data) == {"pid", "hostname", "user", "run_id", "label", "started_at", "command"}
        assert data["pid"] == os.getpid()
        assert data["hostname"] == socket.gethostname()
        assert data["user"]
        assert (data["run_id"], data["label"], data["command"]) == ("night-0101", "nightly", command)
        started = dt.datetime.fromisoformat(data["started_at"])
        assert started.utcoffset() == dt.timedelta(0)
        assert LockHolder.model_validate(data) == holder


def test_lock_is_released_on_an_exception_and_the_file_is_kept(tmp_path: Path) -> None:
    path = lock_path(tmp_path)
    with pytest.raises(RuntimeError, match="boom"):
        with farm_lock(path, run_id="night-0101", label=None):
            raise RuntimeError("boom")
    assert path.is_file() and read_holder(path) is None
    with farm_lock(path, run_id="night-0102", label=None):
        pass


def test_second_lock_in_the_same_process_is_refused(tmp_path: Path) -> None:
    path = lock_path(tmp_path)
    with farm_lock(path, run_id="night-0101", label=None):
        assert "(run night-0101, pid" in _refusal(path).line()
        assert read_holder(path) is not None  # the refused attempt did not wipe the record
    with farm_lock(path, run_id="night-0102", label=None):
        pass


@pytest.mark.parametrize(
    "garbage",
    [b"", b"   \n", b'{"pid": 12', b"\xff\xfe\x00not utf-8", b'{"pid": "many", "run_id": 3}', b"[]", b"x" * 100_000],
    ids=["empty", "blank", "torn", "not-utf8", "wrong-types", "not-an-object", "huge"],
)
def test_garbled_holder_record_still_yields_a_refusal_without_details(tmp_path: Path, garbage: bytes) -> None:
    path = lock_path(tmp_path)
    with farm_lock(path, run_id="night-0101", label=None):
        path.write_bytes(garbage)  # the lock is on the inode, so rewriting its text leaves it held
        err = _refusal(path)
    assert err.exit_code == 2
    assert err.line().startswith(f"{path}: a sweep is already running (its holder record is missing or unreadable)")
    assert "pid" not in err.line() and "night-0101" not in err.line()
    assert err.hint is not None and "fuser -v" in err.hint


def test_holder_on_another_host_is_named_in_the_hint(tmp_path: Path) -> None:
    path = lock_path(tmp_path)
    elsewhere = LockHolder(
        pid=4242, hostname="farm-controller-2", user="farm", run_id="night-0101", label="nightly",
        started_at="2025-01-01T02:13:05.123456Z", command=["farm", "sweep"],
    )
    with farm_lock(path, run_id="night-0101", label=None):
        path.write_text(elsewhere.model_dump_json(), encoding="utf-8")
        err = _refusal(path)
    assert err.message.endswith("(run night-0101, pid 4242 on farm-controller-2, since 2025-01-01T02:13:05Z)")
    assert err.hint == "wait for it, or stop it (kill 4242 on farm-controller-2)"


def test_lock_path_that_cannot_be_opened_is_a_farm_error(tmp_path: Path) -> None:
    path = tmp_path / ".sweep.lock"
    path.mkdir()
    with pytest.raises(FarmError, match=r"cannot open the sweep lock \(Is a directory\)"):
        with farm_lock(path, run_id="night-0101", label=None):
            pass


def test_lock_file_and_missing_directories_are_created(tmp_path: Path) -> None:
    path = lock_path(tmp_path / "runs" / "farm-a")
    with farm_lock(path, run_id="night-0101", label=None):
        assert path.is_file()
