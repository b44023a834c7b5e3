"""sync: through the real adb server — adb pull/push and adbutils sync."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import adbutils
import pytest

from farm.sim.launcher import SimPhone, adb_binary


def adb(phone: SimPhone, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [adb_binary(), "-P", str(phone.adb_port), "-s", phone.serial, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def device(phone: SimPhone) -> adbutils.AdbDevice:
    return adbutils.AdbClient(port=phone.adb_port).device(phone.serial)


def make_tree(root: Path) -> dict[str, bytes]:
    files = {
        "a.txt": b"alpha\n",
        "empty.bin": b"",
        "sub/b.bin": os.urandom(200_000),
        "sub/deeper/c.bin": os.urandom(65536 * 3 + 17),
        "sub/deeper/名字 with space.txt": "unicode ✓".encode(),
    }
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return files


def digest_tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


def test_adb_pull_directory_tree_is_byte_exact(virtual_phone: SimPhone, tmp_path: Path) -> None:
    make_tree(virtual_phone.root / "sdcard" / "Documents" / "tree")
    done = adb(virtual_phone, "pull", "/sdcard/Documents/tree", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert digest_tree(tmp_path / "tree") == digest_tree(virtual_phone.root / "sdcard" / "Documents" / "tree")


def test_adb_push_round_trips(virtual_phone: SimPhone, tmp_path: Path) -> None:
    src = tmp_path / "up"
    files = make_tree(src)
    done = adb(virtual_phone, "push", str(src), "/sdcard/Download/")
    assert done.returncode == 0, done.stderr
    on_phone = virtual_phone.root / "sdcard" / "Download" / "up"
    assert {k: v for k, v in ((str(p.relative_to(on_phone)), p.read_bytes()) for p in on_phone.rglob("*")
            if p.is_file())} == files
    back = tmp_path / "back"
    back.mkdir()
    assert adb(virtual_phone, "pull", "/storage/emulated/0/Download/up", str(back)).returncode == 0
    assert digest_tree(back / "up") == digest_tree(src)


def test_adbutils_sync_push_and_pull(virtual_phone: SimPhone, tmp_path: Path) -> None:
    data = os.urandom(1_000_003)
    local = tmp_path / "blob.bin"
    local.write_bytes(data)
    d = device(virtual_phone)
    d.sync.push(str(local), "/data/local/tmp/blob.bin", mode=0o644, check=True)
    assert (virtual_phone.root / "data/local/tmp/blob.bin").read_bytes() == data
    out = tmp_path / "copy.bin"
    d.sync.pull("/data/local/tmp/blob.bin", str(out))
    assert out.read_bytes() == data
    assert d.sync.read_bytes("/data/local/tmp/blob.bin") == data


def test_adbutils_sync_stat_and_list(virtual_phone: SimPhone) -> None:
    (virtual_phone.root / "sdcard/DCIM/x.jpg").write_bytes(b"12345")
    d = device(virtual_phone)
    st = d.sync.stat("/sdcard/DCIM/x.jpg")
    assert st.size == 5 and st.mode & 0o170000 == 0o100000
    assert d.sync.stat("/sdcard/none").mode == 0
    names = {e.path for e in d.sync.list("/sdcard/DCIM")}
    assert "x.jpg" in names
    assert {"DCIM", "Download", "Pictures", "Music", "Documents"} <= {e.path for e in d.sync.list("/sdcard")}


def test_pull_of_missing_file_fails_with_message(virtual_phone: SimPhone, tmp_path: Path) -> None:
    done = adb(virtual_phone, "pull", "/sdcard/nope.txt", str(tmp_path))
    assert done.returncode != 0
    assert "No such file or directory" in done.stdout + done.stderr  # STA2 carries the errno
    with pytest.raises(adbutils.AdbError, match="No such file or directory"):
        device(virtual_phone).sync.read_bytes("/sdcard/nope.txt")


def test_sync_refuses_paths_outside_the_phone(virtual_phone: SimPhone, tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("host file")
    d = device(virtual_phone)
    assert d.sync.stat("/../../../../../../.." + str(outside)).mode == 0
    # Symlinks planted in the phone must not lead out of it either.
    (virtual_phone.root / "sdcard" / "link").symlink_to(tmp_path)
    assert d.sync.stat("/sdcard/link/secret.txt").mode == 0
    with pytest.raises(adbutils.AdbError):
        d.sync.read_bytes("/sdcard/link/secret.txt")


def test_push_into_missing_dirs_creates_them(virtual_phone: SimPhone, tmp_path: Path) -> None:
    local = tmp_path / "n.txt"
    local.write_text("note")
    device(virtual_phone).sync.push(str(local), "/sdcard/Android/data/dev.agentfarm.notes/files/a/b/n.txt")
    assert (virtual_phone.root / "sdcard/Android/data/dev.agentfarm.notes/files/a/b/n.txt").read_text() == "note"
