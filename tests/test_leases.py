"""Per-phone leases: one holder per phone, the refusal names it, a dead holder's lease is taken over and said."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from farm.leases import (
    LEASES_ENV,
    Busy,
    Leases,
    LeaseSettings,
    PhoneKey,
    Taken,
    leases_dir,
    list_leases,
    read_lease,
    this_holder,
)

KEY = PhoneKey("emulator-5554", "127.0.0.1:5037")


def _leases(tmp_path: Path, run_id: str, kind: str = "sweep", **settings: float) -> Leases:
    return Leases(tmp_path, this_holder(kind, run_id, "nightly" if kind == "sweep" else None),  # type: ignore[arg-type]
                  LeaseSettings(**settings))


def test_a_phone_another_holder_has_is_busy_and_names_the_holder(tmp_path: Path) -> None:
    with _leases(tmp_path, "n1") as night, _leases(tmp_path, "dev", kind="run") as dev:
        assert isinstance(night.take(KEY), Taken)
        got = dev.take(KEY)
        assert isinstance(got, Busy)
        said = got.lease.describe()
        assert said.startswith("sweep n1 (label nightly), pid ")
        assert f"pid {os.getpid()} on " in said and "heartbeat 0 s ago" in said


def test_a_released_phone_is_free_for_the_next_holder(tmp_path: Path) -> None:
    with _leases(tmp_path, "n1") as night, _leases(tmp_path, "dev", kind="run") as dev:
        night.take(KEY)
        night.release(KEY)
        assert isinstance(dev.take(KEY), Taken)
        assert list_leases(tmp_path)[0].holder.run_id == "dev"


def test_closing_releases_every_lease(tmp_path: Path) -> None:
    other = PhoneKey("emulator-5556", "127.0.0.1:5037")
    night = _leases(tmp_path, "n1")
    night.take(KEY)
    night.take(other)
    night.close()
    assert list_leases(tmp_path) == []


def test_taking_a_phone_twice_is_one_lease(tmp_path: Path) -> None:
    with _leases(tmp_path, "n1") as night:
        assert isinstance(night.take(KEY), Taken)
        assert isinstance(night.take(KEY), Taken)
        assert len(list_leases(tmp_path)) == 1


def test_the_same_serial_on_two_adb_servers_is_two_phones(tmp_path: Path) -> None:
    with _leases(tmp_path, "n1") as night, _leases(tmp_path, "dev", kind="run") as dev:
        night.take(KEY)
        assert isinstance(dev.take(PhoneKey(KEY.serial, "127.0.0.1:5038")), Taken)


def test_a_lease_without_heartbeat_past_stale_s_is_taken_over_and_said(tmp_path: Path) -> None:
    with _leases(tmp_path, "n1") as night, _leases(tmp_path, "dev", kind="run", stale_s=0.2) as dev:
        night.take(KEY)
        assert isinstance(dev.take(KEY), Busy)
        time.sleep(0.4)
        got = dev.take(KEY)
        assert isinstance(got, Taken)
        assert got.took_over is not None
        assert got.took_over.startswith("took over the lease of sweep n1")
        assert "no heartbeat for 0 s (over 0.2 s)" in got.took_over


def test_a_lease_whose_process_is_gone_from_this_host_is_taken_over_at_once(tmp_path: Path) -> None:
    script = ("import sys; from pathlib import Path; from farm.leases import *; "
              "l = Leases(Path(sys.argv[1]), this_holder('sweep', 'gone', None)); "
              "l.take(PhoneKey('emulator-5554', '127.0.0.1:5037')); import os; os._exit(0)")
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, timeout=60)
    (left,) = list_leases(tmp_path)
    assert left.holder.run_id == "gone"
    with _leases(tmp_path, "n1") as night:
        got = night.take(KEY)
        assert isinstance(got, Taken)
        assert got.took_over is not None and f"its process {left.holder.pid} on " in got.took_over


def test_a_live_holder_is_never_taken_over(tmp_path: Path) -> None:
    with _leases(tmp_path, "n1", heartbeat_s=0.05) as night, _leases(tmp_path, "dev", kind="run", stale_s=0.5) as dev:
        night.take(KEY)
        end = time.monotonic() + 1.5
        while time.monotonic() < end:  # three stale windows: the heartbeat keeps it alive
            assert isinstance(dev.take(KEY), Busy)
            time.sleep(0.1)


def test_a_holder_taken_over_lets_the_phone_go_at_its_next_heartbeat(tmp_path: Path) -> None:
    night = _leases(tmp_path, "n1")
    night.take(KEY)
    with _leases(tmp_path, "dev", kind="run", stale_s=0.1) as dev:
        time.sleep(0.3)
        assert isinstance(dev.take(KEY), Taken)
        night.beat()
        assert not night.holds(KEY)
        night.close()  # must not remove the new holder's lease
        (lease,) = list_leases(tmp_path)
        assert lease.holder.run_id == "dev"


def test_of_many_holders_asking_at_once_exactly_one_gets_the_phone(tmp_path: Path) -> None:
    holders = [_leases(tmp_path, f"r{n}", kind="run") for n in range(8)]
    got: list[Taken | Busy] = []
    start = threading.Barrier(len(holders))

    def ask(leases: Leases) -> None:
        start.wait()
        got.append(leases.take(KEY))

    threads = [threading.Thread(target=ask, args=(h,)) for h in holders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(isinstance(g, Taken) for g in got) == 1
    for h in holders:
        h.close()


def test_a_garbled_or_oversized_lease_file_is_no_lease(tmp_path: Path) -> None:
    path = tmp_path / KEY.file_name()
    path.write_bytes(b"{not json")
    assert read_lease(path) is None
    path.write_bytes(b" " * (64 * 1024 + 1))
    assert read_lease(path) is None
    with _leases(tmp_path, "n1") as night:
        assert isinstance(night.take(KEY), Taken)


def test_lease_file_names_keep_similar_phones_apart(tmp_path: Path) -> None:
    names = {PhoneKey(s, srv).file_name() for s in ("a:b", "a_b", "../x") for srv in ("h:1", "h_1")}
    assert len(names) == 6
    assert all("/" not in n and not n.startswith(".") for n in names)


def test_the_lease_directory_is_farm_yamls_then_the_environments_then_the_users_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert leases_dir(LeaseSettings(dir=str(tmp_path / "y"))) == tmp_path / "y"
    monkeypatch.setenv(LEASES_ENV, str(tmp_path / "env"))
    assert leases_dir(LeaseSettings()) == tmp_path / "env"
    monkeypatch.delenv(LEASES_ENV)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert leases_dir(LeaseSettings()) == tmp_path / "state" / "agent-farm" / "leases"


def test_a_lease_directory_that_cannot_be_made_is_one_clear_error(tmp_path: Path) -> None:
    from farm.errors import FarmError

    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(FarmError, match="cannot use the phone lease directory") as err:
        Leases(blocker / "leases", this_holder("run", "dev", None)).take(KEY)
    assert "leases.dir" in (err.value.hint or "")
