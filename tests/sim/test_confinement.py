"""The virtual phone's file operations stay inside its root: links and `..` never reach the host, copies
and pushes have caps, a loop or a FIFO cannot hang a command. Everything goes through the real adb server
(shell, adbutils sync, the `adb` binary's push and pull) against a phone with planted symlinks."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

import adbutils
import pytest

from farm.sim.launcher import SimPhone, adb_binary
from farm.sim.profile import default_profile
from tests.helpers.phones import FarmFactory

CANARY = b"CANARY-host-secret\n"
Snapshot = dict[str, tuple[int, int, int, str]]


def device(phone: SimPhone) -> adbutils.AdbDevice:
    return adbutils.AdbClient(port=phone.adb_port).device(phone.serial)


def sh(phone: SimPhone, command: str) -> tuple[int, str]:
    result = device(phone).shell2(command, timeout=30)
    return result.returncode, result.output


def adb(phone: SimPhone, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([adb_binary(), "-P", str(phone.adb_port), "-s", phone.serial, *args],
                          capture_output=True, text=True, timeout=60, check=False)


def snapshot(directory: Path) -> Snapshot:
    """Every entry under `directory` (itself included): mode, size, mtime in ns and a content digest."""
    seen: Snapshot = {}
    for path in [directory, *sorted(directory.rglob("*"))]:
        st = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else ""
        seen[str(path.relative_to(directory))] = (st.st_mode, st.st_size, st.st_mtime_ns, digest)
    return seen


def phone_files_holding_canary(phone: SimPhone) -> list[Path]:
    """Regular files inside the phone's root whose content is the canary (links are not followed)."""
    found = []
    for dirpath, _dirs, files in os.walk(phone.root):
        for name in files:
            path = Path(dirpath) / name
            if path.is_file() and not path.is_symlink() and CANARY in path.read_bytes():
                found.append(path)
    return found


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A host directory outside every phone, holding the canary."""
    canary_dir = tmp_path / "outside"
    (canary_dir / "sub").mkdir(parents=True)
    (canary_dir / "canary.txt").write_bytes(CANARY)
    (canary_dir / "sub" / "deep.txt").write_bytes(CANARY)
    past = time.time() - 3600  # mtimes an hour old: any touch through the phone would show
    for path in (canary_dir / "sub" / "deep.txt", canary_dir / "canary.txt", canary_dir / "sub", canary_dir):
        os.utime(path, (past, past))
    return canary_dir


@pytest.fixture
def linked(virtual_phone: SimPhone, outside: Path) -> SimPhone:
    """The phone with `/sdcard/out` → the host directory (absolute) and `/sdcard/up` → it by `../../..`."""
    sdcard = virtual_phone.root / "sdcard"
    (sdcard / "out").symlink_to(outside)
    (sdcard / "up").symlink_to(os.path.relpath(outside, sdcard))
    (sdcard / "Download" / "note.txt").write_text("from the phone\n")
    return virtual_phone


def test_cat_through_a_link_out_of_the_phone_reads_nothing(linked: SimPhone, outside: Path) -> None:
    before = snapshot(outside)
    for path in ("/sdcard/out/canary.txt", "/sdcard/up/canary.txt", "/sdcard/up/sub/deep.txt"):
        status, output = sh(linked, f"cat {path}")
        assert status == 1 and "CANARY" not in output
    assert "Permission denied" in sh(linked, "cat /sdcard/up/canary.txt")[1]
    assert "No such file or directory" in sh(linked, "cat /sdcard/out/canary.txt")[1]
    assert snapshot(outside) == before


def test_ls_through_a_link_out_of_the_phone_lists_nothing(linked: SimPhone, outside: Path) -> None:
    before = snapshot(outside)
    for command in ("ls /sdcard/up", "ls -l /sdcard/up/", "ls -la /sdcard/up/sub", "ls /sdcard/out/",
                    "ls -l /sdcard/out/sub"):
        status, output = sh(linked, command)
        assert status == 1, command
        assert "canary" not in output and "deep.txt" not in output, command
    assert snapshot(outside) == before


def test_writes_through_a_link_out_of_the_phone_are_refused(linked: SimPhone, outside: Path) -> None:
    before = snapshot(outside)
    for command in ("echo hi > /sdcard/up/new.txt", "echo hi >> /sdcard/up/canary.txt", "touch /sdcard/up/canary.txt",
                    "touch /sdcard/up/t.txt", "mkdir /sdcard/up/d", "mkdir -p /sdcard/up/sub/d",
                    "cp /sdcard/Download/note.txt /sdcard/up/", "cp /sdcard/Download/note.txt /sdcard/up/canary.txt",
                    "mv /sdcard/Download/note.txt /sdcard/up/sub/"):
        status, _ = sh(linked, command)
        assert status != 0, command
    assert snapshot(outside) == before
    assert (linked.root / "sdcard" / "Download" / "note.txt").is_file()


def test_an_absolute_link_target_is_a_path_of_the_phone(linked: SimPhone, outside: Path) -> None:
    before = snapshot(outside)
    status, _ = sh(linked, "mkdir -p /sdcard/out/made && echo x > /sdcard/out/made/f.txt")
    assert status == 0
    # `/sdcard/out` → `<outside>` is read as the phone's own `<outside>`: what was made is in the phone.
    assert (linked.root / outside.relative_to("/") / "made" / "f.txt").read_text() == "x\n"
    assert snapshot(outside) == before


def test_deletes_through_a_link_out_of_the_phone_are_refused(linked: SimPhone, outside: Path) -> None:
    before = snapshot(outside)
    for command in ("rm /sdcard/up/canary.txt", "rm -rf /sdcard/up/sub", "rm -r /sdcard/up/", "rmdir /sdcard/up/sub",
                    "mv /sdcard/up/canary.txt /sdcard/Download/", "rm -f /sdcard/out/canary.txt"):
        sh(linked, command)
        assert snapshot(outside) == before, command


def test_rm_of_a_link_removes_the_link_not_its_target(linked: SimPhone, outside: Path) -> None:
    before = snapshot(outside)
    assert sh(linked, "rm -r /sdcard/up")[0] == 0
    assert not os.path.lexists(linked.root / "sdcard" / "up")
    assert snapshot(outside) == before


def test_dotdot_paths_stay_inside_the_phone(linked: SimPhone, outside: Path) -> None:
    before = snapshot(outside)
    climb = "/.." * 12 + str(outside)
    assert sh(linked, f"cat {climb}/canary.txt")[0] == 1
    assert sh(linked, f"cd /sdcard && cat ../../../../../..{outside}/canary.txt")[0] == 1
    assert sh(linked, f"echo hi > {climb}/new.txt")[0] == 1
    assert sh(linked, f"rm -rf {climb}")[0] == 0  # the phone's own (missing) path: nothing to remove
    status, output = sh(linked, "ls /../../../..")
    assert status == 0 and "sdcard" in output.split()
    assert snapshot(outside) == before


@pytest.mark.parametrize("relative", [False, True])
def test_a_link_standing_in_for_sdcard_leads_nowhere_outside(virtual_phone: SimPhone, outside: Path,
                                                             relative: bool) -> None:
    sdcard = virtual_phone.root / "sdcard"
    os.rename(sdcard, virtual_phone.root / "data" / "old-sdcard")
    sdcard.symlink_to(os.path.relpath(outside, virtual_phone.root) if relative else outside)
    before = snapshot(outside)
    for command in ("cat /sdcard/canary.txt", "cat /storage/emulated/0/canary.txt", "ls /mnt/sdcard/",
                    "echo x > /storage/self/primary/new.txt", "rm -rf /sdcard/sub"):
        status, output = sh(virtual_phone, command)
        assert "CANARY" not in output and "deep.txt" not in output, command
        assert status != 0 or command.startswith("rm -rf"), command
    assert device(virtual_phone).sync.stat("/storage/emulated/0/canary.txt").mode == 0
    assert snapshot(outside) == before


def test_cp_r_copies_links_as_links_and_reads_nothing_outside(linked: SimPhone, outside: Path) -> None:
    tree = linked.root / "sdcard" / "Documents" / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("inside\n")
    (tree / "out-link").symlink_to(outside)
    (tree / "up-link").symlink_to("../../../../../../../../../..")
    (tree / "canary-link").symlink_to(outside / "canary.txt")
    before = snapshot(outside)
    status, output = sh(linked, "cp -r /sdcard/Documents/tree /sdcard/Download/copy")
    assert status == 0, output
    copy = linked.root / "sdcard" / "Download" / "copy"
    assert (copy / "a.txt").read_text() == "inside\n"
    assert os.readlink(copy / "out-link") == str(outside) and os.readlink(copy / "canary-link")
    assert phone_files_holding_canary(linked) == []
    assert sh(linked, "cat /sdcard/Download/copy/up-link/etc/passwd")[0] == 1
    assert snapshot(outside) == before


def test_cp_of_a_link_out_of_the_phone_copies_no_content(linked: SimPhone, outside: Path) -> None:
    sdcard = linked.root / "sdcard"
    (sdcard / "file-link").symlink_to(os.path.relpath(outside / "canary.txt", sdcard))
    before = snapshot(outside)
    status, output = sh(linked, "cp /sdcard/file-link /sdcard/Download/got.txt")
    assert status == 1 and "Permission denied" in output
    assert not (sdcard / "Download" / "got.txt").exists()
    assert phone_files_holding_canary(linked) == []
    assert snapshot(outside) == before


def test_mv_of_a_link_moves_the_link_itself(linked: SimPhone, outside: Path) -> None:
    before = snapshot(outside)
    assert sh(linked, "mv /sdcard/up /sdcard/Download/moved")[0] == 0
    moved = linked.root / "sdcard" / "Download" / "moved"
    assert moved.is_symlink()
    assert sh(linked, "cat /sdcard/Download/moved/canary.txt")[0] == 1
    assert snapshot(outside) == before


def test_symlink_loops_fail_fast_instead_of_hanging(virtual_phone: SimPhone) -> None:
    sdcard = virtual_phone.root / "sdcard"
    (sdcard / "loop-a").symlink_to("loop-b")
    (sdcard / "loop-b").symlink_to("loop-a")
    (sdcard / "self").symlink_to("self/x")
    (sdcard / "Documents" / "parent").symlink_to("..")
    started = time.monotonic()
    for command in ("cat /sdcard/loop-a", "ls /sdcard/loop-a/", "echo x > /sdcard/self", "cd /sdcard/loop-b"):
        status, output = sh(virtual_phone, command)
        assert status != 0 and "Too many levels of symbolic links" in output, command
    # A link to an ancestor is copied as a link: `cp -r` does not descend into it again and again.
    status, output = sh(virtual_phone, "cp -r /sdcard/Documents /sdcard/Download/docs")
    assert status == 0, output
    assert (sdcard / "Download" / "docs" / "parent").is_symlink()
    assert device(virtual_phone).sync.stat("/sdcard/loop-a/x").mode == 0
    assert time.monotonic() - started < 20


def test_a_fifo_in_the_phone_blocks_nothing(virtual_phone: SimPhone, tmp_path: Path) -> None:
    os.mkfifo(virtual_phone.root / "sdcard" / "pipe")
    started = time.monotonic()
    assert sh(virtual_phone, "cat /sdcard/pipe")[0] == 1
    assert sh(virtual_phone, "echo x > /sdcard/pipe")[0] == 1
    assert sh(virtual_phone, "cp /sdcard/pipe /sdcard/Download/p")[0] == 1
    with pytest.raises(adbutils.AdbError):
        device(virtual_phone).sync.read_bytes("/sdcard/pipe")
    assert time.monotonic() - started < 20


def test_cp_r_into_itself_is_refused(virtual_phone: SimPhone) -> None:
    assert sh(virtual_phone, "mkdir -p /sdcard/a/b && echo x > /sdcard/a/f.txt")[0] == 0
    status, output = sh(virtual_phone, "cp -r /sdcard/a /sdcard/a/b")
    assert status == 1 and "into itself" in output
    assert sorted(os.listdir(virtual_phone.root / "sdcard" / "a" / "b")) == []
    status, _ = sh(virtual_phone, "cp -r /sdcard/a /sdcard/a")
    assert status == 1


def test_cp_of_a_file_over_the_byte_cap_fails_before_writing(virtual_phone: SimPhone) -> None:
    big = virtual_phone.root / "sdcard" / "Download" / "huge.bin"
    with big.open("wb") as handle:
        handle.truncate(5 * 1024**3)  # sparse: 5 GB that cost no disk, over the 512 MiB default cap
    started = time.monotonic()
    status, output = sh(virtual_phone, "cp /sdcard/Download/huge.bin /sdcard/Download/copy.bin")
    assert status == 1 and "limits.copy_max_bytes" in output
    assert not (virtual_phone.root / "sdcard" / "Download" / "copy.bin").exists()
    assert time.monotonic() - started < 10


def _capped_phone(virtual_farm: FarmFactory, **limits: float) -> SimPhone:
    profile = default_profile()
    profile.limits = profile.limits.model_copy(update=limits)
    return virtual_farm(1, profile=profile)[0]


def _tree(root: Path, files: int, size: int) -> Path:
    tree = root / "sdcard" / "Documents" / "big"
    for index in range(files):
        (tree / f"d{index % 3}").mkdir(parents=True, exist_ok=True)
        (tree / f"d{index % 3}" / f"f{index}.bin").write_bytes(os.urandom(size))
    return tree


def test_cp_r_over_the_byte_cap_fails_and_leaves_nothing(virtual_farm: FarmFactory) -> None:
    phone = _capped_phone(virtual_farm, copy_max_bytes=1_000_000)
    _tree(phone.root, files=6, size=300_000)
    status, output = sh(phone, "cp -r /sdcard/Documents/big /sdcard/Download/big")
    assert status == 1 and "1000000-byte limit" in output
    assert not (phone.root / "sdcard" / "Download" / "big").exists()


def test_cp_r_into_an_existing_dir_over_the_cap_removes_only_what_it_made(virtual_farm: FarmFactory) -> None:
    phone = _capped_phone(virtual_farm, copy_max_bytes=1_000_000)
    _tree(phone.root, files=6, size=300_000)
    keep = phone.root / "sdcard" / "Download" / "big" / "d0" / "mine.txt"
    keep.parent.mkdir(parents=True)
    keep.write_text("already there\n")
    assert sh(phone, "cp -r /sdcard/Documents/big /sdcard/Download")[0] == 1
    left = sorted(str(p.relative_to(phone.root)) for p in (phone.root / "sdcard" / "Download" / "big").rglob("*"))
    assert left == ["sdcard/Download/big/d0", "sdcard/Download/big/d0/mine.txt"]


def test_cp_r_over_the_time_cap_fails_and_leaves_nothing(virtual_farm: FarmFactory) -> None:
    phone = _capped_phone(virtual_farm, copy_max_seconds=1e-6)
    _tree(phone.root, files=30, size=1000)
    status, output = sh(phone, "cp -r /sdcard/Documents/big /sdcard/Download/big")
    assert status == 1 and "limits.copy_max_seconds" in output
    assert not (phone.root / "sdcard" / "Download" / "big").exists()


def test_cp_r_within_the_caps_copies_the_tree_exactly(virtual_farm: FarmFactory) -> None:
    phone = _capped_phone(virtual_farm, copy_max_bytes=1_000_000)
    tree = _tree(phone.root, files=3, size=300_000)
    status, output = sh(phone, "cp -r /sdcard/Documents/big /sdcard/Download/big")
    assert status == 0, output
    copy = phone.root / "sdcard" / "Download" / "big"
    assert {str(p.relative_to(copy)): p.read_bytes() for p in copy.rglob("*.bin")} == \
        {str(p.relative_to(tree)): p.read_bytes() for p in tree.rglob("*.bin")}


def test_cat_into_a_redirect_over_the_cap_fails_but_cat_to_the_host_streams(virtual_farm: FarmFactory) -> None:
    phone = _capped_phone(virtual_farm, copy_max_bytes=100_000)
    data = os.urandom(300_000)
    (phone.root / "sdcard" / "Download" / "big.bin").write_bytes(data)
    status, output = sh(phone, "cat /sdcard/Download/big.bin > /sdcard/Download/copy.bin")
    assert status == 1 and "limits.copy_max_bytes" in output
    assert (phone.root / "sdcard" / "Download" / "copy.bin").stat().st_size <= 100_000
    # Straight to the host nothing is held on the phone's side: no cap applies.
    streamed = device(phone).shell("cat /sdcard/Download/big.bin", encoding=None)
    assert streamed == data


def test_sync_stat_and_list_never_reach_outside(linked: SimPhone, outside: Path) -> None:
    d = device(linked)
    before = snapshot(outside)
    for path in ("/sdcard/up/canary.txt", "/sdcard/out/canary.txt", "/sdcard/up/sub", "/../../.." + str(outside)):
        assert d.sync.stat(path).mode == 0, path
    for path in ("/sdcard/up", "/sdcard/up/sub", "/sdcard/out", "/../../.." + str(outside)):
        assert not {"canary.txt", "sub", "deep.txt"} & set(d.sync.list(path)), path
    assert snapshot(outside) == before


def test_sync_stat_reports_a_link_as_a_link(linked: SimPhone) -> None:
    # STAT (v1) is lstat, as on adbd: the link itself, never what it points to.
    assert device(linked).sync.stat("/sdcard/up").mode & 0o170000 == 0o120000


def test_sync_recv_through_a_link_out_of_the_phone_fails(linked: SimPhone, outside: Path, tmp_path: Path) -> None:
    d = device(linked)
    before = snapshot(outside)
    for path in ("/sdcard/up/canary.txt", "/sdcard/out/canary.txt"):
        with pytest.raises(adbutils.AdbError):
            d.sync.read_bytes(path)
    local = tmp_path / "pulled"
    local.mkdir()
    done = adb(linked, "pull", "/sdcard/up/canary.txt", str(local))
    assert done.returncode != 0
    assert list(local.iterdir()) == []
    assert snapshot(outside) == before


def test_adb_pull_of_a_tree_holding_links_brings_nothing_from_outside(linked: SimPhone, outside: Path,
                                                                      tmp_path: Path) -> None:
    tree = linked.root / "sdcard" / "Documents" / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("inside\n")
    (tree / "up-link").symlink_to(os.path.relpath(outside, tree))
    (tree / "canary-link").symlink_to(os.path.relpath(outside / "canary.txt", tree))
    local = tmp_path / "pulled"
    local.mkdir()
    adb(linked, "pull", "/sdcard/Documents/tree", str(local))
    assert (local / "tree" / "a.txt").read_text() == "inside\n"
    assert not [p for p in local.rglob("*") if p.is_file() and CANARY in p.read_bytes()]


def test_adb_push_through_a_link_out_of_the_phone_is_refused(linked: SimPhone, outside: Path, tmp_path: Path) -> None:
    local = tmp_path / "payload.txt"
    local.write_text("pushed\n")
    before = snapshot(outside)
    for remote in ("/sdcard/up/new.txt", "/sdcard/up/canary.txt", "/sdcard/up/sub/"):
        done = adb(linked, "push", str(local), remote)
        assert done.returncode != 0, remote
    with pytest.raises(adbutils.AdbError):
        device(linked).sync.push(local, "/sdcard/up/canary.txt", check=True)
    assert snapshot(outside) == before


def test_a_push_onto_a_link_replaces_the_link_and_never_writes_through_it(linked: SimPhone, outside: Path,
                                                                         tmp_path: Path) -> None:
    sdcard = linked.root / "sdcard"
    (sdcard / "file-link").symlink_to(outside / "canary.txt")
    local = tmp_path / "payload.txt"
    local.write_text("pushed\n")
    before = snapshot(outside)
    device(linked).sync.push(local, "/sdcard/file-link", check=True)
    assert not (sdcard / "file-link").is_symlink() and (sdcard / "file-link").read_text() == "pushed\n"
    assert snapshot(outside) == before


def test_a_push_over_the_cap_fails_and_keeps_nothing(virtual_farm: FarmFactory, tmp_path: Path) -> None:
    phone = _capped_phone(virtual_farm, push_max_bytes=200_000)
    local = tmp_path / "big.bin"
    local.write_bytes(os.urandom(500_000))
    with pytest.raises(adbutils.AdbError):
        device(phone).sync.push(local, "/sdcard/Download/big.bin", check=True)
    done = adb(phone, "push", str(local), "/sdcard/Download/big.bin")
    assert done.returncode != 0 and "limits.push_max_bytes" in done.stdout + done.stderr
    assert os.listdir(phone.root / "sdcard" / "Download") == []
    small = tmp_path / "small.bin"
    small.write_bytes(os.urandom(150_000))
    done = adb(phone, "push", str(small), "/sdcard/Download/small.bin")
    assert done.returncode == 0, done.stderr
    assert (phone.root / "sdcard" / "Download" / "small.bin").read_bytes() == small.read_bytes()
