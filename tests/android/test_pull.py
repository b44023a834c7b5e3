"""`pull_tree` against a virtual phone through the real adb server: exact bytes, refusals, broken links."""

from __future__ import annotations

import os
import random
from pathlib import Path

import adbutils

import farm.android.pull as pull
from farm.android.pull import PullResult, pull_tree, pull_tree_retrying
from farm.config import PullLimits
from farm.sim.launcher import SimPhone
from farm.sim.profile import FaultSpec
from tests.helpers.phones import FarmFactory

REMOTE = "/sdcard/eval/r1"


def _tree(phone: SimPhone) -> Path:
    tree = phone.root / "sdcard" / "eval" / "r1"
    tree.mkdir(parents=True)
    return tree


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _pull(phone: SimPhone, dest: Path, limits: PullLimits | None = None) -> PullResult:
    device = adbutils.AdbClient(port=phone.adb_port).device(phone.serial)
    return pull_tree(device, REMOTE, dest, limits or PullLimits())


def _no_temp_files(root: Path) -> bool:
    return not [p for p in root.rglob("*") if p.name.startswith(".pull.")]


def test_many_small_files_and_large_ones_arrive_byte_exact(virtual_phone: SimPhone, tmp_path: Path) -> None:
    tree = _tree(virtual_phone)
    rnd = random.Random(7)
    sizes = [0, 1, 65535, 65536, 65537] + [rnd.randrange(1, 9000) for _ in range(150)]
    for n, size in enumerate(sizes):
        sub = tree / f"t{n % 7}" / ("run" if n % 3 else "")
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{n:03d}.bin").write_bytes(rnd.randbytes(size))
    (tree / "big-a.bin").write_bytes(os.urandom(3 * 1024 * 1024 + 11))
    (tree / "t2" / "big-b.bin").write_bytes(os.urandom(5 * 1024 * 1024 - 3))
    (tree / "报告.md").write_text("中文\n", encoding="utf-8")
    (tree / "empty-dir").mkdir()
    dest = tmp_path / "raw"
    result = _pull(virtual_phone, dest)
    expected = _files(tree)
    assert result.refused == [] and result.found
    assert _files(dest) == expected
    assert result.files == len(expected) and result.bytes == sum(len(b) for b in expected.values())
    assert (dest / "empty-dir").is_dir()
    assert _no_temp_files(dest)


def test_hostile_entries_are_refused_and_listed_while_good_ones_land(
    virtual_phone: SimPhone, tmp_path: Path
) -> None:
    tree = _tree(virtual_phone)
    (tree / "scores.jsonl").write_text('{"id": "t1"}\n')
    (tree / "t1").mkdir()
    (tree / "t1" / "final.json").write_text("{}")
    secret = virtual_phone.root / "sdcard" / "secret.txt"
    secret.write_text("not part of the run")
    os.symlink("/etc", tree / "etc-link")
    os.symlink("../secret.txt", tree / "secret-link")
    os.symlink("..", tree / "t1" / "dotdot-dir")
    (tree / "..\\..\\outside.txt").write_text("backslash")
    (tree / "bad\nname.txt").write_text("newline")
    (tree / "bell\x07.txt").write_text("control")
    os.mkfifo(tree / "a-fifo")
    (tree / "huge.bin").write_bytes(b"x" * (2 * 1024 * 1024))
    dest = tmp_path / "runs" / "raw"
    result = _pull(virtual_phone, dest, PullLimits(max_file_mb=1))
    refused = "\n".join(result.refused)
    for name, why in [
        ("etc-link", "symlink"), ("secret-link", "symlink"), ("dotdot-dir", "symlink"),
        ("outside.txt", "path separator"), ("bad\\nname.txt", "control character"),
        ("bell\\x07.txt", "control character"), ("a-fifo", "not a regular file"), ("huge.bin", "larger than 1 MB"),
    ]:
        assert any(name in line and why in line for line in result.refused), (name, refused)
    assert len(result.refused) == 8
    assert _files(dest) == {"scores.jsonl": b'{"id": "t1"}\n', "t1/final.json": b"{}"}
    assert {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")} == {
        "runs", "runs/raw", "runs/raw/t1", "runs/raw/scores.jsonl", "runs/raw/t1/final.json",
    }
    assert not any(p.is_symlink() for p in dest.rglob("*"))


def test_files_past_the_total_cap_are_refused_one_by_one(virtual_phone: SimPhone, tmp_path: Path) -> None:
    tree = _tree(virtual_phone)
    for n in range(10):
        (tree / f"part{n}.bin").write_bytes(os.urandom(300 * 1024))
    result = _pull(virtual_phone, tmp_path / "raw", PullLimits(max_total_mb=1))
    assert result.files == 3 and result.bytes == 3 * 300 * 1024
    assert len(result.refused) == 7 and all("tree larger than 1 MB" in line for line in result.refused)
    assert len(_files(tmp_path / "raw")) == 3


def test_existing_files_are_never_overwritten(virtual_phone: SimPhone, tmp_path: Path) -> None:
    tree = _tree(virtual_phone)
    (tree / "scores.jsonl").write_text("from the phone\n")
    (tree / "other.txt").write_text("new\n")
    dest = tmp_path / "raw"
    dest.mkdir()
    (dest / "scores.jsonl").write_text("already here\n")
    result = _pull(virtual_phone, dest)
    assert result.refused == [f"'{REMOTE}/scores.jsonl': already pulled (never overwritten)"]
    assert (dest / "scores.jsonl").read_text() == "already here\n"
    assert (dest / "other.txt").read_text() == "new\n"
    assert _no_temp_files(dest)


def test_a_file_gone_before_its_turn_is_listed_and_the_rest_still_arrive(
    virtual_phone: SimPhone, tmp_path: Path, monkeypatch
) -> None:
    tree = _tree(virtual_phone)
    for n in range(60):
        (tree / f"f{n:02d}.txt").write_text(f"file {n}\n" * 100)
    real_plan = pull._plan

    def plan_then_delete(*args: object, **kw: bool) -> list[pull._Job]:
        jobs = real_plan(*args, **kw)  # type: ignore[arg-type]
        (tree / "f05.txt").unlink()  # vanishes between the listing and its RECV: the phone answers FAIL
        return jobs

    monkeypatch.setattr(pull, "_plan", plan_then_delete)
    dest = tmp_path / "raw"
    result = _pull(virtual_phone, dest)
    assert len(result.refused) == 1 and "f05.txt" in result.refused[0]
    assert _files(dest) == _files(tree) and result.files == 59
    assert _no_temp_files(dest)


def test_missing_remote_directory_is_reported_not_found(virtual_phone: SimPhone, tmp_path: Path) -> None:
    result = _pull(virtual_phone, tmp_path / "raw")
    assert not result.found and result.files == 0


def test_phone_gone_mid_pull_stops_with_the_error_and_leaves_no_partial_file(
    virtual_farm: FarmFactory, tmp_path: Path
) -> None:
    phone = virtual_farm(1, faults=FaultSpec(disconnect_after_bytes=6 * 1024 * 1024))[0]
    tree = _tree(phone)
    for n in range(8):
        (tree / f"chunk{n}.bin").write_bytes(os.urandom(1024 * 1024 + 500))
    dest = tmp_path / "raw"
    result = _pull(phone, dest)
    assert phone.state.link_drops == 1
    assert any(line.startswith(f"{REMOTE}: pull stopped (") for line in result.refused), result.refused
    got = _files(dest)
    assert 0 < len(got) < 8 and result.files == len(got)
    for name, data in got.items():
        assert data == (tree / name).read_bytes()  # whatever has a final name is complete
    assert _no_temp_files(dest)


def test_a_pull_cut_short_mid_tree_is_pulled_again_and_completes(virtual_farm: FarmFactory, tmp_path: Path) -> None:
    phone = virtual_farm(1, faults=FaultSpec(disconnect_after_bytes=6 * 1024 * 1024))[0]
    tree = _tree(phone)
    for n in range(8):
        (tree / f"chunk{n}.bin").write_bytes(os.urandom(1024 * 1024 + 500))
    dest = tmp_path / "raw"
    device = adbutils.AdbClient(port=phone.adb_port).device(phone.serial)
    result = pull_tree_retrying(device, REMOTE, dest, PullLimits(), waits=(1.0, 2.0, 4.0, 8.0))
    # The link dropped once; the adb server reconnected the phone and the second pull fetched the rest.
    assert phone.state.link_drops == 1
    assert result.refused == [] and _files(dest) == _files(tree)
    assert result.files == 8 and _no_temp_files(dest)


def test_a_pull_again_skips_what_arrived_and_refuses_only_a_changed_file(
    virtual_phone: SimPhone, tmp_path: Path
) -> None:
    tree = _tree(virtual_phone)
    (tree / "a.txt").write_text("aaa\n")
    (tree / "b.txt").write_text("bbb\n")
    dest = tmp_path / "raw"
    device = adbutils.AdbClient(port=virtual_phone.adb_port).device(virtual_phone.serial)
    first = pull_tree(device, REMOTE, dest, PullLimits())
    (tree / "b.txt").write_text("bbb, longer now\n")
    (tree / "c.txt").write_text("new\n")
    again = pull_tree(device, REMOTE, dest, PullLimits(), again=True)
    assert first.files == 2 and again.files == 1 and (dest / "c.txt").read_text() == "new\n"
    assert again.refused == [f"'{REMOTE}/b.txt': already pulled (never overwritten)"]
    assert (dest / "b.txt").read_text() == "bbb\n"


def test_a_phone_that_does_not_come_back_ends_the_retries_with_the_link_error(
    virtual_phone: SimPhone, tmp_path: Path
) -> None:
    import time

    tree = _tree(virtual_phone)
    (tree / "a.txt").write_text("aaa\n")
    client = adbutils.AdbClient(port=virtual_phone.adb_port)
    client.disconnect(virtual_phone.serial)
    started = time.monotonic()
    result = pull_tree_retrying(client.device(virtual_phone.serial), REMOTE, tmp_path / "raw", PullLimits(),
                                waits=(0.2, 0.2))
    assert time.monotonic() - started < 10
    assert result.files == 0 and len(result.refused) == 1 and "cannot open a sync stream" in result.refused[0]
